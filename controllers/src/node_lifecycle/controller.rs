//! The node lifecycle controller: every monitor period it looks at each node's heartbeat and
//! Lease, sets the conditions of silent kubelets to Unknown, and keeps the condition taints in
//! step (the NoExecute ones drive `TaintEvictionController`).

use std::sync::Arc;
use std::time::Duration;

use registry::options::WriteOptions;
use registry::types::ConditionStatus;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::health::{silenced_conditions, HealthConfig};
use super::taints::reconciled_taints;
use client::clock::{self, Clock};
use client::controller::Controller;
use client::controller_utils::SyncError;
use client::events::{EventRecorder, EventType};
use client::informer::{FactoryError, InformerFactory, Notification, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

/// Where kubelets renew their Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

#[derive(Clone, Debug)]
pub struct NodeLifecycleConfig {
    pub health: HealthConfig,
    /// How often every node is looked at (`--node-monitor-period`, upstream's 5 s).
    pub monitor_period: Duration,
    pub workers: usize,
    pub clock: Arc<dyn Clock>,
}

impl Default for NodeLifecycleConfig {
    fn default() -> Self {
        Self {
            health: HealthConfig::default(),
            monitor_period: Duration::from_secs(5),
            workers: 2,
            clock: clock::system(),
        }
    }
}

pub struct NodeLifecycleController {
    config: NodeLifecycleConfig,
    nodes: Arc<Store>,
    node_informer: SharedInformer,
    lease_informer: SharedInformer,
    recorder: EventRecorder,
    queue: RateLimitingQueue<String>,
}

impl NodeLifecycleController {
    pub fn new(
        informers: &InformerFactory,
        config: NodeLifecycleConfig,
    ) -> Result<Arc<Self>, FactoryError> {
        let nodes = informers.store("", "v1", "nodes")?;
        Ok(Arc::new(Self {
            node_informer: informers.informer_for(&nodes),
            lease_informer: informers.informer("coordination.k8s.io", "v1", "leases")?,
            recorder: EventRecorder::new(informers.registry().clone(), "node-controller"),
            nodes,
            config,
            queue: RateLimitingQueue::with_default_rate_limiter("node_lifecycle_controller"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let name = "node-lifecycle-controller";
        Controller::new(name, self.clone(), self.queue.clone())
            .workers(self.config.workers)
            .handles(&self.node_informer, |nlc, n| {
                if let Notification::Add(node) | Notification::Update { new: node, .. } = n {
                    nlc.queue.add(object::name(&node).to_string());
                }
            })
            .reads(&self.lease_informer)
            .spawns(Self::monitor)
            .run(stop, |nlc, node| async move {
                let result = nlc.sync(&node).await;
                if let Err(e) = &result {
                    warn!(node = %node, error = %e, "node health update failed; retrying");
                }
                Next::from(result.map(|()| None::<Duration>))
            })
            .await
    }

    /// Upstream's monitorNodeHealth loop: silence is noticed by looking, not by an event.
    async fn monitor(self: Arc<Self>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(self.config.monitor_period);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            for name in self.node_informer.indexer().list_keys() {
                self.queue.add(name);
            }
        }
    }

    async fn sync(&self, name: &str) -> Result<(), SyncError> {
        let Some(node) = self.node_informer.indexer().get(name) else {
            return Ok(());
        };
        let lease = self
            .lease_informer
            .indexer()
            .get(&format!("{NODE_LEASE_NAMESPACE}/{name}"));
        let now = self.config.clock.now();
        let mut node = (*node).clone();
        if let Some(conditions) =
            silenced_conditions(&node, lease.as_deref(), now, self.config.health)
        {
            let was_ready = is_ready(&node);
            node["status"]["conditions"] = conditions;
            node = match self.write(node, Subresource::Status).await? {
                Some(written) => written,
                None => return Ok(()),
            };
            if was_ready {
                warn!(
                    node = name,
                    "kubelet stopped posting node status; node is NotReady"
                );
                let message = format!("Node {name} status is now: NodeNotReady");
                self.recorder
                    .event(&node, EventType::Normal, "NodeNotReady", message);
            }
        }
        if let Some(taints) = reconciled_taints(&node, now) {
            node["spec"]["taints"] = taints;
            self.write(node, Subresource::Main).await?;
        }
        Ok(())
    }

    /// The written node; None if it is gone. A conflict is retried with the informer's next copy.
    async fn write(&self, node: Value, to: Subresource) -> Result<Option<Value>, SyncError> {
        let name = object::name(&node).to_string();
        match self
            .nodes
            .update(None, &name, node, to, &WriteOptions::default())
            .await
        {
            Ok((written, _)) => Ok(Some(written)),
            Err(RegistryError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

fn is_ready(node: &Value) -> bool {
    super::health::condition(node, "Ready")
        .is_some_and(|c| ConditionStatus::from_value(&c["status"]) == Some(ConditionStatus::True))
}
