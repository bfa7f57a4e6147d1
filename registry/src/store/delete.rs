//! Delete and deletecollection (upstream's Store.Delete, updateForGracefulDeletionAndFinalizers
//! and the namespace REST's two-phase delete).

use futures::{StreamExt, TryStreamExt};
use serde_json::{json, Value};
use storage::{KeyValue, Preconditions, ReadRevision, StorageError, UpdateOptions};
use tracing::debug;

use super::graceful::{mark_as_deleting, Graceful};
use super::{encode, stamp, Store};
use crate::error::{Details, RegistryError, Result, Status};
use crate::object::{self, Object};
use crate::options::{parse_resource_version, DeleteOptions, ListOptions};

/// Deletes of a deletecollection in flight at once.
const COLLECTION_CONCURRENCY: usize = 16;

#[derive(Debug)]
pub struct DeleteOutcome {
    /// The object as it now is (still present), the deleted object, or a Success Status.
    pub object: Value,
    /// Whether the object is gone.
    pub deleted: bool,
}

/// How the update half of a delete ended without writing.
#[derive(Debug, thiserror::Error)]
enum Signal {
    #[error("delete now")]
    DeleteNow,
    #[error("already deleting")]
    AlreadyDeleting,
}

impl Store {
    fn preconditions(&self, opts: &DeleteOptions) -> Result<Preconditions> {
        let pre = opts.preconditions.clone().unwrap_or_default();
        Ok(Preconditions {
            uid: pre.uid,
            resource_version: pre
                .resource_version
                .as_deref()
                .map(parse_resource_version)
                .transpose()?,
        })
    }

    async fn read(&self, key: &str, name: &str) -> Result<(Object, KeyValue)> {
        let kv = self
            .storage
            .get(key, ReadRevision::Latest)
            .await
            .map_err(self.storage_err(name))?;
        Ok((self.decode(&kv)?, kv))
    }

    pub async fn delete(
        &self,
        namespace: Option<&str>,
        name: &str,
        mut opts: DeleteOptions,
    ) -> Result<DeleteOutcome> {
        opts.validate()?;
        let namespace = self.scope(namespace)?;
        self.admission.admit_delete(&self.info, name)?;
        let key = self.key(namespace, name);
        let (mut current, current_kv) = self.read(&key, name).await?;
        if self.strategy.finalizes_through_spec() {
            if let Some(outcome) = self
                .begin_termination(&key, name, &mut current, &mut opts)
                .await?
            {
                return Ok(outcome);
            }
        }
        // Only graceful kinds change the object while deciding; others are checked in place.
        let graceful = if self.strategy.deletes_gracefully() {
            self.before_delete(&mut current.clone(), &mut opts.clone())?
        } else {
            self.before_delete(&mut current, &mut opts.clone())?
        };
        if graceful == Graceful::Pending {
            return Ok(DeleteOutcome {
                object: current,
                deleted: false,
            });
        }
        let mut preconditions = self.preconditions(&opts)?;
        let mut last = None;
        let mut ignore_not_found = false;
        let needs_update = graceful == Graceful::Yes
            || !object::finalizers(&current).is_empty()
            || self.gc_finalizers(&current, &opts).is_some()
            || self.adds_deletion_finalizer(&current);
        if needs_update {
            match self
                .update_for_deletion(&key, name, &preconditions, &opts)
                .await?
            {
                Marked::Stays(obj) => {
                    return Ok(DeleteOutcome {
                        object: obj,
                        deleted: false,
                    })
                }
                Marked::DeleteNow { written } => {
                    if let Some(obj) = written {
                        if preconditions.resource_version.is_some() {
                            preconditions.resource_version =
                                parse_resource_version(object::resource_version(&obj)).ok();
                        }
                        // A graceless delete may race whoever else removes the object.
                        ignore_not_found = true;
                        last = Some(obj);
                    }
                }
            }
        }
        if opts.is_dry_run() {
            return Ok(DeleteOutcome {
                object: self.deleted_response(last.unwrap_or(current)),
                deleted: true,
            });
        }
        // Straight from what was just read, unless an update since changed it.
        let removed = match &last {
            None => {
                self.storage
                    .delete_cached(&key, &preconditions, current_kv.clone())
                    .await
            }
            Some(_) => self.storage.delete(&key, &preconditions, None).await,
        };
        match removed {
            Ok(kv) => {
                debug!(resource = %self.info.qualified_resource(), namespace, name, "deleted");
                let deleted = if last.is_none() && kv.mod_revision == current_kv.mod_revision {
                    current
                } else {
                    self.decode(&kv)?
                };
                Ok(DeleteOutcome {
                    object: self.deleted_response(deleted),
                    deleted: true,
                })
            }
            Err(StorageError::NotFound { .. }) if ignore_not_found && last.is_some() => {
                Ok(DeleteOutcome {
                    object: self.deleted_response(last.unwrap_or(current)),
                    deleted: true,
                })
            }
            Err(e) => Err(self.storage_err(name)(e)),
        }
    }

