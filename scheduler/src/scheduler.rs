//! The scheduling loop (upstream's Scheduler.scheduleOne): take a pending pod from the queue,
//! filter the cached nodes, score the feasible ones, assume the pod on the best and bind it
//! through pods/binding. A pod nothing fits is marked PodScheduled=False with upstream's
//! message and a FailedScheduling event, and waits in the unschedulable set until a node or
//! pod change moves it back (after its backoff), or a periodic flush. Before that, a pod of
//! higher priority may evict pods of lower priority to make room (`preemption.rs`): it is
//! nominated to the node (`status.nominatedNodeName`) and placed once they are gone.

use registry::types::PodPhase;
use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use client::events::{EventRecorder, EventType};
use client::informer::{dispatch, dispatch_synced, InformerFactory, Notification, SharedInformer};
use client::worker::{run_when_synced, Next};
use client::workqueue::RateLimitingQueue;
use registry::options::{DeleteOptions, PreconditionsSpec, WriteOptions};
use registry::patch::PatchType;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::cache::Cache;
use crate::dra::{self, ClaimAllocation, DeviceId};
use crate::error::SchedulerError;
use crate::fit_error;
use crate::preemption::Candidate;
use crate::volume_binding;

mod decide;

pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
const RESOURCE: &str = "resource.k8s.io";

#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// Pods scheduled (and bound) at once; decisions are serialised on the cache. The
    /// configuration file's `parallelism` (upstream's bound on the goroutines of one
    /// decision, whose default it shares: here the parallel work is across pods).
    pub workers: usize,
    /// Upstream's podInitialBackoffSeconds and podMaxBackoffSeconds.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// Upstream's podMaxInUnschedulablePodsDuration: an unschedulable pod is tried again at
    /// least this often.
    pub unschedulable_flush: Duration,
    /// Upstream's percentageOfNodesToScore: the share of nodes a decision finds feasible
    /// before it stops filtering; 0 is upstream's adaptive default (see `sampling`).
    pub percentage_of_nodes_to_score: u32,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            workers: 16,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            unschedulable_flush: Duration::from_secs(300),
            percentage_of_nodes_to_score: 0,
        }
    }
}

pub struct Scheduler {
    config: SchedulerConfig,
    pod_store: Arc<Store>,
    pod_informer: SharedInformer,
    node_informer: SharedInformer,
    claim_informer: SharedInformer,
    class_informer: SharedInformer,
    /// Dynamic resource allocation: claims, device classes, published devices.
    resource_claims: SharedInformer,
    device_classes: SharedInformer,
    resource_slices: SharedInformer,
    resource_claim_store: Arc<Store>,
    /// Devices of allocations decided and not yet seen written, by claim key.
    assumed_devices: Mutex<HashMap<String, Vec<DeviceId>>>,
    recorder: EventRecorder,
    cache: Mutex<Cache>,
    queue: RateLimitingQueue<String>,
    /// Unschedulable pods: key → (attempts, when the last one failed).
    unschedulable: Mutex<HashMap<String, (u32, Instant)>>,
    /// Move requests so far (upstream's moveRequestCycle): a pod found unschedulable in a
    /// cycle during which something moved the waiting pods was not among them, and what
    /// moved them may be what it waits for (its claim made just after it was looked up).
    move_requests: std::sync::atomic::AtomicU64,
    /// Where the next decision starts filtering (upstream's nextStartNodeIndex).
    next_start_node: AtomicUsize,
}

enum Decision {
    /// The node, and what the pod's claims get there.
    Assumed(String, Vec<ClaimAllocation>),
    /// No node fits, and preemption could not make room (the message says why).
    Unschedulable(String, Nomination),
    /// No node fits until the candidate's victims are gone.
    Preempt(Candidate, String),
}

/// What an unschedulable pod's `status.nominatedNodeName` becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Nomination {
    Keep,
    Set(String),
    /// A preemption that found no room drops an earlier nomination (upstream's
    /// NominatedNodeName "").
    Clear,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn key_of(obj: &Value) -> String {
    format!("{}/{}", object::namespace(obj), object::name(obj))
}

