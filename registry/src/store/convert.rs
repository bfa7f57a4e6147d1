//! Stores whose objects a [`Converter`] converts (custom resources with a conversion webhook,
//! upstream's webhookConverter behind the storage codec): objects are stored in the
//! converter's storage version and served in the Store's version. A conversion may fail and
//! takes a round trip, so it is awaited outside storage's update functions: reads convert what
//! they read (a list page or a watch event at a time), writes convert the requested object to
//! the storage version before the compare-and-swap, and an update decides on the stored object
//! converted first, landing only on the revision it decided from.
//!
//! Stores without a converter pass objects through untouched: no allocation, no call.

use std::sync::Arc;

use bytes::Bytes;
use storage::{ReadRevision, StorageError, Update, UpdateOptions};

use super::update::{How, Next, Subresource, HOOKED_WRITE_TRIES, MODIFIED};
use super::{encode, stamp, Store};
use crate::error::{RegistryError, Result};
use crate::object::Object;
use crate::options::WriteOptions;
use crate::strategy::Converter;

impl Store {
    /// Objects as read from storage (each in the version it was stored in) in the version
    /// this Store serves, in one conversion.
    pub(crate) async fn served_all(&self, objects: Vec<Object>) -> Result<Vec<Object>> {
        match &self.converter {
            None => Ok(objects),
            Some(converter) => {
                converter
                    .convert(objects, &self.info.api_version(), true)
                    .await
            }
        }
    }

    /// One object as read from storage, in the version this Store serves.
    pub(crate) async fn served_one(&self, obj: Object) -> Result<Object> {
        let Some(converter) = &self.converter else {
            return Ok(obj);
        };
        converter
            .convert(vec![obj], &self.info.api_version(), false)
            .await?
            .pop()
            .ok_or_else(no_object)
    }

    /// The bytes to store for `obj` (see [`Store::encode`]): through the converter when the
    /// Store has one, `obj` then becoming the stored object converted back, as a read of it
    /// shows it (upstream converts a write's answer from what was stored).
    pub(crate) async fn encode_converted(&self, obj: &mut Object) -> Result<Bytes> {
        let Some(converter) = &self.converter else {
            return self.encode(obj);
        };
        let storage_version = converter.storage_api_version().to_string();
        let mut stored = converter
            .convert(vec![obj.clone()], &storage_version, false)
            .await?
            .pop()
            .ok_or_else(no_object)?;
        let bytes = encode(&mut stored)?;
        *obj = self.served_one(stored).await?;
        Ok(bytes)
    }

