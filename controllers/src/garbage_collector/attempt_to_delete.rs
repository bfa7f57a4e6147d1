//! The attemptToDelete workers: for each queued node, check it against the live state of the
//! object and its owners, and delete it, trim its references, or finish its foreground
//! deletion (upstream's attemptToDeleteItem and processDeletingDependentsItem).

use std::sync::atomic::Ordering;

use registry::object::{self, FINALIZER_FOREGROUND};
use registry::options::PropagationPolicy;
use serde_json::Value;
use tracing::{debug, trace, warn};

use super::classify::{classify, decide, Decision};
use super::errors::GcError;
use super::reference::{owner_references, raw_owner_references, ObjectReference, Uid};
use super::GarbageCollector;

/// How an attempt ended without error.
enum Outcome {
    /// Nothing more to do for now.
    Done,
    /// The node is no longer in the graph.
    NotInGraph,
    /// The object turned out absent; the graph builder will drop the node.
    VirtualDeleteEnqueued,
}

impl GarbageCollector {
    /// Handles one queued node; true when it must be retried later.
    pub(super) async fn process_attempt_to_delete(&self, uid: &Uid) -> bool {
        match self.attempt_to_delete_item(uid).await {
            // A node only imagined from a reference is checked again until a monitor sees
            // it or it is found absent (else it could linger in the graph forever).
            Ok(Outcome::Done) => !self.builder.is_observed(uid),
            Ok(Outcome::NotInGraph | Outcome::VirtualDeleteEnqueued) => false,
            Err(GcError::NamespacedOwnerOfClusterScopedObject) => false,
            Err(e) => {
                self.progress.failures.fetch_add(1, Ordering::Relaxed);
                if e.is_conflict() || matches!(e, GcError::RestMapping { .. }) {
                    debug!(uid = %uid, error = %e, "garbage collection of item will be retried");
                } else {
                    warn!(uid = %uid, error = %e, "garbage collection of item failed; will retry");
                }
                true
            }
        }
    }

    fn virtual_delete(&self, identity: &ObjectReference) -> Outcome {
        trace!(item = %identity, "item absent; dropping it from the graph");
        self.builder.enqueue_virtual_delete(identity);
        Outcome::VirtualDeleteEnqueued
    }

    async fn attempt_to_delete_item(&self, uid: &Uid) -> Result<Outcome, GcError> {
        let Some(item) = self.builder.snapshot(uid) else {
            return Ok(Outcome::NotInGraph);
        };
        trace!(item = %item.identity, is_virtual = item.is_virtual, "processing item");
        // Being deleted is a one-way trip: wait for the deletion, then see to its dependents.
        if item.being_deleted && !item.deleting_dependents {
            return Ok(Outcome::Done);
        }
        let latest = match self.get_object(&item.identity, !item.is_virtual).await {
            Err(e) if e.is_not_found() => return Ok(self.virtual_delete(&item.identity)),
            other => other?,
        };
        if object::uid(&latest) != &**uid {
            return Ok(self.virtual_delete(&item.identity));
        }
        if item.deleting_dependents {
            let revision = object::resource_version(&latest).parse().unwrap_or(0);
            self.process_deleting_dependents(&item.identity, revision)
                .await?;
            return Ok(Outcome::Done);
        }
        let references = owner_references(&latest);
        if references.is_empty() {
            return Ok(Outcome::Done);
        }
        let mut states = Vec::with_capacity(references.len());
        for reference in references {
            let state = self.owner_state(&reference, &item.identity).await?;
            states.push((reference, state));
        }
        let classified = classify(states);
        let (has_dependents, dependent_deleting) = self.builder.dependents_state(uid);
        let decision = decide(
            &classified,
            has_dependents,
            dependent_deleting,
            &object::finalizers(&latest),
        );
        trace!(item = %item.identity, ?classified, ?decision, "references classified");
        let id = &item.identity;
        match decision {
            Decision::Keep => Ok(Outcome::Done),
            Decision::RemoveReferences(owners) => {
                debug!(item = %id, ?owners, "dropping references to absent or waiting owners");
                match self
                    .remove_owner_references(id, Some(latest), &owners)
                    .await
                {
                    Err(e) if e.is_not_found() => return Ok(self.virtual_delete(id)),
                    other => other?,
                };
                self.progress
                    .references_removed
                    .fetch_add(1, Ordering::Relaxed);
                Ok(Outcome::Done)
            }
            Decision::DeleteInForeground { unblock_first } => {
                let mut latest = latest;
                if unblock_first {
                    debug!(item = %id, "an owner and a dependent both delete in the foreground; unblocking the item's references to avoid a cycle");
                    match self
                        .unblock_owner_references(id, Some(latest.clone()))
                        .await
                    {
                        Err(e) if e.is_not_found() => return Ok(self.virtual_delete(id)),
                        Ok(Some(patched)) => latest = patched,
                        other => {
                            other?;
                        }
                    }
                }
                self.delete_item(id, &latest, PropagationPolicy::Foreground)
                    .await
            }
            Decision::Delete(policy) => self.delete_item(id, &latest, policy).await,
        }
    }

