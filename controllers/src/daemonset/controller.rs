//! The controller loop: DaemonSets are queued when they, their pods, their revisions or any
//! node change, and each sync reconciles one DaemonSet from the informers' view.

use std::sync::Arc;
use std::time::Duration;

use registry::selector::labels::LabelSelector;
use registry::{object, Store};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::backoff::FailedPodsBackoff;
use super::config::DaemonSetControllerConfig;
use crate::history::History;
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

pub struct DaemonSetController {
    pub(super) config: DaemonSetControllerConfig,
    pub(super) ds_store: Arc<Store>,
    pub(super) pod_store: Arc<Store>,
    pub(super) revision_store: Arc<Store>,
    pub(super) ds_informer: SharedInformer,
    pub(super) pod_informer: SharedInformer,
    pub(super) node_informer: SharedInformer,
    pub(super) history: History,
    pub(super) pod_control: PodControl,
    pub(super) recorder: EventRecorder,
    pub(super) expectations: Expectations,
    pub(super) failed_backoff: FailedPodsBackoff,
    /// `namespace/name` of DaemonSets.
    pub(super) queue: RateLimitingQueue<String>,
}

impl DaemonSetController {
    pub fn new(
        informers: &InformerFactory,
        config: DaemonSetControllerConfig,
    ) -> Result<Arc<Self>, FactoryError> {
        let ds_store = informers.store("apps", "v1", "daemonsets")?;
        let pod_store = informers.store("", "v1", "pods")?;
        let revision_store = informers.store("apps", "v1", "controllerrevisions")?;
        let recorder = EventRecorder::new(informers.registry().clone(), "daemonset-controller");
        let (initial, max) = config.failed_pod_backoff;
        Ok(Arc::new(Self {
            ds_informer: informers.informer_for(&ds_store),
            pod_informer: informers.informer_for(&pod_store),
            node_informer: informers.informer("", "v1", "nodes")?,
            history: History::new(informers, ds_store.clone())?,
            pod_control: PodControl::new(pod_store.clone(), recorder.clone()),
            recorder,
            expectations: Expectations::new(),
            failed_backoff: FailedPodsBackoff::new(initial, max),
            queue: RateLimitingQueue::with_default_rate_limiter("daemonset"),
            ds_store,
            pod_store,
            revision_store,
            config,
        }))
    }

