//! The controller loop: sets are queued when they, their pods or their revisions change;
//! each sync reconciles one set from the informers' view, writing through the Stores.

use std::sync::Arc;

use registry::selector::labels::LabelSelector;
use registry::{object, Store};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::config::StatefulSetControllerConfig;
use super::pod_control::StatefulPodControl;
use crate::history::History;
use client::controller::Controller;
use client::controller_utils::resolve_controller_ref;
use client::events::EventRecorder;
use client::informer::{
    controller_uid, FactoryError, InformerFactory, Notification, SharedInformer, NAMESPACE_INDEX,
};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

pub struct StatefulSetController {
    pub(super) config: StatefulSetControllerConfig,
    pub(super) sets: Arc<Store>,
    pub(super) set_informer: SharedInformer,
    pub(super) pod_informer: SharedInformer,
    pub(super) history: History,
    pub(super) pod_control: StatefulPodControl,
    /// `namespace/name` of sets.
    pub(super) queue: RateLimitingQueue<String>,
}

impl StatefulSetController {
    pub fn new(
        informers: &InformerFactory,
        config: StatefulSetControllerConfig,
    ) -> Result<Arc<Self>, FactoryError> {
        let sets = informers.store("apps", "v1", "statefulsets")?;
        let pods = informers.store("", "v1", "pods")?;
        let claims = informers.store("", "v1", "persistentvolumeclaims")?;
        let recorder = EventRecorder::new(informers.registry().clone(), "statefulset-controller");
        Ok(Arc::new(Self {
            set_informer: informers.informer_for(&sets),
            pod_informer: informers.informer_for(&pods),
            history: History::new(informers, sets.clone())?,
            pod_control: StatefulPodControl {
                claim_informer: informers.informer_for(&claims),
                pods,
                claims,
                recorder,
            },
            queue: RateLimitingQueue::with_default_rate_limiter("statefulset"),
            sets,
            config,
        }))
    }

    /// Runs until `stop` fires; runs once.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("statefulset-controller", self.clone(), self.queue.clone())
            .workers(self.config.workers)
            .primary(&self.set_informer, "StatefulSet")
            // Pods and revisions are owned, but an orphan may also be adopted.
            .handles(&self.pod_informer, |s, n| s.on_owned_change(&n))
            .handles(self.history.informer(), |s, n| s.on_owned_change(&n))
            .reads(&self.pod_control.claim_informer)
            .run(stop, |s, key| async move { s.process(key).await })
            .await
    }

    async fn process(&self, key: String) -> Next {
        match self.sync(&key).await {
            Ok(None) => Next::Done,
            Ok(Some(after)) => Next::After(after),
            Err(e) => {
                warn!(statefulset = %key, error = %e, retries = self.queue.num_requeues(&key), "statefulset sync failed; retrying");
                Next::Retry
            }
        }
    }

    fn enqueue(&self, set: &Value) {
        self.queue.add(key(set));
    }

    fn on_owned_change(&self, n: &Notification) {
        match n {
            Notification::Add(obj) => self.on_owned(obj, None),
            Notification::Update { old, new } => {
                if object::resource_version(old) != object::resource_version(new) {
                    self.on_owned(new, Some(old));
                }
            }
            Notification::Delete(obj) => {
                if let Some(set) = obj.object().and_then(|o| self.controlling_set(o)) {
                    self.enqueue(&set);
                }
            }
        }
    }

    /// A pod or revision changed: its controller (and a former one) looks again; an orphan
    /// is offered to every set that selects it.
    fn on_owned(&self, obj: &Value, old: Option<&Value>) {
        if let Some(old) = old.filter(|o| controller_uid(o) != controller_uid(obj)) {
            if let Some(set) = self.controlling_set(old) {
                self.enqueue(&set);
            }
        }
        if controller_uid(obj).is_some() {
            if let Some(set) = self.controlling_set(obj) {
                self.enqueue(&set);
            }
            return;
        }
        for set in self.sets_selecting(obj) {
            self.enqueue(&set);
        }
    }

    /// The set named by `obj`'s controller reference, if it is still that one.
    fn controlling_set(&self, obj: &Value) -> Option<Arc<Value>> {
        resolve_controller_ref(&self.set_informer, "StatefulSet", obj)
    }

    fn sets_selecting(&self, obj: &Value) -> Vec<Arc<Value>> {
        self.set_informer
            .indexer()
            .by_index(NAMESPACE_INDEX, object::namespace(obj))
            .unwrap_or_default()
            .into_iter()
            .filter(|s| {
                selector(s)
                    .is_some_and(|sel| !sel.is_empty() && sel.matches_labels(object::labels(obj)))
            })
            .collect()
    }
}

pub(super) fn key(obj: &Value) -> String {
    format!("{}/{}", object::namespace(obj), object::name(obj))
}

pub(super) fn selector(set: &Value) -> Option<LabelSelector> {
    LabelSelector::from_label_selector_json(&set["spec"]["selector"]).ok()
}
