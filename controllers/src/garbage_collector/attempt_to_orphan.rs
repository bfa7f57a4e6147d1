//! The attemptToOrphan workers: an owner deleted with the `orphan` finalizer first has itself
//! removed from every dependent's ownerReferences, then loses the finalizer and goes.

use std::sync::atomic::Ordering;

use futures::StreamExt;
use registry::object::FINALIZER_ORPHAN;
use tracing::{debug, info, warn};

use super::errors::GcError;
use super::graph_builder::LARGE_CASCADE;
use super::reference::{ObjectReference, Uid};
use super::GarbageCollector;

/// How often progress of a large orphaning is logged, in dependents.
const PROGRESS_EVERY: usize = 1000;

impl GarbageCollector {
    /// Handles one owner deleted with the orphan finalizer; true when it must be retried.
    pub(super) async fn process_attempt_to_orphan(&self, uid: &Uid) -> bool {
        match self.attempt_to_orphan(uid).await {
            Ok(()) => false,
            Err(e) => {
                self.progress.failures.fetch_add(1, Ordering::Relaxed);
                warn!(uid = %uid, error = %e, "orphaning dependents failed; will retry");
                true
            }
        }
    }

    async fn attempt_to_orphan(&self, uid: &Uid) -> Result<(), GcError> {
        let Some((owner, dependents)) = self.builder.owner_with_dependents(uid) else {
            // The owner is gone already: someone else removed its finalizers.
            return Ok(());
        };
        self.orphan_dependents(&owner, &dependents).await?;
        self.remove_finalizer(&owner, FINALIZER_ORPHAN).await?;
        self.progress
            .finalizers_removed
            .fetch_add(1, Ordering::Relaxed);
        debug!(owner = %owner, dependents = dependents.len(), "dependents orphaned");
        Ok(())
    }

    /// Removes `owner` from the references of every dependent, several at a time.
    async fn orphan_dependents(
        &self,
        owner: &ObjectReference,
        dependents: &[ObjectReference],
    ) -> Result<(), GcError> {
        let total = dependents.len();
        let large = total >= LARGE_CASCADE;
        if large {
            info!(owner = %owner, dependents = total, "orphaning dependents");
        }
        let owner_uid = [owner.uid.clone()];
        let owner_uid = &owner_uid;
        // Owned items: borrowed ones make the stream's future not provably Send.
        let mut patches = futures::stream::iter(dependents.iter().cloned())
            .map(|dep| async move {
                let result = self.remove_owner_references(&dep, None, owner_uid).await;
                (dep, result)
            })
            .buffer_unordered(self.config.orphan_concurrency.max(1));
        let (mut done, mut failed) = (0usize, Vec::new());
        while let Some((dep, result)) = patches.next().await {
            done += 1;
            match result {
                Ok(Some(_)) => {
                    self.progress.orphaned.fetch_add(1, Ordering::Relaxed);
                }
                // Gone already, or no longer referring to the owner: nothing to orphan.
                Ok(None) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => failed.push(format!("{dep}: {e}")),
            }
            if large && done % PROGRESS_EVERY == 0 {
                info!(owner = %owner, done, total, "orphaning dependents: progress");
            }
        }
        if failed.is_empty() {
            return Ok(());
        }
        Err(GcError::Failed(format!(
            "failed to orphan {} of {total} dependents of {owner}, first: {}",
            failed.len(),
            failed[0]
        )))
    }
}
