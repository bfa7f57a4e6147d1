//! The controller loop: deployments are queued when they, their ReplicaSets, or (for
//! Recreate) their pods change, and each sync reconciles one deployment from the informers'
//! view, writing through the Stores.

use std::collections::HashMap;
use std::sync::Arc;

use registry::selector::labels::LabelSelector;
use registry::types::DeploymentStrategyType;
use registry::{object, Store};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::config::DeploymentControllerConfig;
use client::controller::Controller;
use client::controller_utils::resolve_controller_ref;
use client::events::EventRecorder;
use client::informer::{
    controller_uid, FactoryError, InformerFactory, Notification, SharedInformer, NAMESPACE_INDEX,
};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

pub struct DeploymentController {
    pub(super) config: DeploymentControllerConfig,
    pub(super) deployments: Arc<Store>,
    pub(super) replica_sets: Arc<Store>,
    pub(super) deployment_informer: SharedInformer,
    pub(super) rs_informer: SharedInformer,
    pub(super) pod_informer: SharedInformer,
    /// `namespace/name` of deployments.
    pub(super) queue: RateLimitingQueue<String>,
    pub(super) recorder: EventRecorder,
}

impl DeploymentController {
    pub fn new(
        informers: &InformerFactory,
        config: DeploymentControllerConfig,
    ) -> Result<Arc<Self>, FactoryError> {
        let deployments = informers.store("apps", "v1", "deployments")?;
        let replica_sets = informers.store("apps", "v1", "replicasets")?;
        Ok(Arc::new(Self {
            deployment_informer: informers.informer_for(&deployments),
            rs_informer: informers.informer_for(&replica_sets),
            pod_informer: informers.informer("", "v1", "pods")?,
            recorder: EventRecorder::new(informers.registry().clone(), "deployment-controller"),
            queue: RateLimitingQueue::with_default_rate_limiter("deployment"),
            deployments,
            replica_sets,
            config,
        }))
    }

    /// Runs until `stop` fires; runs once.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("deployment-controller", self.clone(), self.queue.clone())
            .workers(self.config.workers)
            .primary(&self.deployment_informer, "Deployment")
            // Adoption of orphans, and a Recreate rollout that waits for the old pods to go.
            .handles(&self.rs_informer, |d, n| d.on_replica_set_change(&n))
            .handles(&self.pod_informer, |d, n| d.on_pod(&n))
            .run(stop, |d, key| async move { d.process(key).await })
            .await
    }

    async fn process(&self, key: String) -> Next {
        match self.sync_deployment(&key).await {
            Ok(None) => Next::Done,
            Ok(Some(after)) => Next::After(after),
            Err(e) => {
                warn!(deployment = %key, error = %e, retries = self.queue.num_requeues(&key), "deployment sync failed; retrying");
                Next::Retry
            }
        }
    }

    pub(super) fn enqueue(&self, d: &Value) {
        self.queue.add(key(d));
    }

    fn on_replica_set_change(&self, n: &Notification) {
        match n {
            Notification::Add(rs) => self.on_replica_set(rs, None),
            Notification::Update { old, new } => {
                if object::resource_version(old) != object::resource_version(new) {
                    self.on_replica_set(new, Some(old));
                }
            }
            Notification::Delete(rs) => {
                if let Some(d) = rs.object().and_then(|rs| self.controlling_deployment(rs)) {
                    self.enqueue(&d);
                }
            }
        }
    }

    /// A Recreate rollout waits for the old pods to be gone.
    fn on_pod(&self, n: &Notification) {
        if let Notification::Delete(pod) = n {
            if let Some(d) = pod.object().and_then(|p| self.deployment_of_pod(p)) {
                if DeploymentStrategyType::of(&d) == DeploymentStrategyType::Recreate {
                    self.enqueue(&d);
                }
            }
        }
    }

    /// A ReplicaSet changed: its controller (and a former one) looks again; an orphan is
    /// offered to every deployment that selects it.
    fn on_replica_set(&self, rs: &Value, old: Option<&Value>) {
        if let Some(old) = old {
            if controller_uid(old) != controller_uid(rs) {
                if let Some(d) = self.controlling_deployment(old) {
                    self.enqueue(&d);
                }
            }
        }
        if controller_uid(rs).is_some() {
            if let Some(d) = self.controlling_deployment(rs) {
                self.enqueue(&d);
            }
            return;
        }
        let relabeled = old.is_none_or(|o| object::labels(o) != object::labels(rs));
        if relabeled || old.is_some_and(|o| controller_uid(o).is_some()) {
            for d in self.deployments_selecting(rs) {
                self.enqueue(&d);
            }
        }
    }

    /// The deployment named by `obj`'s controller reference, if it is still that one.
    pub(super) fn controlling_deployment(&self, obj: &Value) -> Option<Arc<Value>> {
        resolve_controller_ref(&self.deployment_informer, "Deployment", obj)
    }

    /// As upstream's getDeploymentForPod: through the ReplicaSet the pod's controller
    /// reference names (one read, not the namespace's sets).
    fn deployment_of_pod(&self, pod: &Value) -> Option<Arc<Value>> {
        let rs = resolve_controller_ref(&self.rs_informer, "ReplicaSet", pod)?;
        self.controlling_deployment(&rs)
    }

    fn deployments_selecting(&self, rs: &Value) -> Vec<Arc<Value>> {
        self.deployment_informer
            .indexer()
            .by_index(NAMESPACE_INDEX, object::namespace(rs))
            .unwrap_or_default()
            .into_iter()
            .filter(|d| {
                selector(d).is_some_and(|s| !s.is_empty() && s.matches_labels(object::labels(rs)))
            })
            .collect()
    }

    /// Pods of the namespace selected by the deployment, by the uid of the ReplicaSet among
    /// `rss` that controls them (upstream's getPodMapForDeployment).
    pub(super) fn pod_map(&self, d: &Value, rss: &[Value]) -> HashMap<String, Vec<Arc<Value>>> {
        let mut map: HashMap<String, Vec<Arc<Value>>> = rss
            .iter()
            .map(|rs| (object::uid(rs).to_string(), Vec::new()))
            .collect();
        let Some(sel) = selector(d) else { return map };
        let pods = self
            .pod_informer
            .indexer()
            .by_index_selected(NAMESPACE_INDEX, object::namespace(d), |pod| {
                pod.labels().matches(&sel)
                    && pod
                        .controller_uid()
                        .is_some_and(|uid| map.contains_key(uid))
            })
            .unwrap_or_default();
        for pod in pods {
            if let Some(list) = controller_uid(&pod).and_then(|uid| map.get_mut(uid)) {
                list.push(pod);
            }
        }
        map
    }
}

pub(super) fn key(obj: &Value) -> String {
    format!("{}/{}", object::namespace(obj), object::name(obj))
}

/// The deployment's selector, if it parses.
pub(super) fn selector(d: &Value) -> Option<LabelSelector> {
    LabelSelector::from_label_selector_json(&d["spec"]["selector"]).ok()
}
