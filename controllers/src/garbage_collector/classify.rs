//! Sorting a dependent's ownerReferences by what became of each owner (upstream's
//! classifyReferences), and what that means for the dependent.

use registry::object;
use registry::options::{ListOptions, PropagationPolicy};
use registry::RegistryError;
use tracing::{trace, warn};

use super::errors::GcError;
use super::graph_builder::waits_for_dependents;
use super::reference::{ObjectReference, OwnerReference, Uid};
use super::GarbageCollector;

/// What a live lookup found of an owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerState {
    /// Not found, or found under another uid.
    Absent,
    /// Exists; `waiting` when it is being deleted in the foreground (waiting for dependents).
    Present { waiting: bool },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Classified {
    /// Owners that exist and are not waiting for their dependents.
    pub solid: Vec<OwnerReference>,
    /// Owners that do not exist.
    pub dangling: Vec<OwnerReference>,
    /// Owners being deleted in the foreground.
    pub waiting: Vec<OwnerReference>,
}

pub fn classify(references: impl IntoIterator<Item = (OwnerReference, OwnerState)>) -> Classified {
    let mut out = Classified::default();
    for (reference, state) in references {
        match state {
            OwnerState::Absent => out.dangling.push(reference),
            OwnerState::Present { waiting: true } => out.waiting.push(reference),
            OwnerState::Present { waiting: false } => out.solid.push(reference),
        }
    }
    out
}

/// What to do with a dependent whose references were classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// It still has a live owner and no reference to drop.
    Keep,
    /// It still has a live owner: drop the references to absent and waiting owners, so the
    /// waiting ones are not held up by it.
    RemoveReferences(Vec<Uid>),
    /// An owner waits for it and it has dependents of its own: delete it in the foreground
    /// too. `unblock_first` when one of its dependents is also deleting in the foreground,
    /// a possible cycle broken by making its own references non-blocking.
    DeleteInForeground { unblock_first: bool },
    /// No live owner: delete it, honouring the policy its finalizers already ask for.
    Delete(PropagationPolicy),
}

/// `has_dependents` / `dependent_deleting_dependents`: what the graph knows of the item's own
/// dependents; `finalizers`: the item's, as just read.
pub fn decide(
    classified: &Classified,
    has_dependents: bool,
    dependent_deleting_dependents: bool,
    finalizers: &[String],
) -> Decision {
    if !classified.solid.is_empty() {
        let stale: Vec<Uid> = classified
            .dangling
            .iter()
            .chain(&classified.waiting)
            .map(|r| r.uid.clone())
            .collect();
        return if stale.is_empty() {
            Decision::Keep
        } else {
            Decision::RemoveReferences(stale)
        };
    }
    if !classified.waiting.is_empty() && has_dependents {
        return Decision::DeleteInForeground {
            unblock_first: dependent_deleting_dependents,
        };
    }
    let has = |f: &str| finalizers.iter().any(|x| x == f);
    Decision::Delete(if has(object::FINALIZER_ORPHAN) {
        PropagationPolicy::Orphan
    } else if has(object::FINALIZER_FOREGROUND) {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    })
}

impl GarbageCollector {
    /// Looks up an owner of `item` (upstream's isDangling): the absent-owner cache first, then
    /// a live read. The owner lives in the item's namespace unless its kind is cluster-scoped.
    pub(super) async fn owner_state(
        &self,
        reference: &OwnerReference,
        item: &ObjectReference,
    ) -> Result<OwnerState, GcError> {
        let absent = &self.builder.absent_owners;
        let mut key = ObjectReference::of_owner(reference, "");
        if absent.has(&key) {
            trace!(item = %item, owner = %key, "owner known absent (cluster-scoped)");
            return Ok(OwnerState::Absent);
        }
        key.namespace = item.namespace.clone();
        if absent.has(&key) {
            trace!(item = %item, owner = %key, "owner known absent");
            return Ok(OwnerState::Absent);
        }
        let store = self
            .resolver
            .resolve(&reference.api_version, &reference.kind)?;
        if !store.info.namespaced {
            key.namespace = Default::default();
        }
        if item.namespace.is_empty() && store.info.namespaced {
            warn!(item = %item, owner = %key, "cluster-scoped object refers to a namespaced owner; the reference is invalid and ignored");
            return Err(GcError::NamespacedOwnerOfClusterScopedObject);
        }
        let namespace = store.info.namespaced.then_some(item.namespace.as_str());
        match store
            .get(namespace, &reference.name, &ListOptions::default())
            .await
        {
            Err(RegistryError::NotFound { .. }) => {
                absent.add(key);
                Ok(OwnerState::Absent)
            }
            Err(e) => Err(e.into()),
            Ok(owner) if object::uid(&owner) != &*reference.uid => {
                // The name now belongs to another object: the owner referred to is gone.
                absent.add(key);
                Ok(OwnerState::Absent)
            }
            Ok(owner) => Ok(OwnerState::Present {
                waiting: waits_for_dependents(&owner),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: format!("rs-{uid}").into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn present(waiting: bool) -> OwnerState {
        OwnerState::Present { waiting }
    }

    #[test]
    fn references_fall_into_three_classes() {
        let c = classify([
            (owner("a"), present(false)),
            (owner("b"), OwnerState::Absent),
            (owner("c"), present(true)),
            (owner("d"), present(false)),
        ]);
        assert_eq!(c.solid, vec![owner("a"), owner("d")]);
        assert_eq!(c.dangling, vec![owner("b")]);
        assert_eq!(c.waiting, vec![owner("c")]);
    }

    #[test]
    fn a_solid_owner_keeps_the_dependent_and_drops_stale_references() {
        let keep = classify([(owner("a"), present(false))]);
        assert_eq!(decide(&keep, true, false, &[]), Decision::Keep);
        let stale = classify([
            (owner("a"), present(false)),
            (owner("b"), OwnerState::Absent),
            (owner("c"), present(true)),
        ]);
        assert_eq!(
            decide(&stale, true, true, &[]),
            Decision::RemoveReferences(vec!["b".into(), "c".into()])
        );
    }

    #[test]
    fn a_waiting_owner_deletes_dependents_with_dependents_in_the_foreground() {
        let waiting = classify([
            (owner("a"), present(true)),
            (owner("b"), OwnerState::Absent),
        ]);
        assert_eq!(
            decide(&waiting, true, false, &[]),
            Decision::DeleteInForeground {
                unblock_first: false
            }
        );
        assert_eq!(
            decide(&waiting, true, true, &[]),
            Decision::DeleteInForeground {
                unblock_first: true
            }
        );
        // Without dependents of its own there is nothing to wait for.
        assert_eq!(
            decide(&waiting, false, false, &[]),
            Decision::Delete(PropagationPolicy::Background)
        );
    }

    #[test]
    fn without_owners_the_policy_follows_the_finalizers() {
        let dangling = classify([(owner("a"), OwnerState::Absent)]);
        let f = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            decide(&dangling, true, false, &f(&["orphan"])),
            Decision::Delete(PropagationPolicy::Orphan)
        );
        assert_eq!(
            decide(
                &dangling,
                true,
                false,
                &f(&["example.com/x", "foregroundDeletion"])
            ),
            Decision::Delete(PropagationPolicy::Foreground)
        );
        assert_eq!(
            decide(&dangling, true, false, &f(&["example.com/x"])),
            Decision::Delete(PropagationPolicy::Background)
        );
    }
}