    async fn delete_item(
        &self,
        id: &ObjectReference,
        latest: &Value,
        policy: PropagationPolicy,
    ) -> Result<Outcome, GcError> {
        debug!(item = %id, policy = policy.as_str(), "deleting item");
        let version = object::resource_version(latest);
        match self
            .delete_object(id, version, raw_owner_references(latest), policy)
            .await
        {
            Err(e) if e.is_not_found() => Ok(self.virtual_delete(id)),
            Err(e) => Err(e),
            Ok(()) => {
                self.progress.deleted.fetch_add(1, Ordering::Relaxed);
                Ok(Outcome::Done)
            }
        }
    }

    /// An owner deleting in the foreground: done when no blocking dependent is left (its
    /// finalizer goes, and with it the owner); else make sure those dependents are on their way.
    ///
    /// "No blocking dependent" is only believed once every monitor has seen the changes up to
    /// the owner's deletion, and again a moment later: each resource has its own watch, so a
    /// dependent created just before the owner's deletion can reach the graph after it.
    async fn process_deleting_dependents(
        &self,
        id: &ObjectReference,
        revision: i64,
    ) -> Result<(), GcError> {
        let blocking = self.builder.blocking_dependents(&id.uid);
        if blocking.is_empty() && !self.dependents_settled(&id.uid, revision) {
            return Ok(());
        }
        if blocking.is_empty() {
            debug!(item = %id, "no blocking dependents left; removing the foregroundDeletion finalizer");
            self.remove_finalizer(id, FINALIZER_FOREGROUND).await?;
            self.progress
                .finalizers_removed
                .fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        if let Ok(mut confirming) = self.confirming_no_dependents.lock() {
            confirming.remove(&id.uid);
        }
        trace!(item = %id, blocking = blocking.len(), "waiting for blocking dependents");
        for (dependent, deleting_dependents) in blocking {
            if !deleting_dependents {
                self.builder.attempt_to_delete.add(dependent);
            }
        }
        Ok(())
    }

    /// Whether the graph can be trusted to know every dependent of an owner deleted at
    /// `revision`; if not yet, the owner is queued again.
    fn dependents_settled(&self, uid: &Uid, revision: i64) -> bool {
        let queue = &self.builder.attempt_to_delete;
        if !self.monitors.observed(revision) {
            queue.add_after(uid.clone(), SETTLE_RETRY);
            return false;
        }
        let mut confirming = self
            .confirming_no_dependents
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if confirming.remove(uid) {
            return true;
        }
        confirming.insert(uid.clone());
        queue.add_after(uid.clone(), SETTLE_RETRY);
        false
    }
}

/// How soon an owner whose dependents may still be on their way into the graph is looked at
/// again.
const SETTLE_RETRY: std::time::Duration = std::time::Duration::from_millis(50);
