//! Delete (upstream's Store.Delete with rest.BeforeDelete and
//! updateForGracefulDeletionAndFinalizers), read top to bottom:
//!
//! 1. [`Store::delete`] runs one guaranteed update over the stored object;
//! 2. on every attempt, [`Store::plan`] decides from that object and the options alone what the
//!    delete does, as a [`DeletePlan`] (or an error when a precondition fails);
//! 3. the plan becomes the storage decision (remove / write the mark / keep), so the decision
//!    and the compare-and-swap act on the same revision;
//! 4. the outcome is reported from the plan that landed.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use storage::{Preconditions, ReadRevision, StorageError, Update};
use tracing::debug;

use super::{stamp, Store};
use crate::admission::{Attributes, Operation};
use crate::catalogue::GcPolicy;
use crate::error::{Details, RegistryError, Result, Status};
use crate::object::{self, Object, FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
use crate::options::{parse_resource_version, DeleteOptions, PropagationPolicy};

#[derive(Debug)]
pub struct DeleteOutcome {
    /// The object as it now is (still present), the deleted object, or a Success Status.
    pub object: Value,
    /// Whether the object is gone.
    pub deleted: bool,
}

/// What a delete does to an object as stored. A delete that cannot proceed (a precondition
/// fails) is an error instead.
#[derive(Debug)]
pub enum DeletePlan {
    /// Nothing keeps the object: remove it.
    Remove,
    /// Store the object marked as being deleted (deletion timestamp, grace period,
    /// finalizers). It stays while its grace period runs or finalizers are pending; with
    /// `then_remove` (a graceless delete of a kind that deletes gracefully) it is removed
    /// right after the mark is written, so watchers see the final state first.
    Mark { object: Object, then_remove: bool },
    /// A deletion is under way and this delete changes nothing.
    AlreadyDeleting,
}

/// What upstream's BeforeDelete makes of a kind's graceful deletion.
enum Grace {
    /// No grace period: removed now unless finalizers hold it.
    None,
    /// Wait until `deadline`, `seconds` after the deletion (re)started; the first graceful
    /// delete also bumps generation so controllers notice.
    Until {
        deadline: DateTime<Utc>,
        seconds: i64,
        first: bool,
    },
    /// A graceful deletion is running and this delete does not shorten it.
    Pending,
}

impl Store {
    pub async fn delete(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: DeleteOptions,
    ) -> Result<DeleteOutcome> {
        let mut outcome = self.delete_stored(namespace, name, opts).await?;
        // A Success Status (kinds that do not return the deleted object) is not converted.
        let is_object = outcome.object["kind"].as_str() == Some(self.info.kind.as_str());
        if self.converter.is_some() && is_object {
            let object = std::mem::take(&mut outcome.object);
            outcome.object = self.served_one(object).await?;
        }
        Ok(outcome)
    }

    /// The delete itself. Planning reads and marks metadata only, so a Store with a
    /// converter plans on the object as stored and converts only the answer (`delete`).
    pub(super) async fn delete_stored(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: DeleteOptions,
    ) -> Result<DeleteOutcome> {
        let namespace = self.scope(namespace)?;
        let chain = self.admission.chain();
        if chain.handles(&self.info, Operation::Delete, "") {
            let attrs = Attributes {
                info: &self.info,
                operation: Operation::Delete,
                subresource: "",
                namespace,
                name,
                old: None,
                // Deletes carry no writer (DeleteOptions); no plugin here judges one.
                user: None,
                dry_run: opts.dry_run.is_all(),
            };
            chain.admit(&attrs, None).await?;
        }
        let key = self.key(namespace, name);
        if opts.dry_run.is_all() {
            let kv = self
                .storage
                .get(&key, ReadRevision::Latest)
                .await
                .map_err(self.storage_err(name))?;
            let stored = self.decode(&kv)?;
            let plan = self.plan(&stored, &opts)?;
            return Ok(self.dry_run_outcome(plan, stored));
        }

        // The last attempt's plan and the object it was made from are the ones that landed.
        let mut planned: Option<(DeletePlan, Object)> = None;
        let kv = self
            .storage
            .guaranteed_update(&key, self.write_options(), &mut |current| {
                let kv = current.ok_or_else(|| StorageError::not_found(&key))?;
                let stored = self.decode(kv).map_err(RegistryError::into_storage)?;
                let mut plan = self
                    .plan(&stored, &opts)
                    .map_err(RegistryError::into_storage)?;
                let update = match &mut plan {
                    DeletePlan::Remove => Update::Delete,
                    DeletePlan::Mark { object, .. } => {
                        Update::Write(self.encode(object).map_err(RegistryError::into_storage)?)
                    }
                    DeletePlan::AlreadyDeleting => Update::Keep,
                };
                planned = Some((plan, stored));
                Ok(update)
            })
            .await
            .map_err(self.storage_err(name))?;
        let Some((plan, stored)) = planned else {
            return Err(RegistryError::Internal("delete decided nothing".into()));
        };
        match plan {
            DeletePlan::Remove => {
                debug!(resource = %self.info.qualified_resource(), namespace, name, "deleted");
                self.after_delete(&stored).await;
                Ok(self.removed(stored))
            }
            DeletePlan::AlreadyDeleting => Ok(DeleteOutcome {
                object: stored,
                deleted: false,
            }),
            DeletePlan::Mark {
                mut object,
                then_remove,
            } => {
                stamp(&mut object, kv.mod_revision);
                if !then_remove {
                    return Ok(DeleteOutcome {
                        object,
                        deleted: false,
                    });
                }
                self.remove_marked(&key, name, object, &opts).await
            }
        }
    }

    /// The second step of a graceless delete of a graceful kind: the mark is written, now the
    /// object goes. Guarded by its UID so a re-created object of the same name survives, and
    /// by the mark's revision when the client asked for a resourceVersion precondition.
    async fn remove_marked(
        &self,
        key: &str,
        name: &str,
        marked: Object,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome> {
        let asked_version = opts
            .preconditions
            .as_ref()
            .is_some_and(|p| p.resource_version.is_some());
        let preconditions = Preconditions {
            uid: Some(object::uid(&marked).to_string()),
            resource_version: asked_version
                .then(|| parse_resource_version(object::resource_version(&marked)).ok())
                .flatten(),
        };
        match self.storage.delete(key, &preconditions, None).await {
            Ok(kv) => {
                let gone = self.decode(&kv)?;
                self.after_delete(&gone).await;
                Ok(self.removed(gone))
            }
            // Whoever else removed it meanwhile (the kubelet's own final delete) finished the
            // same deletion.
            Err(StorageError::NotFound { .. }) => Ok(self.removed(marked)),
            Err(e) => Err(self.storage_err(name)(e)),
        }
    }

    /// Gives back what the removed object held (upstream's AfterDelete).
    async fn after_delete(&self, obj: &Object) {
        for hooks in &self.hooks {
            hooks.after_delete(obj).await;
        }
    }

    /// What a dry-run delete reports: what the plan would have done.
    fn dry_run_outcome(&self, plan: DeletePlan, stored: Object) -> DeleteOutcome {
        match plan {
            DeletePlan::Remove => self.removed(stored),
            DeletePlan::Mark {
                object,
                then_remove: true,
            } => self.removed(object),
            DeletePlan::Mark { object, .. } => DeleteOutcome {
                object,
                deleted: false,
            },
            DeletePlan::AlreadyDeleting => DeleteOutcome {
                object: stored,
                deleted: false,
            },
        }
    }

    /// The answer to a delete that removed the object: the object itself for kinds that
    /// return it (upstream's ReturnDeletedObject), else a Success Status.
    fn removed(&self, obj: Object) -> DeleteOutcome {
        let object = if self.strategy.returns_deleted_object() {
            obj
        } else {
            let status = Status::success(Details {
                name: Some(object::name(&obj).to_string()),
                group: Some(self.info.group.clone()).filter(|g| !g.is_empty()),
                kind: Some(self.info.plural.clone()),
                uid: Some(object::uid(&obj).to_string()),
                ..Default::default()
            });
            serde_json::to_value(status).unwrap_or(Value::Null)
        };
        DeleteOutcome {
            object,
            deleted: true,
        }
    }

    /// The plan of a delete of `stored`: a pure function of the object, the options and the
    /// resource's strategy and garbage-collection policy.
    pub(crate) fn plan(&self, stored: &Object, opts: &DeleteOptions) -> Result<DeletePlan> {
        self.check_preconditions(stored, opts)?;
        let gc_finalizers = self.gc_finalizers(stored, opts);
        if let Some(plan) = self.strategy.plan_delete(stored, gc_finalizers.as_deref()) {
            return Ok(plan);
        }
        let grace = self.grace(stored, opts.grace_period_seconds);
        if matches!(grace, Grace::Pending) {
            return Ok(DeletePlan::AlreadyDeleting);
        }
        let mut finalizers = gc_finalizers.unwrap_or_else(|| object::finalizers(stored));
        // The kind's own finalizer comes with the first delete (CRDs: instances go first).
        let own = self
            .strategy
            .deletion_finalizer()
            .filter(|_| object::deletion_timestamp(stored).is_none());
        if let Some(own) = own.filter(|f| !finalizers.iter().any(|have| have == f)) {
            finalizers.push(own.to_string());
        }
        if matches!(grace, Grace::None) && finalizers.is_empty() {
            return Ok(DeletePlan::Remove);
        }

        let mut marked = stored.clone();
        if finalizers != object::finalizers(stored) {
            object::set_finalizers(&mut marked, &finalizers);
        }
        if own.is_some() {
            self.strategy.mark_deleting(&mut marked);
        }
        let then_remove = match grace {
            Grace::Until {
                deadline,
                seconds,
                first,
            } => {
                let generation = object::generation(&marked);
                let meta = object::meta_mut(&mut marked);
                meta.insert(
                    "deletionTimestamp".into(),
                    Value::from(object::timestamp(deadline)),
                );
                meta.insert("deletionGracePeriodSeconds".into(), Value::from(seconds));
                if first && generation > 0 {
                    meta.insert("generation".into(), Value::from(generation + 1));
                }
                seconds == 0 && finalizers.is_empty()
            }
            _ => {
                mark_as_deleting(&mut marked);
                false
            }
        };
        Ok(DeletePlan::Mark {
            object: marked,
            then_remove,
        })
    }

    /// The delete's preconditions against the stored object, with upstream's messages.
    fn check_preconditions(&self, obj: &Object, opts: &DeleteOptions) -> Result<()> {
        let Some(pre) = &opts.preconditions else {
            return Ok(());
        };
        let name = object::name(obj);
        if let Some(uid) = pre.uid.as_deref().filter(|u| *u != object::uid(obj)) {
            return Err(RegistryError::conflict(
                &self.info.qualified_resource(),
                name,
                format!("the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated", object::uid(obj)),
            ));
        }
        let stored_version = object::resource_version(obj);
        if let Some(rv) = pre
            .resource_version
            .as_deref()
            .filter(|v| *v != stored_version)
        {
            return Err(RegistryError::conflict(
                &self.info.qualified_resource(),
                name,
                format!("the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({stored_version}). The object might have been modified"),
            ));
        }
        Ok(())
    }

    /// Upstream's BeforeDelete for kinds that delete gracefully: the grace period this delete
    /// gets, given the one requested. A running deletion may only be shortened.
    fn grace(&self, obj: &Object, requested: Option<i64>) -> Grace {
        if !self.strategy.deletes_gracefully() {
            return Grace::None;
        }
        let Some(period) = self.strategy.graceful_period(obj, requested) else {
            return Grace::None;
        };
        let Some(since) = object::deletion_timestamp(obj) else {
            return Grace::Until {
                deadline: Utc::now() + Duration::seconds(period),
                seconds: period,
                first: true,
            };
        };
        let current = object::deletion_grace_period(obj).unwrap_or(0);
        // A deletion recorded with no grace left was interrupted: finish it now.
        if current == 0 {
            return Grace::None;
        }
        match requested {
            Some(shorter) if shorter < current => {
                let started =
                    object::parse_time(since).unwrap_or_else(Utc::now) - Duration::seconds(current);
                Grace::Until {
                    deadline: started + Duration::seconds(shorter),
                    seconds: shorter,
                    first: false,
                }
            }
            _ => Grace::Pending,
        }
    }

    /// The finalizers the delete's propagation policy implies (`orphan` or
    /// `foregroundDeletion`) in place of the object's, if that changes them.
    fn gc_finalizers(&self, obj: &Object, opts: &DeleteOptions) -> Option<Vec<String>> {
        let current = object::finalizers(obj);
        let mut wanted: Vec<String> = current
            .iter()
            .filter(|f| !matches!(f.as_str(), FINALIZER_ORPHAN | FINALIZER_FOREGROUND))
            .cloned()
            .collect();
        match self.propagation(&current, opts) {
            Some(PropagationPolicy::Orphan) => wanted.push(FINALIZER_ORPHAN.into()),
            Some(PropagationPolicy::Foreground) => wanted.push(FINALIZER_FOREGROUND.into()),
            _ => {}
        }
        let same = wanted.len() == current.len() && wanted.iter().all(|f| current.contains(f));
        (!same).then_some(wanted)
    }

    /// The propagation this delete asks for: the options' policy, else the legacy
    /// orphanDependents, else what the object's finalizers already ask, else the resource's
    /// default. None: the resource takes no part in garbage collection.
    fn propagation(
        &self,
        finalizers: &[String],
        opts: &DeleteOptions,
    ) -> Option<PropagationPolicy> {
        if self.info.default_gc_policy == GcPolicy::Unsupported {
            return None;
        }
        if let Some(orphan) = opts.orphan_dependents {
            return Some(if orphan {
                PropagationPolicy::Orphan
            } else {
                PropagationPolicy::Background
            });
        }
        if let Some(policy) = opts.propagation_policy {
            return Some(policy);
        }
        let asked = finalizers.iter().find_map(|f| match f.as_str() {
            FINALIZER_ORPHAN => Some(PropagationPolicy::Orphan),
            FINALIZER_FOREGROUND => Some(PropagationPolicy::Foreground),
            _ => None,
        });
        Some(asked.unwrap_or(match self.info.default_gc_policy {
            GcPolicy::OrphanDependents => PropagationPolicy::Orphan,
            _ => PropagationPolicy::Background,
        }))
    }
}

/// Marks an object held by finalizers as being deleted (upstream's markAsDeleting).
fn mark_as_deleting(obj: &mut Object) {
    let now = Utc::now();
    let deleting = object::deletion_timestamp(obj).and_then(object::parse_time);
    let generation = object::generation(obj);
    let meta = object::meta_mut(obj);
    if deleting.is_none() && generation > 0 {
        meta.insert("generation".into(), Value::from(generation + 1));
    }
    if deleting.is_none_or(|t| t > now) {
        meta.insert(
            "deletionTimestamp".into(),
            Value::from(object::timestamp(now)),
        );
    }
    meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
}
