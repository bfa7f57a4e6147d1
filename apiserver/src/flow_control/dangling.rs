//! The part of API Priority and Fairness' configuration consumer this server runs (upstream's
//! apf_controller in k8s.io/apiserver/pkg/util/flowcontrol): each FlowSchema's `Dangling`
//! condition says whether the priority level it names exists, which `kubectl get
//! flowschemas` shows as MISSINGPL. Classifying and queueing requests by the configuration
//! is a later step.

use std::sync::Arc;

use client::controller::Controller;
use client::informer::{InformerFactory, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;
use registry::options::WriteOptions;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// Upstream's field manager for the consumer's status writes.
const FIELD_MANAGER: &str = "api-priority-and-fairness-config-consumer-v1";
const GROUP: &str = "flowcontrol.apiserver.k8s.io";

pub struct DanglingConditions {
    schemas: SharedInformer,
    levels: SharedInformer,
    store: Arc<Store>,
    queue: RateLimitingQueue<String>,
}

impl DanglingConditions {
    /// None when the server does not serve the flowcontrol kinds.
    pub fn new(informers: &InformerFactory) -> Option<Arc<Self>> {
        let registry = informers.registry();
        let store = registry.store(GROUP, "v1", "flowschemas")?;
        let levels = registry.store(GROUP, "v1", "prioritylevelconfigurations")?;
        Some(Arc::new(Self {
            schemas: informers.informer_for(&store),
            levels: informers.informer_for(&levels),
            store,
            queue: RateLimitingQueue::with_default_rate_limiter("APFDanglingConditions"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("apf-configuration-consumer", self.clone(), self.queue.clone())
            .primary(&self.schemas, "FlowSchema")
            // Levels are few: a level's change looks at every schema again.
            .handles(&self.levels, |c, _| {
                for schema in c.schemas.indexer().list() {
                    c.queue.add(object::name(&schema).to_string());
                }
            })
            .run(stop, |c, name| async move {
                Next::after_sync(c.sync(&name).await, |e| {
                    warn!(flowschema = %name, error = %e, "writing the Dangling condition failed; retrying")
                })
            })
            .await
    }

    async fn sync(&self, name: &str) -> Result<(), RegistryError> {
        let Some(schema) = self.schemas.indexer().get(name) else {
            return Ok(());
        };
        let level = schema
            .pointer("/spec/priorityLevelConfiguration/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (status, reason, message) = if self.levels.indexer().get(level).is_some() {
            ("False", "Found", format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"))
        } else {
            ("True", "NotFound", format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object"))
        };
        let current = current_condition(&schema);
        let same = |field: &str, want: &str| {
            current.and_then(|c| c.get(field)).and_then(Value::as_str) == Some(want)
        };
        if same("status", status) && same("reason", reason) && same("message", &message) {
            return Ok(());
        }
        // The transition time moves only when the status does.
        let since = match current.filter(|_| same("status", status)) {
            Some(c) => c.get("lastTransitionTime").cloned().unwrap_or(Value::Null),
            None => json!(object::now()),
        };
        let applied = json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": name},
            "status": {"conditions": [{
                "type": "Dangling", "status": status, "lastTransitionTime": since,
                "reason": reason, "message": message,
            }]},
        });
        let body = serde_json::to_vec(&applied)
            .map_err(|e| RegistryError::Internal(format!("encoding {name}: {e}")))?;
        let opts = WriteOptions {
            force: true,
            ..WriteOptions::by(FIELD_MANAGER)
        };
        match self
            .store
            .apply(None, name, &body, Subresource::Status, &opts)
            .await
        {
            // Gone meanwhile: nothing to say about it.
            Err(RegistryError::NotFound { .. }) => Ok(()),
            other => other.map(|_| ()),
        }
    }
}

fn current_condition(schema: &Value) -> Option<&Value> {
    schema
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"))
}