/// The node a preemption nominated the pod to (`status.nominatedNodeName`), if any.
fn nominated_node(pod: &Value) -> Option<&str> {
    pod["status"]["nominatedNodeName"]
        .as_str()
        .filter(|n| !n.is_empty())
}

fn node_name(pod: &Value) -> &str {
    pod["spec"]["nodeName"].as_str().unwrap_or_default()
}

/// Whether this scheduler places the pod (upstream's responsibleForPod).
fn responsible(pod: &Value) -> bool {
    matches!(
        pod["spec"]["schedulerName"].as_str(),
        None | Some("") | Some(DEFAULT_SCHEDULER_NAME)
    )
}

impl Scheduler {
    pub fn new(
        informers: &InformerFactory,
        config: SchedulerConfig,
    ) -> Result<Arc<Self>, SchedulerError> {
        let pod_store = informers
            .registry()
            .store("", "v1", "pods")
            .ok_or_else(|| SchedulerError::NotServed("v1/pods".into()))?;
        Ok(Arc::new(Self {
            pod_informer: informers.informer_for(&pod_store),
            node_informer: informers.informer("", "v1", "nodes")?,
            claim_informer: informers.informer("", "v1", "persistentvolumeclaims")?,
            class_informer: informers.informer("storage.k8s.io", "v1", "storageclasses")?,
            resource_claims: informers.informer(RESOURCE, "v1", "resourceclaims")?,
            device_classes: informers.informer(RESOURCE, "v1", "deviceclasses")?,
            resource_slices: informers.informer(RESOURCE, "v1", "resourceslices")?,
            resource_claim_store: informers
                .registry()
                .store(RESOURCE, "v1", "resourceclaims")
                .ok_or_else(|| {
                    SchedulerError::NotServed("resource.k8s.io/v1/resourceclaims".into())
                })?,
            assumed_devices: Mutex::new(HashMap::new()),
            recorder: EventRecorder::new(informers.registry().clone(), DEFAULT_SCHEDULER_NAME),
            cache: Mutex::new(Cache::default()),
            queue: RateLimitingQueue::with_default_rate_limiter(""),
            unschedulable: Mutex::new(HashMap::new()),
            move_requests: std::sync::atomic::AtomicU64::new(0),
            next_start_node: AtomicUsize::new(0),
            pod_store,
            config,
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        info!(
            workers = self.config.workers,
            percentage_of_nodes_to_score = self.config.percentage_of_nodes_to_score,
            "starting scheduler"
        );
        let this = self.clone();
        let (pods, mut pods_synced) = dispatch_synced(
            &self.pod_informer,
            self.pod_informer.subscribe(),
            stop.clone(),
            move |n| this.on_pod(n),
        );
        let this = self.clone();
        let (nodes, mut nodes_synced) = dispatch_synced(
            &self.node_informer,
            self.node_informer.subscribe(),
            stop.clone(),
            move |n| this.on_node(n),
        );
        let this = self.clone();
        let claims = dispatch(self.claim_informer.subscribe(), stop.clone(), move |n| {
            // A claim bound (or made) may let pods waiting for it in.
            if let Some(claim) = n.latest() {
                if !matches!(n, Notification::Delete(_)) && claim["spec"]["volumeName"].is_string()
                {
                    this.move_unschedulable();
                }
            }
        });
        let this = self.clone();
        let resource_claims = dispatch(self.resource_claims.subscribe(), stop.clone(), move |n| {
            // An allocation seen written is no longer only assumed; a claim made or freed,
            // like devices published, may let waiting pods in.
            if let Some(claim) = n.latest() {
                if !claim["status"]["allocation"].is_null() || matches!(n, Notification::Delete(_))
                {
                    lock(&this.assumed_devices).remove(&key_of(claim));
                }
            }
            this.move_unschedulable();
        });
        let this = self.clone();
        let slices = dispatch(self.resource_slices.subscribe(), stop.clone(), move |n| {
            if !matches!(n, Notification::Delete(_)) {
                this.move_unschedulable();
            }
        });
        // No decision before the cache holds the nodes and the pods bound to them, as upstream
        // waits for its handlers: a pod decided on a half-filled cache is called unschedulable,
        // or placed on a node whose pods were not counted yet.
        let handlers_synced = async { pods_synced.wait().await && nodes_synced.wait().await };
        let handlers_synced = tokio::select! {
            synced = handlers_synced => synced,
            () = stop.cancelled() => false,
        };
        let this = self.clone();
        if !handlers_synced {
            self.queue.shut_down();
        } else {
            run_when_synced(
                "scheduler",
                &[
                    &self.pod_informer,
                    &self.node_informer,
                    &self.claim_informer,
                    &self.class_informer,
                    &self.resource_claims,
                    &self.device_classes,
                    &self.resource_slices,
                ],
                self.queue.clone(),
                self.config.workers,
                stop.clone(),
                move |key| {
                    let this = this.clone();
                    async move { this.schedule_one(key).await }
                },
            )
            .await;
        }
        stop.cancel();
        let _ = pods.await;
        let _ = nodes.await;
        let _ = claims.await;
        let _ = resource_claims.await;
        let _ = slices.await;
        info!("scheduler stopped");
    }

    fn on_pod(&self, n: Notification) {
        match n {
            Notification::Add(pod) | Notification::Update { new: pod, .. } => {
                if !node_name(&pod).is_empty() {
                    let finished = PodPhase::terminal(&pod);
                    lock(&self.cache).add_pod(pod, false);
                    if finished {
                        self.move_unschedulable();
                    }
                } else if responsible(&pod) && object::deletion_timestamp(&pod).is_none() {
                    let key = key_of(&pod);
                    // A pod waiting for a cluster change stays there until one comes.
                    if !lock(&self.unschedulable).contains_key(&key) {
                        self.queue.add(key);
                    }
                }
            }
            Notification::Delete(gone) => {
                let Ok(key) = gone.key() else {
                    return;
                };
                lock(&self.unschedulable).remove(&key);
                let was_placed = {
                    let mut cache = lock(&self.cache);
                    let placed = cache.is_placed(&key);
                    cache.remove_pod(&key);
                    placed
                };
                if was_placed {
                    self.move_unschedulable();
                }
            }
        }
    }

    fn on_node(&self, n: Notification) {
        match n {
            Notification::Add(node) => {
                lock(&self.cache).set_node(node);
                self.move_unschedulable();
            }
            Notification::Update { old, new } => {
                // Heartbeats change only conditions and times: not worth a retry of every pod.
                let relevant = old["spec"] != new["spec"]
                    || object::labels(&old) != object::labels(&new)
                    || old["status"]["allocatable"] != new["status"]["allocatable"];
                lock(&self.cache).set_node(new);
                if relevant {
                    self.move_unschedulable();
                }
            }
            Notification::Delete(gone) => {
                if let Ok(name) = gone.key() {
                    lock(&self.cache).remove_node(&name);
                }
            }
        }
    }

    /// A cluster change: every unschedulable pod goes back to the queue once its backoff ends.
    fn move_unschedulable(&self) {
        self.move_requests
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let now = Instant::now();
        for (key, (attempts, failed)) in lock(&self.unschedulable).iter() {
            let wait = self.backoff(*attempts).saturating_sub(now - *failed);
            self.queue.add_after(key.clone(), wait);
        }
    }

    fn backoff(&self, attempts: u32) -> Duration {
        let factor = 1u32 << attempts.saturating_sub(1).min(16);
        (self.config.initial_backoff * factor).min(self.config.max_backoff)
    }

    async fn schedule_one(&self, key: String) -> Next {
        let cycle = self.move_requests.load(std::sync::atomic::Ordering::SeqCst);
        let Some(pod) = self.pod_informer.indexer().get(&key) else {
            lock(&self.unschedulable).remove(&key);
            return Next::Done;
        };
        if !node_name(&pod).is_empty()
            || !responsible(&pod)
            || object::deletion_timestamp(&pod).is_some()
        {
            lock(&self.unschedulable).remove(&key);
            return Next::Done;
        }
        if let Some(reason) =
            volume_binding::prefilter(&pod, &self.claim_informer, &self.class_informer)
        {
            let total = lock(&self.cache).nodes().count();
            let message = fit_error::prefilter_message(total, &reason);
            return self
                .unschedulable(&key, &pod, message, Nomination::Keep, cycle)
                .await;
        }
        // DynamicResources' PreFilter: the pod's claims exist.
        let claims = match dra::pod_claims(&pod, &self.resource_claims) {
            Ok(claims) => claims,
            Err(reason) => {
                let total = lock(&self.cache).nodes().count();
                let message = fit_error::prefilter_message(total, &reason);
                return self
                    .unschedulable(&key, &pod, message, Nomination::Keep, cycle)
                    .await;
            }
        };
        match self.decide(&pod, claims) {
            None => Next::Done,
            Some(Decision::Assumed(node, allocations)) => {
                if let Err(e) = self.reserve_claims(&pod, &allocations).await {
                    self.release(&key, &allocations);
                    return match e {
                        RegistryError::Conflict { .. } | RegistryError::NotFound { .. } => {
                            Next::Retry
                        }
                        e => {
                            warn!(pod = key, error = %e, "reserving the pod's resource claims failed");
                            Next::Retry
                        }
                    };
                }
                self.bind(&key, &pod, &node).await
            }
            Some(Decision::Unschedulable(message, nomination)) => {
                self.unschedulable(&key, &pod, message, nomination, cycle)
                    .await
            }
            Some(Decision::Preempt(candidate, message)) => {
                for victim in &candidate.victims {
                    self.evict(&pod, &victim.pod, &candidate.node).await;
                }
                info!(pod = key, node = %candidate.node, victims = candidate.victims.len(), "preempted");
                // It waits for the room, nominated to it.
                self.unschedulable(&key, &pod, message, Nomination::Set(candidate.node), cycle)
                    .await
            }
        }
    }

    /// Reserve and PreBind of DynamicResources: each claim allocated (its finalizer first,
    /// then its status) with the pod among its consumers, before the pod is bound.
    async fn reserve_claims(
        &self,
        pod: &Value,
        claims: &[ClaimAllocation],
    ) -> Result<(), RegistryError> {
        let opts = WriteOptions::by("kube-scheduler");
        for c in claims {
            let (ns, name) = (object::namespace(&c.claim), object::name(&c.claim));
            let mut claim = (*c.claim).clone();
            if c.allocation.is_some() {
                let finalizers = claim["metadata"]["finalizers"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if !finalizers.iter().any(|f| f == dra::DELETE_PROTECTION) {
                    let mut finalizers = finalizers;
                    finalizers.push(json!(dra::DELETE_PROTECTION));
                    claim["metadata"]["finalizers"] = Value::Array(finalizers);
                    claim = self
                        .resource_claim_store
                        .update(Some(ns), name, claim, Subresource::Main, &opts)
                        .await?
                        .0;
                }
            }
            let reserved = dra::reserved(&claim, c.allocation.as_ref(), pod);
            self.resource_claim_store
                .update(Some(ns), name, reserved, Subresource::Status, &opts)
                .await?;
        }
        Ok(())
    }

    /// Forgets what a failed reservation assumed: the pod's place and its claims' devices.
    fn release(&self, key: &str, claims: &[ClaimAllocation]) {
        lock(&self.cache).forget(key);
        let mut assumed = lock(&self.assumed_devices);
        for c in claims {
            assumed.remove(&key_of(&c.claim));
        }
    }

    async fn bind(&self, key: &str, pod: &Value, node: &str) -> Next {
        let (ns, name) = (object::namespace(pod), object::name(pod));
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns, "uid": object::uid(pod)},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        match self
            .pod_store
            .bind(
                Some(ns),
                name,
                &binding,
                &WriteOptions::by("kube-scheduler"),
            )
            .await
        {
            Ok(_) => {
                lock(&self.unschedulable).remove(key);
                self.recorder.event(
                    pod,
                    EventType::Normal,
                    "Scheduled",
                    format!("Successfully assigned {ns}/{name} to {node}"),
                );
                Next::Done
            }
            Err(e) => {
                lock(&self.cache).forget(key);
                match e {
                    // Gone, or placed by someone else: the informer will tell.
                    RegistryError::NotFound { .. } | RegistryError::Conflict { .. } => Next::Done,
                    e => {
                        warn!(pod = key, node, error = %e, "binding failed");
                        Next::Retry
                    }
                }
            }
        }
    }

    /// A strategic merge patch of a pod's status, as the scheduler writes it.
    async fn patch_status(&self, pod: &Value, patch: &Value) -> Result<(), RegistryError> {
        let body = patch.to_string();
        self.pod_store
            .patch(
                Some(object::namespace(pod)),
                object::name(pod),
                PatchType::Strategic,
                body.as_bytes(),
                Subresource::Status,
                &WriteOptions::by("kube-scheduler"),
            )
            .await
            .map(|_| ())
    }

    /// upstream's PrepareCandidate for one victim: marked a disruption target of the
    /// preemption, deleted (gracefully), and told why.
    async fn evict(&self, preemptor: &Value, victim: &Value, node: &str) {
        let (ns, name) = (object::namespace(victim), object::name(victim));
        let scheduler = preemptor["spec"]["schedulerName"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or(DEFAULT_SCHEDULER_NAME);
        let patch = json!({"status": {"conditions": [{
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": format!("{scheduler}: preempting to accommodate a higher priority pod"),
            "lastProbeTime": null,
            "lastTransitionTime": object::now(),
        }]}});
        if let Err(e) = self.patch_status(victim, &patch).await {
            if !matches!(e, RegistryError::NotFound { .. }) {
                warn!(pod = name, namespace = ns, error = %e, "cannot mark the preemption victim");
            }
            return;
        }
        let options = DeleteOptions {
            preconditions: Some(PreconditionsSpec {
                uid: Some(object::uid(victim).to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        match self.pod_store.delete(Some(ns), name, options).await {
            Ok(_) => self.recorder.event(
                victim,
                EventType::Normal,
                "Preempted",
                format!("Preempted by pod {} on node {node}", object::uid(preemptor)),
            ),
            Err(RegistryError::NotFound { .. } | RegistryError::Conflict { .. }) => {}
            Err(e) => {
                warn!(pod = name, namespace = ns, error = %e, "cannot delete the preemption victim")
            }
        }
    }

    async fn unschedulable(
        &self,
        key: &str,
        pod: &Value,
        message: String,
        nomination: Nomination,
        cycle: u64,
    ) -> Next {
        let attempts = {
            let mut waiting = lock(&self.unschedulable);
            let entry = waiting
                .entry(key.to_string())
                .or_insert((0, Instant::now()));
            entry.0 += 1;
            entry.1 = Instant::now();
            entry.0
        };
        // Entered the waiting set before the counter is read: a move request either saw
        // this pod there or shows in the counter.
        let moved_meanwhile = self.move_requests.load(std::sync::atomic::Ordering::SeqCst) != cycle;
        self.recorder
            .event(pod, EventType::Warning, "FailedScheduling", message.clone());
        let current = pod["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled"));
        let same = current.is_some_and(|c| {
            c["status"] == "False" && c["reason"] == "Unschedulable" && c["message"] == message
        });
        let nominated = nominated_node(pod);
        let nominate = match &nomination {
            Nomination::Set(node) if nominated != Some(node.as_str()) => Some(json!(node)),
            Nomination::Clear if nominated.is_some() => Some(Value::Null),
            _ => None,
        };
        if !same || nominate.is_some() {
            let transition = match current {
                Some(c) if c["status"] == "False" => c["lastTransitionTime"].clone(),
                _ => json!(object::now()),
            };
            let mut patch = json!({"status": {"conditions": [{
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastProbeTime": null,
                "lastTransitionTime": transition,
            }]}});
            if let Some(nominate) = nominate {
                patch["status"]["nominatedNodeName"] = nominate;
            }
            if let Err(e) = self.patch_status(pod, &patch).await {
                warn!(pod = key, error = %e, "cannot record the unschedulable condition");
            }
        }
        if moved_meanwhile {
            return Next::After(self.backoff(attempts));
        }
        Next::After(self.config.unschedulable_flush)
    }
}
