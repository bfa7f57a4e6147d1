//! The controller loop: informers of the sets and of pods, event handlers that queue the set
//! a pod change concerns (and keep the expectations in step), and workers that sync sets.

use std::sync::Arc;
use std::time::Duration;

use registry::{object, Store};
use serde_json::Value;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::kind::ReplicaSetKind;
use super::status::min_ready_seconds;
use client::controller::Controller;
use client::controller_utils::{
    controller_reference, is_pod_ready, resolve_controller_ref, Expectations, PodControl,
};
use client::events::EventRecorder;
use client::informer::{
    object_key, DeltaObject, FactoryError, InformerFactory, Notification, SharedInformer,
    NAMESPACE_INDEX,
};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

#[derive(Debug, Error)]
pub enum ReplicaSetControllerError {
    #[error(transparent)]
    Informer(#[from] FactoryError),
}

#[derive(Clone, Debug)]
pub struct ReplicaSetControllerConfig {
    pub kind: ReplicaSetKind,
    /// Sets synced at once (upstream's --concurrent-replicaset-syncs, default 5).
    pub workers: usize,
    /// Most pods created or deleted by one sync (upstream's BurstReplicas).
    pub burst_replicas: usize,
}

impl ReplicaSetControllerConfig {
    pub fn for_kind(kind: ReplicaSetKind) -> Self {
        Self {
            kind,
            workers: 5,
            burst_replicas: 500,
        }
    }
}

impl Default for ReplicaSetControllerConfig {
    fn default() -> Self {
        Self::for_kind(ReplicaSetKind::ReplicaSet)
    }
}

pub struct ReplicaSetController {
    pub(super) config: ReplicaSetControllerConfig,
    pub(super) sets: SharedInformer,
    pub(super) pods: SharedInformer,
    pub(super) set_store: Arc<Store>,
    pub(super) pod_store: Arc<Store>,
    pub(super) pod_control: PodControl,
    pub(super) expectations: Expectations,
    /// Keys (namespace/name) of sets.
    pub(super) queue: RateLimitingQueue<String>,
}

impl ReplicaSetController {
    pub fn new(
        informers: &InformerFactory,
        config: ReplicaSetControllerConfig,
    ) -> Result<Arc<Self>, ReplicaSetControllerError> {
        let kind = config.kind;
        let registry = informers.registry().clone();
        let sets = informers.informer(kind.group(), kind.version(), kind.plural())?;
        let pods = informers.informer("", "v1", "pods")?;
        let set_store = informers.store(kind.group(), kind.version(), kind.plural())?;
        let pod_store = informers.store("", "v1", "pods")?;
        let recorder = EventRecorder::new(registry, kind.component());
        Ok(Arc::new(Self {
            config,
            sets,
            pods,
            set_store,
            pod_control: PodControl::new(pod_store.clone(), recorder),
            pod_store,
            expectations: Expectations::new(),
            queue: RateLimitingQueue::with_default_rate_limiter("replicaset"),
        }))
    }

    pub fn kind(&self) -> ReplicaSetKind {
        self.config.kind
    }

    /// Runs until `stop` fires; a set being synced then is picked up by whoever runs next.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        // Both handlers are the controller's own: they keep the expectations in step.
        Controller::new(self.kind().name(), self.clone(), self.queue.clone())
            .workers(self.config.workers)
            .handles(&self.sets, |rs, n| rs.on_set(n))
            .handles(&self.pods, |rs, n| rs.on_pod(n))
            .run(stop, |rs, key| async move { rs.process(key).await })
            .await
    }

    async fn process(&self, key: String) -> Next {
        match self.sync(&key).await {
            Ok(None) => Next::Done,
            Ok(Some(after)) => Next::After(after),
            Err(e) => {
                warn!(
                    controller = self.kind().component(),
                    key,
                    error = %e,
                    retries = self.queue.num_requeues(&key),
                    "sync failed; retrying"
                );
                Next::Retry
            }
        }
    }

    fn enqueue(&self, set: &Value) {
        if let Ok(key) = object_key(set) {
            self.queue.add(key);
        }
    }