    /// An update of a Store with a converter: the stored object is read and converted, the
    /// next state decided from it and converted to the storage version, and written only if
    /// the object is still at the revision read; a concurrent write meanwhile starts it over.
    pub(super) async fn write_converted(
        &self,
        scope: Option<&str>,
        name: &str,
        how: How,
        opts: &WriteOptions,
        mut produce: impl FnMut(Option<&Object>) -> Result<Object> + Send,
    ) -> Result<(Object, bool)> {
        let key = self.key(scope, name);
        let may_create = how.sub == Subresource::Main && self.strategy.allow_create_on_update();
        for _ in 0..HOOKED_WRITE_TRIES {
            let (seen, current) = match self.storage.get(&key, ReadRevision::Latest).await {
                Ok(kv) => {
                    let current = self.served_one(self.decode(&kv)?).await?;
                    (Some(kv.mod_revision), Some(current))
                }
                Err(StorageError::NotFound { .. }) => (None, None),
                Err(e) => return Err(self.storage_err(name)(e)),
            };
            let new = produce(current.as_ref())?;
            let mut next = self.next_state(scope, name, how, opts, current, new)?;
            if opts.dry_run.is_all() {
                return Ok(match next {
                    Next::Write(obj) | Next::Delete(obj) => (obj, false),
                    Next::Create(obj) => (obj, true),
                });
            }
            let bytes = match &mut next {
                Next::Write(obj) | Next::Create(obj) => Some(self.encode_converted(obj).await?),
                Next::Delete(_) => None,
            };
            let mut stale = false;
            let written = self
                .storage
                .guaranteed_update(
                    &key,
                    UpdateOptions {
                        ignore_not_found: may_create,
                        ..self.write_options()
                    },
                    &mut |stored| {
                        if stored.map(|kv| kv.mod_revision) != seen {
                            stale = true;
                            return Err(RegistryError::conflict(
                                &self.info.qualified_resource(),
                                name,
                                MODIFIED,
                            )
                            .into_storage());
                        }
                        Ok(match &bytes {
                            Some(bytes) => Update::Write(bytes.clone()),
                            None => Update::Delete,
                        })
                    },
                )
                .await;
            let kv = match written {
                Ok(kv) => kv,
                Err(_) if stale => {
                    // Let the writer that won finish its round before this one reads again.
                    tokio::task::yield_now().await;
                    continue;
                }
                Err(e) => return Err(self.storage_err(name)(e)),
            };
            return match next {
                Next::Write(mut obj) => {
                    stamp(&mut obj, kv.mod_revision);
                    Ok((obj, false))
                }
                Next::Create(mut obj) => {
                    stamp(&mut obj, kv.mod_revision);
                    Ok((obj, true))
                }
                Next::Delete(obj) => {
                    for hooks in &self.hooks {
                        hooks.after_delete(&obj).await;
                    }
                    Ok((obj, false))
                }
            };
        }
        Err(RegistryError::conflict(
            &self.info.qualified_resource(),
            name,
            MODIFIED,
        ))
    }
}

/// A converter that answered fewer objects than it was given (converters check the count;
/// this only keeps a broken one from panicking the request).
fn no_object() -> RegistryError {
    RegistryError::Internal("the conversion returned no object".into())
}

/// What converts a Store's objects where the Store itself is not at hand (list pages and
/// watch events streamed after the request's call returned).
#[derive(Clone)]
pub(crate) struct Converting {
    converter: Arc<dyn Converter>,
    api_version: Arc<str>,
}

impl Converting {
    pub(crate) async fn convert(&self, objects: Vec<Object>) -> Result<Vec<Object>> {
        self.converter
            .convert(objects, &self.api_version, true)
            .await
    }

    pub(crate) async fn convert_one(&self, obj: Object) -> Result<Object> {
        self.converter
            .convert(vec![obj], &self.api_version, false)
            .await?
            .pop()
            .ok_or_else(no_object)
    }
}

impl Store {
    /// The Store's converter, to be moved into a stream; None when it has none.
    pub(crate) fn converting(&self) -> Option<Converting> {
        self.converter.as_ref().map(|converter| Converting {
            converter: converter.clone(),
            api_version: self.info.api_version().into(),
        })
    }
}

impl Store {
    /// `obj`, as this Store serves it, in the version `other` serves (another version of the
    /// same resource, one storage): what upstream converts an admission request to when a
    /// webhook or policy takes it in through an equivalent version (`matchPolicy:
    /// Equivalent`). Through the converter when the resource has one (a conversion webhook),
    /// else through the stored shape.
    pub async fn convert_for(&self, obj: &Object, other: &Store) -> Result<Object> {
        if let Some(converter) = &other.converter {
            return converter
                .convert(vec![obj.clone()], &other.info.api_version(), false)
                .await?
                .pop()
                .ok_or_else(no_object);
        }
        let mut converted = obj.clone();
        if let Some(conversion) = &self.conversion {
            conversion.to_stored(&mut converted);
        }
        match &other.conversion {
            Some(conversion) => conversion.to_served(&mut converted),
            None => {
                if let Some(map) = converted.as_object_mut() {
                    map.insert("apiVersion".into(), other.info.api_version().into());
                }
            }
        }
        Ok(converted)
    }
}
