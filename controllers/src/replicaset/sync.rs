//! One sync of one set (upstream's syncReplicaSet and manageReplicas): claim the pods, create
//! or delete the difference to spec.replicas unless earlier creates and deletes are still on
//! their way to the informer, and write the status the pods give.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::future::join_all;
use registry::options::{ListOptions, WriteOptions};
use registry::{object, RegistryError, Subresource};
use serde_json::Value;
use tracing::{debug, warn};

use super::controller::ReplicaSetController;
use super::ranking::pods_to_delete;
use super::status::{self, Outcome};
use client::controller_utils::{
    claim, controller_ref, pod_candidate_views, pod_from_template, slow_start_batch, Claimable,
    PodView, SyncError,
};
use client::informer::CONTROLLER_UID_INDEX;

/// A failure to create or delete pods, with the reason the ReplicaFailure condition gives.
struct ManageError {
    reason: &'static str,
    error: SyncError,
}

impl ReplicaSetController {
    /// Syncs the set `key`; Ok(Some(d)) asks to look again after `d`.
    pub(super) async fn sync(&self, key: &str) -> Result<Option<Duration>, SyncError> {
        let Some(set) = self.sets.indexer().get(key) else {
            debug!(key, "set has been deleted");
            self.expectations.forget(key);
            return Ok(None);
        };
        // Read before the pods: a pod seen after this may be one the expectations await.
        let needs_sync = self.expectations.satisfied(key);
        let selector = match self.kind().selector(&set) {
            Ok(selector) => selector,
            Err(e) => {
                // Validation should have refused it; retrying cannot help.
                warn!(key, error = %e, "invalid selector");
                return Ok(None);
            }
        };
        let namespace = object::namespace(&set);
        // Counted, ranked and adopted by a few fields: each of what may be thousands of pods
        // is decoded once per revision, not once per sync.
        let active: Vec<Arc<PodView>> =
            pod_candidate_views::<PodView>(self.pods.indexer(), &set, &selector)
                .map_err(|e| SyncError::Failed(e.to_string()))?
                .into_iter()
                .filter(|p| p.is_active())
                .collect();
        let name = object::name(&set);
        let claimable = Claimable {
            owner: &set,
            store: &self.pod_store,
            selector: &selector,
            fresh_owner: Box::new(|| {
                Box::pin(async move {
                    Ok(self
                        .set_store
                        .get(Some(namespace), name, &ListOptions::default())
                        .await?)
                })
            }),
        };
        let pods = claim(&claimable, active).await?;
        let managed = if needs_sync && object::deletion_timestamp(&set).is_none() {
            Some(self.manage_replicas(key, &set, &pods).await)
        } else {
            None
        };
        let now = Utc::now();
        let outcome = match &managed {
            None => Outcome::Unchanged,
            Some(Ok(())) => Outcome::Healthy,
            Some(Err(e)) => Outcome::Failed {
                reason: e.reason,
                message: e.error.to_string(),
            },
        };
        let counts = status::counts(&set, &pods, now);
        let next = status::next_status(&set, counts, outcome, now);
        self.write_status(&set, next).await?;
        if let Some(Err(e)) = managed {
            return Err(e.error);
        }
        // Ready pods become available with no event to say so: look again then.
        if counts.available < counts.ready {
            return Ok(status::next_available_in(&set, &pods, now));
        }
        Ok(None)
    }

