//! What every workload controller needs (upstream's pkg/controller/controller_utils.go and
//! controller_ref_manager.go): expectations, creating and deleting pods from a template with
//! events, claiming objects by selector with controller references, slow-start batches, and
//! the pod predicates the controllers share.

mod claim;
mod controller_ref;
mod expectations;
pub mod hash;
mod own_writes;
mod owner_references;
mod pod_control;
mod pod_view;
mod pods;

use std::future::Future;

use registry::RegistryError;
use serde_json::{json, Value};
use thiserror::Error;

pub use claim::{
    claim, claim_candidate, pod_candidate_views, pod_candidates, pod_candidates_where, Claimable,
    Claimed,
};
pub use controller_ref::{controller_reference, resolve_controller_ref};
pub use expectations::{Expectations, EXPECTATIONS_TIMEOUT};
pub use own_writes::OwnWrites;
pub use owner_references::{patch_owner_references, raw_owner_references};
pub use pod_control::{pod_from_template, PodControl};
pub use pod_view::{PodView, POD_DELETION_COST};
pub use pods::{is_pod_active, is_pod_available, is_pod_ready, pod_ready_since};

/// Why a controller's sync failed; the worker retries it with backoff.
#[derive(Debug, Error)]
pub enum SyncError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("{0}")]
    Failed(String),
}

impl SyncError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Registry(RegistryError::NotFound { .. }))
    }
}

/// The controller reference a controller puts on what it creates or adopts.
pub fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// First batch size of [`slow_start_batch`] (upstream's SlowStartInitialBatchSize).
pub const SLOW_START_INITIAL_BATCH: usize = 1;

/// Runs `count` calls of `call` in batches of 1, 2, 4, ... (upstream's slowStartBatch), all of
/// a batch at once, stopping after the first batch with a failure, so a quota or validation
/// error costs one failed call rather than thousands. Returns how many succeeded and the first
/// error.
pub async fn slow_start_batch<F, Fut, E>(count: usize, call: F) -> (usize, Option<E>)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let mut remaining = count;
    let mut successes = 0;
    let mut batch = remaining.min(SLOW_START_INITIAL_BATCH);
    while batch > 0 {
        let results = futures::future::join_all((0..batch).map(|_| call())).await;
        let mut first_error = None;
        for result in results {
            match result {
                Ok(()) => successes += 1,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if first_error.is_some() {
            return (successes, first_error);
        }
        remaining -= batch;
        batch = remaining.min(2 * batch);
    }
    (successes, None)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn slow_start_doubles_and_stops_at_the_first_failing_batch() {
        let calls = AtomicUsize::new(0);
        let (ok, err) = slow_start_batch(10, || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<(), ()>(())
        })
        .await;
        assert_eq!((ok, err), (10, None));
        assert_eq!(calls.load(Ordering::SeqCst), 10);

        // Batches 1, 2, 4: the 5th call fails, so the batch of 4 ends it.
        let calls = AtomicUsize::new(0);
        let (ok, err) = slow_start_batch(20, || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 4 {
                    Err("quota")
                } else {
                    Ok(())
                }
            }
        })
        .await;
        assert_eq!((ok, err), (6, Some("quota")));
        assert_eq!(calls.load(Ordering::SeqCst), 7);
    }
}
