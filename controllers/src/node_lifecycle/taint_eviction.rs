//! The taint eviction controller: pods on nodes with NoExecute taints they do not tolerate
//! (or tolerate only for `tolerationSeconds`) get a DisruptionTarget condition and are deleted,
//! gracefully, as upstream's does. The kubelet of a dead node never confirms, so such pods stay
//! Terminating until the node comes back or someone forces them, as upstream. Pods bound to a
//! node that does not exist are reported ([`MissingNodes`]).

use std::sync::Arc;
use std::time::Duration;

use registry::options::{DeleteOptions, PreconditionsSpec, WriteOptions};
use registry::types::PodPhase;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::eviction::{eviction, no_execute_taints, Eviction};
use super::missing_node::MissingNodes;
use client::clock::{self, Clock};
use client::controller::Controller;
use client::controller_utils::SyncError;
use client::events::{EventRecorder, EventType};
use client::informer::{object_key, FactoryError, InformerFactory, Notification, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

/// Pods looked at at once.
const WORKERS: usize = 4;

/// The pod index by `spec.nodeName` (bound pods only), named as upstream's.
const NODE_NAME_INDEX: &str = "spec.nodeName";

fn node_name_index(pod: &Value) -> Vec<String> {
    pod["spec"]["nodeName"]
        .as_str()
        .filter(|n| !n.is_empty())
        .map(|n| vec![n.to_string()])
        .unwrap_or_default()
}

pub struct TaintEvictionController {
    clock: Arc<dyn Clock>,
    pods: Arc<Store>,
    pod_informer: SharedInformer,
    node_informer: SharedInformer,
    recorder: EventRecorder,
    missing_nodes: MissingNodes,
    queue: RateLimitingQueue<String>,
}

impl TaintEvictionController {
    pub fn new(informers: &InformerFactory) -> Result<Arc<Self>, FactoryError> {
        Self::with_clock(informers, clock::system())
    }

    pub fn with_clock(
        informers: &InformerFactory,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, FactoryError> {
        let pods = informers.store("", "v1", "pods")?;
        let pod_informer = informers.informer_for(&pods);
        // Upstream's index of pods by node; already there when the controllers restart.
        let _ = pod_informer
            .indexer()
            .add_index(NODE_NAME_INDEX, Arc::new(node_name_index));
        Ok(Arc::new(Self {
            clock,
            pod_informer,
            node_informer: informers.informer("", "v1", "nodes")?,
            recorder: EventRecorder::new(informers.registry().clone(), "taint-eviction-controller"),
            missing_nodes: MissingNodes::new(EventRecorder::new(
                informers.registry().clone(),
                "node-controller",
            )),
            pods,
            queue: RateLimitingQueue::with_default_rate_limiter("noexec_taint_pod"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let name = "taint-eviction-controller";
        Controller::new(name, self.clone(), self.queue.clone())
            .workers(WORKERS)
            .handles(&self.pod_informer, |te, n| match n {
                Notification::Add(pod) | Notification::Update { new: pod, .. } => te.enqueue(&pod),
                Notification::Delete(gone) => {
                    if let Some(pod) = gone.object() {
                        te.missing_nodes.forget(object::uid(pod));
                    }
                }
            })
            .handles(&self.node_informer, |te, n| {
                // As upstream: only a change of NoExecute taints can change what is evicted,
                // and node updates (status, heartbeats) far outnumber such changes.
                let (old, node) = match &n {
                    Notification::Add(node) => (Vec::new(), node),
                    Notification::Update { old, new } => (no_execute_taints(old), new),
                    Notification::Delete(_) => return,
                };
                if no_execute_taints(node) != old {
                    te.enqueue_pods_on(object::name(node));
                }
            })
            .run(stop, |te, key| async move {
                let result = te.sync(&key).await;
                if let Err(e) = &result {
                    warn!(pod = %key, error = %e, "taint eviction failed; retrying");
                }
                Next::from(result)
            })
            .await
    }

    fn enqueue(&self, pod: &Value) {
        let bound = pod["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty());
        if bound && object::deletion_timestamp(pod).is_none() {
            if let Ok(key) = object_key(pod) {
                self.queue.add(key);
            }
        }
    }

    /// A node's NoExecute taints changed: every pod on it is looked at again (found by the
    /// index, none decoded here; the sync skips those being deleted).
    fn enqueue_pods_on(&self, node: &str) {
        match self
            .pod_informer
            .indexer()
            .index_keys(NODE_NAME_INDEX, node)
        {
            Ok(keys) => keys.into_iter().for_each(|key| self.queue.add(key)),
            Err(e) => warn!(%node, error = %e, "pods on the node cannot be found"),
        }
    }

    /// Evicts the pod `key` if its time has come; Some(d): it comes in `d`.
    async fn sync(&self, key: &str) -> Result<Option<Duration>, SyncError> {
        let Some(pod) = self.pod_informer.indexer().get(key) else {
            return Ok(None);
        };
        let node_name = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        if object::deletion_timestamp(&pod).is_some() {
            return Ok(None);
        }
        let Some(node) = self.node_informer.indexer().get(node_name) else {
            // An unset phase counts as Pending; an unknown one does not.
            let phase = pod["status"]["phase"].as_str();
            if phase.is_none_or(|p| p.parse() == Ok(PodPhase::Pending)) {
                self.missing_nodes.report(&pod, node_name);
            }
            return Ok(None);
        };
        let now = self.clock.now();
        match eviction(&pod, &node, now) {
            Eviction::Never => Ok(None),
            Eviction::At(at) => Ok((at - now).to_std().ok()),
            Eviction::Now => self.evict(&pod).await.map(|()| None),
        }
    }

    async fn evict(&self, pod: &Value) -> Result<(), SyncError> {
        let (namespace, name) = (object::namespace(pod), object::name(pod));
        info!(pod = %format!("{namespace}/{name}"), "evicting pod from a NoExecute-tainted node");
        self.recorder.event(
            pod,
            EventType::Normal,
            "TaintManagerEviction",
            format!("Marking for deletion Pod {namespace}/{name}"),
        );
        let mut marked = pod.clone();
        let mut conditions = pod["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        conditions.retain(|c| c["type"] != "DisruptionTarget");
        conditions.push(json!({
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
            "lastTransitionTime": object::timestamp(self.clock.now()),
        }));
        marked["status"]["conditions"] = Value::Array(conditions);
        let written = self
            .pods
            .update(
                Some(namespace),
                name,
                marked,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await;
        match written {
            Ok(_) => {}
            Err(RegistryError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        let options = DeleteOptions {
            preconditions: Some(PreconditionsSpec {
                uid: Some(object::uid(pod).to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        match self.pods.delete(Some(namespace), name, options).await {
            Ok(_) | Err(RegistryError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