    /// Runs until `stop` fires; runs once.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("daemonset-controller", self.clone(), self.queue.clone())
            .workers(self.config.workers)
            // Expectations bookkeeping, and adoption of orphan pods.
            .primary_with(&self.ds_informer, "DaemonSet", |ds, n| ds.on_daemon_set(n))
            .handles(&self.pod_informer, |ds, n| ds.on_pod(n))
            .handles(&self.node_informer, |ds, n| ds.on_node(&n))
            .owns(self.history.informer())
            .spawns(Self::backoff_gc)
            .run(stop, |ds, key| async move { ds.process(key).await })
            .await
    }

    /// Forgets back-offs of failed pods long quiet, once a minute as upstream.
    async fn backoff_gc(self: Arc<Self>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tokio::select! {
                _ = tick.tick() => self.failed_backoff.gc(std::time::Instant::now()),
                () = stop.cancelled() => return,
            }
        }
    }

    async fn process(&self, key: String) -> Next {
        match self.sync_daemon_set(&key).await {
            Ok(None) => Next::Done,
            Ok(Some(after)) => Next::After(after),
            Err(e) => {
                warn!(daemonset = %key, error = %e, retries = self.queue.num_requeues(&key), "daemon set sync failed; retrying");
                Next::Retry
            }
        }
    }

    fn enqueue(&self, ds: &Value) {
        self.queue.add(key(ds));
    }

    fn enqueue_all(&self) {
        for ds in self.ds_informer.indexer().list() {
            self.enqueue(&ds);
        }
    }

    fn on_daemon_set(&self, n: Notification) {
        match n {
            Notification::Add(ds) => self.enqueue(&ds),
            Notification::Update { old, new } => {
                if object::uid(&old) != object::uid(&new) {
                    self.expectations.forget(&key(&old));
                }
                self.enqueue(&new);
            }
            Notification::Delete(ds) => {
                if let Ok(k) = ds.key() {
                    self.expectations.forget(&k);
                    self.queue.add(k);
                }
            }
        }
    }

    fn on_pod(&self, n: Notification) {
        match n {
            Notification::Add(pod) => {
                if object::deletion_timestamp(&pod).is_some() {
                    self.pod_gone(&DeltaObject::Object(pod));
                } else if let Some(ds) = self.controller_of(&pod, "DaemonSet") {
                    self.expectations.creation_observed(&key(&ds));
                    self.enqueue(&ds);
                } else if controller_reference(&pod).is_none() {
                    self.enqueue_selecting(&pod);
                }
            }
            Notification::Update { old, new } => self.pod_updated(&old, &new),
            Notification::Delete(pod) => self.pod_gone(&pod),
        }
    }

    fn on_node(&self, n: &Notification) {
        if let Notification::Update { old, new } = n {
            // Status-only updates (heartbeats) never change where daemons run.
            if old["metadata"]["labels"] == new["metadata"]["labels"] && old["spec"] == new["spec"]
            {
                return;
            }
        }
        self.enqueue_all();
    }

    fn pod_updated(&self, old: &Arc<Value>, new: &Arc<Value>) {
        if object::resource_version(old) == object::resource_version(new) {
            return;
        }
        if object::deletion_timestamp(new).is_some() {
            self.pod_gone(&DeltaObject::Object(new.clone()));
            return;
        }
        if controller_reference(old) != controller_reference(new) {
            if let Some(ds) = self.controller_of(old, "DaemonSet") {
                self.enqueue(&ds);
            }
        }
        if let Some(ds) = self.controller_of(new, "DaemonSet") {
            self.enqueue(&ds);
            let min_ready = super::status::min_ready_seconds(&ds);
            if min_ready > 0 && !is_pod_ready(old) && is_pod_ready(new) {
                let after = Duration::from_secs(min_ready.unsigned_abs() + 1);
                self.queue.add_after(key(&ds), after);
            }
        } else if controller_reference(new).is_none() && object::labels(old) != object::labels(new)
        {
            self.enqueue_selecting(new);
        }
    }

    fn pod_gone(&self, pod: &DeltaObject) {
        let Some(obj) = pod.object() else { return };
        let Some(ds) = self.controller_of(obj, "DaemonSet") else {
            return;
        };
        if let Ok(pod_key) = pod.key() {
            self.expectations.deletion_observed(&key(&ds), &pod_key);
        }
        self.enqueue(&ds);
    }

    /// The DaemonSet `obj`'s controller reference names, if it is still that one.
    fn controller_of(&self, obj: &Value, kind: &str) -> Option<Arc<Value>> {
        resolve_controller_ref(&self.ds_informer, kind, obj)
    }

    /// An orphan pod is offered to every DaemonSet of its namespace that selects it.
    fn enqueue_selecting(&self, pod: &Value) {
        for ds in self
            .ds_informer
            .indexer()
            .by_index(NAMESPACE_INDEX, object::namespace(pod))
            .unwrap_or_default()
        {
            if selector(&ds).is_some_and(|s| !s.is_empty() && s.matches_labels(object::labels(pod)))
            {
                self.enqueue(&ds);
            }
        }
    }
}

pub(super) fn key(obj: &Value) -> String {
    object_key(obj).unwrap_or_else(|_| format!("{}/{}", object::namespace(obj), object::name(obj)))
}

/// The DaemonSet's selector, if it parses.
pub(super) fn selector(ds: &Value) -> Option<LabelSelector> {
    LabelSelector::from_label_selector_json(&ds["spec"]["selector"]).ok()
}
