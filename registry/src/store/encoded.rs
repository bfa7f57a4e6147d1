//! Lists and watches for in-process consumers (the informers) that keep objects as the watch
//! cache holds them: the stored bytes, shared with the cache (a clone of its `Bytes`, never a
//! copy), plus the revision that wrote them. A [`Decoder`] turns one into the object that
//! [`Store::list`] or [`Store::watch`] would have served, when it is needed.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::Value;
use storage::{EventKind, KeyValue};

use super::{decode_at, Store};
use crate::error::{RegistryError, Result};
use crate::object::Object;
use crate::options::ListOptions;
use crate::strategy::conversion::ApiVersion;
use crate::strategy::Conversion;

/// One object as stored, without its resourceVersion (the revision stands for it).
#[derive(Clone, PartialEq, Eq)]
pub struct Encoded {
    /// `namespace/name`, or `name` for a cluster-scoped object (client-go's object key).
    pub key: String,
    /// The stored JSON; the same allocation as the watch cache's.
    pub value: Bytes,
    /// The revision that wrote the object (for a deletion, the one that deleted it): the
    /// resourceVersion a decode stamps.
    pub revision: i64,
}

impl fmt::Debug for Encoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoded")
            .field("key", &self.key)
            .field("value_len", &self.value.len())
            .field("revision", &self.revision)
            .finish()
    }
}

/// A list's objects and the revision it was read at.
#[derive(Clone, Debug, Default)]
pub struct EncodedList {
    pub revision: i64,
    pub items: Vec<Encoded>,
    /// Set when `limit` cut the list short, as for [`Store::list`].
    pub continue_token: Option<String>,
}

/// A watch event of [`Store::watch_encoded`]: what [`Store::watch`] sends, objects undecoded.
#[derive(Debug)]
pub enum EncodedEvent {
    Added(Encoded),
    Modified(Encoded),
    /// The last state before the deletion, at the deletion's revision.
    Deleted(Encoded),
    Bookmark {
        revision: i64,
        /// The bookmark closing the initial events of `sendInitialEvents`.
        initial_events_end: bool,
    },
    /// The watch failed (a too old resourceVersion is `Expired`, 410); nothing follows.
    Error(RegistryError),
}

impl EncodedEvent {
    /// The revision the event brings the watcher to (None for an error).
    pub fn revision(&self) -> Option<i64> {
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) => Some(o.revision),
            Self::Bookmark { revision, .. } => Some(*revision),
            Self::Error(_) => None,
        }
    }
}

pub type EncodedEvents = BoxStream<'static, EncodedEvent>;

/// Turns [`Encoded`] objects of one Store into the objects it serves: the resourceVersion
/// stamped, converted to the served version. Cheap to clone.
#[derive(Clone, Default)]
pub struct Decoder {
    conversion: Option<Arc<dyn Conversion>>,
}

impl Decoder {
    pub(super) fn new(conversion: Option<Arc<dyn Conversion>>) -> Self {
        Self { conversion }
    }

    pub fn decode(&self, encoded: &Encoded) -> Result<Object> {
        self.decode_bytes(&encoded.value, encoded.revision)
    }

    /// Stored bytes read at `revision`, as served.
    pub fn decode_bytes(&self, value: &[u8], revision: i64) -> Result<Object> {
        served(value, revision, self.conversion.as_deref())
    }

    /// The fields `projection` keeps of the object as served, the resourceVersion stamped.
    /// (A converted resource is decoded whole: its conversion reads the stored shape.)
    pub fn decode_projected(
        &self,
        value: &[u8],
        revision: i64,
        projection: crate::projection::Projection,
    ) -> Result<Object> {
        if self.conversion.is_some() {
            return self.decode_bytes(value, revision);
        }
        let mut obj = crate::projection::decode(value, projection)
            .map_err(|e| RegistryError::Internal(format!("stored object is not JSON: {e}")))?;
        if obj.get("metadata").is_some_and(Value::is_object) {
            super::stamp(&mut obj, revision);
        }
        Ok(obj)
    }
}

/// Stored bytes in the shape served: every read of a Store decodes this way.
pub(super) fn served(
    value: &[u8],
    revision: i64,
    conversion: Option<&dyn Conversion>,
) -> Result<Object> {
    let mut obj = decode_at(value, revision)?;
    if let Some(conversion) = conversion {
        conversion.to_served(&mut obj);
    }
    Ok(obj)
}

/// What a storage key leaves once the resource's path is taken off: `namespace/name` or
/// `name`, as the key layout puts them.
fn object_key(prefix: &str, storage_key: &str) -> String {
    storage_key
        .strip_prefix(prefix)
        .unwrap_or(storage_key)
        .to_string()
}

impl Store {
    /// Decodes what [`Store::list_encoded`] and [`Store::watch_encoded`] hand out.
    ///
    /// A Store with a [`crate::strategy::Converter`] hands its in-process readers (informers:
    /// the garbage collector, the namespace controller, quota) objects whose metadata is
    /// exact and whose body stays in the version stored, under the served apiVersion: they
    /// read metadata only, and a conversion webhook is not called for them.
    pub fn decoder(&self) -> Decoder {
        let conversion = match &self.converter {
            Some(_) => Some(Arc::new(ApiVersion(self.info.api_version())) as Arc<dyn Conversion>),
            None => self.conversion.clone(),
        };
        Decoder { conversion }
    }

    /// [`Store::list`] without decoding: the stored bytes of what matches.
    pub async fn list_encoded(
        &self,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<EncodedList> {
        let result = self.read_list(namespace, opts).await?;
        let prefix = format!("{}/", self.info.storage_path);
        let encoded = |kv: KeyValue| Encoded {
            key: object_key(&prefix, &kv.key),
            value: kv.value,
            revision: kv.mod_revision,
        };
        Ok(EncodedList {
            revision: result.revision,
            items: result.items.into_iter().map(encoded).collect(),
            continue_token: result.continue_token,
        })
    }

    /// [`Store::watch`] of the resource in `namespace` (or everywhere), without decoding.
    pub async fn watch_encoded(
        &self,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<EncodedEvents> {
        let stream = self.open_watch(namespace, None, opts).await?;
        let prefix = format!("{}/", self.info.storage_path);
        let resource = self.info.qualified_resource();
        let events = stream.map(move |event| {
            let e = match event {
                Ok(e) => e,
                Err(e) => {
                    return EncodedEvent::Error(RegistryError::from_storage(e, &resource, ""))
                }
            };
            if e.kind == EventKind::Bookmark {
                return EncodedEvent::Bookmark {
                    revision: e.revision,
                    initial_events_end: e.initial_events_end,
                };
            }
            let object = Encoded {
                key: object_key(&prefix, &e.key),
                value: e.value,
                revision: e.revision,
            };
            match e.kind {
                EventKind::Added => EncodedEvent::Added(object),
                EventKind::Modified => EncodedEvent::Modified(object),
                _ => EncodedEvent::Deleted(object),
            }
        });
        Ok(events.boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::object_key;

    #[test]
    fn object_keys_follow_the_storage_layout() {
        assert_eq!(object_key("/pods/", "/pods/ns/web"), "ns/web");
        assert_eq!(object_key("/nodes/", "/nodes/n1"), "n1");
    }
}