    /// The first delete of an object whose kind holds deleting objects with a finalizer of its
    /// own.
    fn adds_deletion_finalizer(&self, obj: &Object) -> bool {
        self.strategy.deletion_finalizer().is_some() && object::deletion_timestamp(obj).is_none()
    }

    /// The body of a delete that removed the object.
    fn deleted_response(&self, obj: Object) -> Value {
        if self.strategy.returns_deleted_object() {
            return obj;
        }
        let status = Status::success(Details {
            name: Some(object::name(&obj).to_string()),
            group: Some(self.info.group.clone()).filter(|g| !g.is_empty()),
            kind: Some(self.info.plural.clone()),
            uid: Some(object::uid(&obj).to_string()),
            ..Default::default()
        });
        serde_json::to_value(status).unwrap_or(Value::Null)
    }

    /// Writes the graceful-deletion and finalizer state a delete implies, in one guaranteed
    /// update; says whether the object stays or must now be removed.
    async fn update_for_deletion(
        &self,
        key: &str,
        name: &str,
        preconditions: &Preconditions,
        opts: &DeleteOptions,
    ) -> Result<Marked> {
        let mut pending_finalizers = false;
        let mut last_grace = 0;
        let mut signal = None;
        let mut compute = |kv: &KeyValue| -> Result<Option<Object>> {
            signal = None;
            let mut obj = self.decode_bytes(&kv.value, kv.mod_revision)?;
            let mut opts = opts.clone();
            let graceful = self.before_delete(&mut obj, &mut opts)?;
            if graceful == Graceful::Pending {
                signal = Some(Signal::AlreadyDeleting);
                return Ok(None);
            }
            if let Some(finalizers) = self.gc_finalizers(&obj, &opts) {
                object::set_finalizers(&mut obj, &finalizers);
            }
            if self.adds_deletion_finalizer(&obj) {
                if let Some(finalizer) = self.strategy.deletion_finalizer() {
                    let mut finalizers = object::finalizers(&obj);
                    if !finalizers.iter().any(|f| f == finalizer) {
                        finalizers.push(finalizer.to_string());
                        object::set_finalizers(&mut obj, &finalizers);
                    }
                    self.strategy.mark_deleting(&mut obj);
                }
            }
            pending_finalizers = !object::finalizers(&obj).is_empty();
            if graceful == Graceful::No {
                if !pending_finalizers {
                    signal = Some(Signal::DeleteNow);
                    return Ok(None);
                }
                mark_as_deleting(&mut obj);
            } else {
                last_grace = opts.grace_period_seconds.unwrap_or(0);
            }
            Ok(Some(obj))
        };
        let mut written = None;
        let result = if opts.is_dry_run() {
            let kv = self
                .storage
                .get(key, ReadRevision::Latest)
                .await
                .map_err(self.storage_err(name))?;
            written = compute(&kv)?;
            Ok(kv)
        } else {
            self.storage
                .guaranteed_update(
                    key,
                    UpdateOptions {
                        preconditions: preconditions.clone(),
                        ..Default::default()
                    },
                    &mut |current| {
                        let Some(kv) = current else {
                            return Err(StorageError::not_found(key));
                        };
                        match compute(kv).map_err(RegistryError::into_storage)? {
                            Some(mut obj) => {
                                let bytes = encode(&mut obj).map_err(RegistryError::into_storage);
                                written = Some(obj);
                                bytes
                            }
                            None => Err(StorageError::Aborted(Box::new(Signal::DeleteNow))),
                        }
                    },
                )
                .await
        };
        match (result, signal) {
            (_, Some(Signal::AlreadyDeleting)) => Ok(Marked::Stays(self.read(key, name).await?.0)),
            (_, Some(Signal::DeleteNow)) => Ok(Marked::DeleteNow { written: None }),
            (Ok(kv), None) => {
                let mut obj = written.unwrap_or(self.decode(&kv)?);
                stamp(&mut obj, kv.mod_revision);
                if pending_finalizers || last_grace > 0 {
                    Ok(Marked::Stays(obj))
                } else {
                    Ok(Marked::DeleteNow { written: Some(obj) })
                }
            }
            (Err(e), None) => Err(self.storage_err(name)(e)),
        }
    }

