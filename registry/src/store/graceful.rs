//! The decisions of a delete before anything is written (upstream's rest.BeforeDelete and
//! the garbage-collection finalizer rules of Store.Delete).

use serde_json::Value;

use super::Store;
use crate::catalogue::GcPolicy;
use crate::error::{RegistryError, Result};
use crate::object::{self, Object, FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
use crate::options::{DeleteOptions, Propagation};

/// What BeforeDelete found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Graceful {
    /// Not graceful: delete now (unless finalizers hold it).
    No,
    /// Graceful: the object now carries a deletion timestamp and grace period.
    Yes,
    /// A graceful deletion is already under way and this one changes nothing.
    Pending,
}

impl Store {
    /// Checks the delete's preconditions against `obj` and, for kinds that delete gracefully,
    /// sets (or shortens) the deletion timestamp and grace period on it.
    pub(super) fn before_delete(
        &self,
        obj: &mut Object,
        opts: &mut DeleteOptions,
    ) -> Result<Graceful> {
        let name = object::name(obj).to_string();
        if let Some(pre) = &opts.preconditions {
            if let Some(uid) = &pre.uid {
                if uid != object::uid(obj) {
                    return Err(RegistryError::conflict(
                        &self.info.qualified_resource(),
                        &name,
                        format!("the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated", object::uid(obj)),
                    ));
                }
            }
            if let Some(rv) = &pre.resource_version {
                if rv != object::resource_version(obj) {
                    return Err(RegistryError::conflict(
                        &self.info.qualified_resource(),
                        &name,
                        format!("the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified", object::resource_version(obj)),
                    ));
                }
            }
        }
        if object::deletion_grace_period(obj).is_some_and(|g| g < 0) {
            object::meta_mut(obj).insert("deletionGracePeriodSeconds".into(), Value::from(1));
        }
        if !self.strategy.deletes_gracefully() {
            return Ok(Graceful::No);
        }
        let Some(period) = self
            .strategy
            .graceful_period(obj, opts.grace_period_seconds)
        else {
            return Ok(Graceful::No);
        };
        if let Some(since) = object::deletion_timestamp(obj).map(str::to_string) {
            let current = object::deletion_grace_period(obj).unwrap_or(0);
            // A deletion recorded with no grace left was interrupted: finish it now.
            if current == 0 {
                return Ok(Graceful::No);
            }
            return match opts.grace_period_seconds {
                // Only a shorter grace period may be asked for.
                Some(shorter) if shorter < current => {
                    let started = object::parse_time(&since).unwrap_or_else(chrono::Utc::now)
                        - chrono::Duration::seconds(current);
                    let meta = object::meta_mut(obj);
                    meta.insert(
                        "deletionTimestamp".into(),
                        Value::from(object::timestamp(
                            started + chrono::Duration::seconds(shorter),
                        )),
                    );
                    meta.insert("deletionGracePeriodSeconds".into(), Value::from(shorter));
                    opts.grace_period_seconds = Some(shorter);
                    Ok(Graceful::Yes)
                }
                _ => {
                    opts.grace_period_seconds = Some(current);
                    Ok(Graceful::Pending)
                }
            };
        }
        opts.grace_period_seconds = Some(period);
        let generation = object::generation(obj);
        let meta = object::meta_mut(obj);
        meta.insert(
            "deletionTimestamp".into(),
            Value::from(object::timestamp(
                chrono::Utc::now() + chrono::Duration::seconds(period),
            )),
        );
        meta.insert("deletionGracePeriodSeconds".into(), Value::from(period));
        // Controllers must notice that a deletion started, so the first one bumps generation.
        if generation > 0 {
            meta.insert("generation".into(), Value::from(generation + 1));
        }
        Ok(Graceful::Yes)
    }

    fn should_orphan(&self, finalizers: &[String], opts: &DeleteOptions) -> bool {
        if self.info.default_gc_policy == GcPolicy::Unsupported {
            return false;
        }
        if let Some(orphan) = opts.orphan_dependents {
            return orphan;
        }
        match opts.propagation() {
            Some(Propagation::Orphan) => return true,
            Some(_) => return false,
            None => {}
        }
        for f in finalizers {
            match f.as_str() {
                FINALIZER_ORPHAN => return true,
                FINALIZER_FOREGROUND => return false,
                _ => {}
            }
        }
        self.info.default_gc_policy == GcPolicy::OrphanDependents
    }

    fn should_delete_dependents(&self, finalizers: &[String], opts: &DeleteOptions) -> bool {
        if self.info.default_gc_policy == GcPolicy::Unsupported || opts.orphan_dependents.is_some()
        {
            return false;
        }
        match opts.propagation() {
            Some(Propagation::Foreground) => return true,
            Some(_) => return false,
            None => {}
        }
        for f in finalizers {
            match f.as_str() {
                FINALIZER_FOREGROUND => return true,
                FINALIZER_ORPHAN => return false,
                _ => {}
            }
        }
        false
    }

    /// The finalizers the delete's propagation policy implies (`orphan` or
    /// `foregroundDeletion`), if they differ from the object's.
    pub(super) fn gc_finalizers(&self, obj: &Object, opts: &DeleteOptions) -> Option<Vec<String>> {
        let current = object::finalizers(obj);
        let mut wanted: Vec<String> = current
            .iter()
            .filter(|f| !matches!(f.as_str(), FINALIZER_ORPHAN | FINALIZER_FOREGROUND))
            .cloned()
            .collect();
        if self.should_orphan(&current, opts) {
            wanted.push(FINALIZER_ORPHAN.into());
        }
        if self.should_delete_dependents(&current, opts) {
            wanted.push(FINALIZER_FOREGROUND.into());
        }
        let same = wanted.len() == current.len() && wanted.iter().all(|f| current.contains(f));
        (!same).then_some(wanted)
    }
}

/// Marks an object held by finalizers as being deleted (upstream's markAsDeleting).
pub(super) fn mark_as_deleting(obj: &mut Object) {
    let now = chrono::Utc::now();
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
