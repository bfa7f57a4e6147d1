//! One sync of a DaemonSet (upstream's syncDaemonSet and manage): claim its pods, make sure
//! every node that should run it has exactly one daemon pod and no other node has any,
//! replace failed pods after a back-off, take one rolling-update step, prune old revisions,
//! and write the status.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use registry::options::{ListOptions, WriteOptions};
use registry::selector::labels::LabelSelector;
use registry::types::{PodPhase, UpdateStrategyType};
use registry::{object, Subresource};
use serde_json::Value;
use tracing::debug;

use super::controller::{key, selector, DaemonSetController};
use super::placement::{node_should_run, pin_to_node, pod_template, CONTROLLER_REVISION_HASH};
use super::status::{by_creation_and_phase, counts, min_ready_seconds, next_status, NodePods};
use super::update::rolling_update_step;
use client::controller_utils::{
    claim, controller_ref, is_pod_available, is_pod_ready, pod_candidates, pod_from_template,
    slow_start_batch, Claimable, SyncError,
};
use client::events::EventType;

pub(super) type SyncResult = Result<Option<Duration>, SyncError>;

/// The earlier of two optional waits.
fn sooner(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What one node needs: a new pod, and pods to delete.
#[derive(Default)]
struct NodePlan {
    create: bool,
    delete: Vec<String>,
    requeue: Option<Duration>,
}

impl DaemonSetController {
    pub(super) async fn sync_daemon_set(&self, key: &str) -> SyncResult {
        let Some(cached) = self.ds_informer.indexer().get(key) else {
            debug!(daemonset = key, "daemon set has been deleted");
            self.expectations.forget(key);
            return Ok(None);
        };
        let mut ds = (*cached).clone();
        let Some(sel) = selector(&ds).filter(|s| !s.is_empty()) else {
            self.recorder.event(
                &ds,
                EventType::Warning,
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
            );
            return Ok(None);
        };
        // A deleting DaemonSet is left to the garbage collector.
        if object::deletion_timestamp(&ds).is_some() {
            return Ok(None);
        }
        let nodes = self.node_informer.indexer().list();
        let (hash, old_revisions) = self.construct_history(&mut ds).await?;
        let node_pods = self.node_pods(&ds, &sel).await?;
        if !self.expectations.satisfied(key) {
            return self.update_status(&mut ds, &nodes, &node_pods, &hash).await;
        }
        let (changed, mut requeue) = self.manage(&ds, &nodes, &node_pods, &hash).await?;
        if !changed
            && self.expectations.satisfied(key)
            && UpdateStrategyType::from_value(&ds["spec"]["updateStrategy"]["type"])
                == Some(UpdateStrategyType::RollingUpdate)
        {
            let step = rolling_update_step(&ds, &nodes, &node_pods, &hash, Utc::now())
                .map_err(SyncError::Failed)?;
            self.sync_nodes(&ds, step.delete, step.create, &hash)
                .await?;
        }
        self.cleanup_history(&ds, &node_pods, old_revisions).await?;
        requeue = sooner(
            requeue,
            self.update_status(&mut ds, &nodes, &node_pods, &hash)
                .await?,
        );
        Ok(requeue)
    }

    /// The DaemonSet's pods after claiming, by the node each is for (upstream's
    /// getNodesToDaemonPods); finished pods already being deleted are left out.
    async fn node_pods(&self, ds: &Value, sel: &LabelSelector) -> Result<NodePods, SyncError> {
        let candidates = pod_candidates(self.pod_informer.indexer(), ds, sel)
            .map_err(|e| SyncError::Failed(e.to_string()))?;
        let (namespace, name) = (
            object::namespace(ds).to_string(),
            object::name(ds).to_string(),
        );
        let daemon_sets = self.ds_store.clone();
        let claimable = Claimable {
            owner: ds,
            store: &self.pod_store,
            selector: sel,
            fresh_owner: Box::new(move || {
                let (daemon_sets, namespace, name) =
                    (daemon_sets.clone(), namespace.clone(), name.clone());
                Box::pin(async move {
                    Ok(daemon_sets
                        .get(Some(&namespace), &name, &ListOptions::default())
                        .await?)
                })
            }),
        };
        let mut map = NodePods::new();
        for pod in claim(&claimable, candidates).await? {
            if PodPhase::terminal(&pod) && object::deletion_timestamp(&pod).is_some() {
                continue;
            }
            match super::placement::target_node_name(&pod) {
                Some(node) => map.entry(node).or_default().push(pod),
                None => debug!(pod = object::name(&pod), "daemon pod names no node"),
            }
        }
        Ok(map)
    }

    /// Creates the missing daemon pods and deletes the misplaced, surplus and failed ones
    /// (upstream's manage). Returns whether anything was asked of the API and when to look
    /// again for failed pods in back-off.
    async fn manage(
        &self,
        ds: &Value,
        nodes: &[Arc<Value>],
        node_pods: &NodePods,
        hash: &str,
    ) -> Result<(bool, Option<Duration>), SyncError> {
        let mut create = Vec::new();
        let mut delete = Vec::new();
        let mut requeue = None;
        for node in nodes {
            let plan = self.plan_node(node, node_pods, ds, hash);
            if plan.create {
                create.push(object::name(node).to_string());
            }
            delete.extend(plan.delete);
            requeue = sooner(requeue, plan.requeue);
        }
        // Pods for nodes that are gone, never bound to one.
        for (node, pods) in node_pods {
            if nodes.iter().any(|n| object::name(n) == node) {
                continue;
            }
            delete.extend(
                pods.iter()
                    .filter(|p| p["spec"]["nodeName"].as_str().is_none_or(str::is_empty))
                    .filter(|p| object::deletion_timestamp(p).is_none())
                    .map(|p| object::name(p).to_string()),
            );
        }
        let changed = !create.is_empty() || !delete.is_empty();
        self.sync_nodes(ds, delete, create, hash).await?;
        Ok((changed, requeue))
    }

    /// What `node` needs (upstream's podsShouldBeOnNode).
    fn plan_node(&self, node: &Value, node_pods: &NodePods, ds: &Value, hash: &str) -> NodePlan {
        let (should_run, may_continue) = node_should_run(node, ds);
        let node_name = object::name(node);
        let pods = node_pods
            .get(node_name)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut plan = NodePlan::default();
        if should_run && pods.is_empty() {
            plan.create = true;
            return plan;
        }
        if !may_continue {
            plan.delete = pods
                .iter()
                .filter(|p| object::deletion_timestamp(p).is_none())
                .map(|p| object::name(p).to_string())
                .collect();
            return plan;
        }
        let mut running = Vec::new();
        for pod in pods {
            if object::deletion_timestamp(pod).is_some() {
                continue;
            }
            if PodPhase::of(pod) != Some(PodPhase::Failed) {
                running.push(pod.clone());
                continue;
            }
            // Kubelets that reject a pod would otherwise meet a new one at once, forever.
            let backoff_key = format!("{}/{node_name}", object::uid(ds));
            let now = Instant::now();
            if let Some(left) = self.failed_backoff.remaining(&backoff_key, now) {
                plan.requeue = sooner(plan.requeue, Some(left));
                continue;
            }
            self.failed_backoff.next(&backoff_key, now);
            let message = format!(
                "Found failed daemon pod {}/{} on node {node_name}, will try to kill it",
                object::namespace(pod),
                object::name(pod)
            );
            self.recorder
                .event(ds, EventType::Warning, "FailedDaemonPod", message);
            plan.delete.push(object::name(pod).to_string());
        }
        running.sort_by(|a, b| by_creation_and_phase(a, b));
        let (max_surge, _) = super::update::surge_and_unavailable(ds, 1).unwrap_or((0, 1));
        if max_surge == 0 {
            // One pod per node: the oldest stays.
            plan.delete
                .extend(running.iter().skip(1).map(|p| object::name(p).to_string()));
            return plan;
        }
        // While surging, an old pod may stay beside the oldest new one until that is
        // available (or the old one is not even ready); every other pod goes.
        let (mut newest, mut oldest) = (None, None);
        for pod in &running {
            let is_new = pod["metadata"]["labels"][CONTROLLER_REVISION_HASH].as_str() == Some(hash);
            let slot = if is_new { &mut newest } else { &mut oldest };
            if slot.is_none() {
                *slot = Some(pod.clone());
            } else {
                plan.delete.push(object::name(pod).to_string());
            }
        }
        if let (Some(new), Some(old)) = (newest, oldest) {
            if !is_pod_ready(&old) || is_pod_available(&new, min_ready_seconds(ds), Utc::now()) {
                plan.delete.push(object::name(&old).to_string());
            }
        }
        plan
    }

    /// Deletes `delete` and creates a pod on each of `create`, within the burst limit, with
    /// expectations set first (upstream's syncNodes).
    pub(super) async fn sync_nodes(
        &self,
        ds: &Value,
        mut delete: Vec<String>,
        mut create: Vec<String>,
        hash: &str,
    ) -> Result<(), SyncError> {
        if delete.is_empty() && create.is_empty() {
            return Ok(());
        }
        let ds_key = key(ds);
        let burst = self.config.burst_replicas;
        create.truncate(burst);
        delete.truncate(burst);
        let namespace = object::namespace(ds);
        self.expectations.expect(
            &ds_key,
            create.len(),
            delete.iter().map(|p| format!("{namespace}/{p}")),
        );
        let template = pod_template(ds, hash);
        let next = AtomicUsize::new(0);
        let (created, create_error) = slow_start_batch(create.len(), || {
            let node = create[next.fetch_add(1, Ordering::SeqCst)].clone();
            let mut pod = pod_from_template(&template, object::name(ds), controller_ref(ds));
            pin_to_node(&mut pod["spec"], &node);
            async move { self.pod_control.create(ds, pod).await.map(|_| ()) }
        })
        .await;
        // Creations that failed or were never tried will not be seen.
        self.expectations
            .lower_creations(&ds_key, create.len() - created);
        let ds_key = &ds_key;
        let deletions = delete.iter().map(|name| async move {
            let result = self.pod_control.delete(ds, name).await;
            if result.is_err() {
                self.expectations
                    .deletion_observed(ds_key, &format!("{namespace}/{name}"));
            }
            result
        });
        let delete_error = futures::future::join_all(deletions)
            .await
            .into_iter()
            .find_map(Result::err);
        match create_error.or(delete_error) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Writes the status when it changed; asks to look again once ready pods become
    /// available (minReadySeconds).
    async fn update_status(
        &self,
        ds: &mut Value,
        nodes: &[Arc<Value>],
        node_pods: &NodePods,
        hash: &str,
    ) -> SyncResult {
        let c = counts(ds, nodes, node_pods, hash, Utc::now());
        let status = next_status(ds, c);
        if status != ds["status"] {
            let mut next = ds.clone();
            next["status"] = status;
            let (updated, _) = self
                .ds_store
                .update(
                    Some(object::namespace(ds)),
                    object::name(ds),
                    next,
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await?;
            *ds = updated;
        }
        let min_ready = min_ready_seconds(ds);
        Ok((min_ready > 0 && c.ready != c.available)
            .then(|| Duration::from_secs(min_ready.unsigned_abs())))
    }
}