    /// Namespaces: the first delete marks the namespace Terminating and returns it; it is
    /// removed by a later delete once `spec.finalizers` is empty. None: go on deleting.
    async fn begin_termination(
        &self,
        key: &str,
        name: &str,
        current: &mut Object,
        opts: &mut DeleteOptions,
    ) -> Result<Option<DeleteOutcome>> {
        // Deleting a namespace is always guarded by its UID.
        let pre = opts.preconditions.get_or_insert_with(Default::default);
        if pre.uid.is_none() {
            pre.uid = Some(object::uid(current).to_string());
        }
        let mut check = current.clone();
        self.before_delete(&mut check, &mut opts.clone())?;
        if object::deletion_timestamp(current).is_none() {
            let opts = opts.clone();
            let terminating = |obj: &mut Object| -> Result<()> {
                if object::deletion_timestamp(obj).is_none() {
                    object::meta_mut(obj).insert("deletionTimestamp".into(), json!(object::now()));
                }
                if let Some(map) = obj.as_object_mut() {
                    let status = map.entry("status").or_insert_with(|| json!({}));
                    if let Some(status) = status.as_object_mut() {
                        status.insert("phase".into(), json!("Terminating"));
                    }
                }
                if let Some(finalizers) = self.gc_finalizers(obj, &opts) {
                    object::set_finalizers(obj, &finalizers);
                }
                Ok(())
            };
            if opts.is_dry_run() {
                terminating(current)?;
                return Ok(Some(DeleteOutcome {
                    object: current.clone(),
                    deleted: false,
                }));
            }
            let mut written = None;
            let kv = self
                .storage
                .guaranteed_update(
                    key,
                    UpdateOptions {
                        preconditions: self.preconditions(&opts)?,
                        ..Default::default()
                    },
                    &mut |kv| {
                        let Some(kv) = kv else {
                            return Err(StorageError::not_found(key));
                        };
                        let mut obj = self
                            .decode_bytes(&kv.value, kv.mod_revision)
                            .map_err(RegistryError::into_storage)?;
                        terminating(&mut obj).map_err(RegistryError::into_storage)?;
                        let bytes = encode(&mut obj).map_err(RegistryError::into_storage);
                        written = Some(obj);
                        bytes
                    },
                )
                .await
                .map_err(self.storage_err(name))?;
            let mut obj = written.unwrap_or(self.decode(&kv)?);
            stamp(&mut obj, kv.mod_revision);
            self.admission.terminating(name);
            tracing::info!(namespace = name, "namespace terminating");
            return Ok(Some(DeleteOutcome {
                object: obj,
                deleted: false,
            }));
        }
        let spec_finalizers = current
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if spec_finalizers {
            return Ok(Some(DeleteOutcome {
                object: current.clone(),
                deleted: false,
            }));
        }
        Ok(None)
    }

    /// Deletes everything a list with these options would return; returns the list of what
    /// was deleted (upstream's DeleteCollection).
    pub async fn delete_collection(
        &self,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: DeleteOptions,
    ) -> Result<Object> {
        let mut listing = self.list(namespace, list).await?;
        let items = match listing.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        let deleted: Vec<Value> = futures::stream::iter(items)
            .map(|item| {
                let opts = opts.clone();
                async move {
                    let ns = object::namespace(&item).to_string();
                    let ns = (!ns.is_empty()).then_some(ns);
                    match self.delete(ns.as_deref(), object::name(&item), opts).await {
                        Ok(_) => Ok(Some(item)),
                        Err(RegistryError::NotFound { .. }) => Ok(None),
                        Err(e) => Err(e),
                    }
                }
            })
            .buffer_unordered(COLLECTION_CONCURRENCY)
            .try_filter_map(|item| async move { Ok(item) })
            .try_collect()
            .await?;
        if let Some(map) = listing.as_object_mut() {
            map.insert("items".into(), Value::Array(deleted));
        }
        Ok(listing)
    }
}

/// The result of the update half of a delete.
enum Marked {
    /// Graceful deletion or finalizers keep the object for now.
    Stays(Object),
    /// Remove it now; `written` is the state the update wrote, if it wrote one.
    DeleteNow { written: Option<Object> },
}