    async fn manage_replicas(
        &self,
        key: &str,
        set: &Value,
        pods: &[Arc<PodView>],
    ) -> Result<(), ManageError> {
        let desired = set["spec"]["replicas"].as_i64().unwrap_or(1).max(0);
        let diff = pods.len() as i64 - desired;
        let burst = self.config.burst_replicas.max(1);
        if diff < 0 {
            let count = (diff.unsigned_abs() as usize).min(burst);
            self.expectations.expect_creations(key, count);
            debug!(key, count, "creating pods");
            let template = &set["spec"]["template"];
            let reference = controller_ref(set);
            let name = object::name(set);
            let (created, error) = slow_start_batch(count, || async {
                let pod = pod_from_template(template, name, reference.clone());
                match self.pod_control.create(set, pod).await {
                    Ok(_) => Ok(()),
                    // The namespace is going: nothing to retry, its pods are being removed.
                    Err(SyncError::Registry(RegistryError::Forbidden { message, .. }))
                        if message.contains("being terminated") =>
                    {
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            })
            .await;
            // Those not created will never be seen: stop waiting for them.
            self.expectations.lower_creations(key, count - created);
            return match error {
                Some(error) => Err(ManageError {
                    reason: "FailedCreate",
                    error,
                }),
                None => Ok(()),
            };
        }
        if diff == 0 {
            return Ok(());
        }
        let count = (diff as usize).min(burst);
        let related = self.related_pods(set, pods);
        let doomed = pods_to_delete(pods, &related, count);
        let keys: Vec<String> = doomed.iter().map(|p| p.key().to_string()).collect();
        self.expectations.expect_deletions(key, keys);
        debug!(key, count, "deleting pods");
        let results = join_all(doomed.iter().map(|pod| async move {
            let pod_key = pod.key();
            let result = self.pod_control.delete(set, pod.name()).await;
            // A failed deletion will not be seen; one the informer already saw go before the
            // expectation was set will not be seen again either.
            let seen_gone = self
                .pods
                .indexer()
                .get(pod_key)
                .is_none_or(|p| object::uid(&p) != pod.uid());
            if result.is_err() || seen_gone {
                self.expectations.deletion_observed(key, pod_key);
            }
            result
        }))
        .await;
        match results.into_iter().find_map(Result::err) {
            Some(error) => Err(ManageError {
                reason: "FailedDelete",
                error,
            }),
            None => Ok(()),
        }
    }

    /// The pods of every set controlled by the same owner as `set` (a Deployment's sets), whose
    /// placement counts when choosing which to delete; just its own pods when it has no owner.
    fn related_pods(&self, set: &Value, own: &[Arc<PodView>]) -> Vec<Arc<PodView>> {
        let Some(owner_uid) = client::informer::controller_uid(set) else {
            return own.to_vec();
        };
        let siblings = self
            .sets
            .indexer()
            .by_index(CONTROLLER_UID_INDEX, owner_uid)
            .unwrap_or_default();
        let mut related: Vec<Arc<PodView>> = siblings
            .iter()
            .flat_map(|s| {
                self.pods
                    .indexer()
                    .by_index_view::<PodView>(CONTROLLER_UID_INDEX, object::uid(s), |_| true)
                    .unwrap_or_default()
            })
            .filter(|p| p.is_active())
            .collect();
        if related.is_empty() {
            related = own.to_vec();
        }
        related
    }

    /// Writes `status` through the status subresource if it differs from what is stored;
    /// a conflict is retried once on a fresh read, as upstream's statusUpdateRetries.
    async fn write_status(&self, set: &Value, status: Value) -> Result<(), SyncError> {
        if set["status"] == status {
            return Ok(());
        }
        let namespace = Some(object::namespace(set)).filter(|n| !n.is_empty());
        let name = object::name(set);
        let mut next = set.clone();
        for attempt in 0..2 {
            next["status"] = status.clone();
            let result = self
                .set_store
                .update(
                    namespace,
                    name,
                    next.clone(),
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await;
            match result {
                Ok(_) => return Ok(()),
                Err(RegistryError::Conflict { .. }) if attempt == 0 => {
                    next = self
                        .set_store
                        .get(namespace, name, &ListOptions::default())
                        .await?;
                    if object::uid(&next) != object::uid(set) {
                        return Ok(());
                    }
                }
                Err(RegistryError::NotFound { .. }) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