    fn on_set(&self, notification: Notification) {
        match notification {
            Notification::Add(set) => self.enqueue(&set),
            Notification::Update { old, new } => {
                // Deleted and re-created under the same name while the watch was away.
                if object::uid(&old) != object::uid(&new) {
                    if let Ok(key) = object_key(&old) {
                        self.expectations.forget(&key);
                    }
                }
                self.enqueue(&new);
            }
            Notification::Delete(set) => {
                if let Ok(key) = set.key() {
                    self.expectations.forget(&key);
                    self.queue.add(key);
                }
            }
        }
    }

    fn on_pod(&self, notification: Notification) {
        match notification {
            Notification::Add(pod) => {
                if object::deletion_timestamp(&pod).is_some() {
                    // Seen already going (a relist after a restart): a deletion, not a creation.
                    self.pod_gone(&DeltaObject::Object(pod));
                } else if controller_reference(&pod).is_none() {
                    self.enqueue_selecting(&pod);
                } else if let Some(set) = self.controller_of(&pod) {
                    if let Ok(key) = object_key(&set) {
                        self.expectations.creation_observed(&key);
                        self.queue.add(key);
                    }
                }
            }
            Notification::Update { old, new } => self.pod_updated(&old, &new),
            Notification::Delete(pod) => self.pod_gone(&pod),
        }
    }

    fn pod_updated(&self, old: &Arc<Value>, new: &Arc<Value>) {
        if object::resource_version(old) == object::resource_version(new) {
            return;
        }
        let labels_changed = object::labels(old) != object::labels(new);
        if object::deletion_timestamp(new).is_some() {
            // Graceful deletion shows as an update; the pod no longer counts from now on.
            self.pod_gone(&DeltaObject::Object(new.clone()));
            if labels_changed {
                self.pod_gone(&DeltaObject::Object(old.clone()));
            }
            return;
        }
        let reference_changed = controller_reference(old) != controller_reference(new);
        if reference_changed {
            if let Some(set) = self.controller_of(old) {
                self.enqueue(&set);
            }
        }
        if controller_reference(new).is_some() {
            // Controlled by someone else (or a set not seen yet): not an orphan to adopt.
            let Some(set) = self.controller_of(new) else {
                return;
            };
            self.enqueue(&set);
            let min_ready = min_ready_seconds(&set);
            if min_ready > 0 && !is_pod_ready(old) && is_pod_ready(new) {
                // Becomes available then, with no event to say so.
                if let Ok(key) = object_key(&set) {
                    let after = Duration::from_secs(min_ready.unsigned_abs() + 1);
                    self.queue.add_after(key, after);
                }
            }
            return;
        }
        if labels_changed || reference_changed {
            self.enqueue_selecting(new);
        }
    }

    fn pod_gone(&self, pod: &DeltaObject) {
        let Some(obj) = pod.object() else {
            return;
        };
        let Some(set) = self.controller_of(obj) else {
            return;
        };
        let (Ok(set_key), Ok(pod_key)) = (object_key(&set), pod.key()) else {
            return;
        };
        self.expectations.deletion_observed(&set_key, &pod_key);
        self.queue.add(set_key);
    }

    /// The set controlling `pod`, if it is one of ours and still in the informer.
    pub(super) fn controller_of(&self, pod: &Value) -> Option<Arc<Value>> {
        resolve_controller_ref(&self.sets, self.kind().kind(), pod)
    }

    /// An orphan is queued for every set of its namespace that selects it, to be adopted.
    fn enqueue_selecting(&self, pod: &Value) {
        let sets = self
            .sets
            .indexer()
            .by_index(NAMESPACE_INDEX, object::namespace(pod))
            .unwrap_or_default();
        let labels = object::labels(pod);
        for set in sets {
            match self.kind().selector(&set) {
                Ok(selector) if !selector.is_empty() && selector.matches_labels(labels) => {
                    debug!(
                        pod = object::name(pod),
                        set = object::name(&set),
                        "orphan matches"
                    );
                    self.enqueue(&set);
                }
                _ => {}
            }
        }
    }
}
