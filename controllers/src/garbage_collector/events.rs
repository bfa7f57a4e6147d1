//! Warning events about objects the collector will not act on (an ownerReference that cannot
//! be right), written as core/v1 Events so `kubectl describe` shows them, as upstream's
//! event recorder does.

use std::sync::Arc;

use registry::options::WriteOptions;
use registry::Registry;
use serde_json::json;
use tracing::{debug, warn};

use super::reference::ObjectReference;

const COMPONENT: &str = "garbage-collector-controller";

/// Logs every warning; also stores it as an Event when it has a registry.
#[derive(Clone, Default)]
pub struct EventRecorder {
    registry: Option<Arc<Registry>>,
}

impl EventRecorder {
    pub fn new(registry: Arc<Registry>) -> Self {
        Self {
            registry: Some(registry),
        }
    }

    /// Records a Warning event about `involved`. Never blocks: the write happens on a task of
    /// its own, and a failure to write it is only logged.
    pub fn warning(&self, involved: &ObjectReference, reason: &'static str, message: String) {
        warn!(object = %involved, reason, "{message}");
        let Some(registry) = self.registry.clone() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let involved = involved.clone();
        runtime.spawn(async move {
            let Some(events) = registry.store("", "v1", "events") else {
                return;
            };
            let namespace = if involved.namespace.is_empty() {
                "default".to_string()
            } else {
                involved.namespace.clone()
            };
            let now = registry::object::now();
            let nanos = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default();
            let event = json!({
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": format!("{}.{nanos:x}", involved.name), "namespace": namespace},
                "involvedObject": {
                    "apiVersion": involved.api_version,
                    "kind": involved.kind,
                    "name": involved.name,
                    "namespace": involved.namespace,
                    "uid": &*involved.uid,
                },
                "reason": reason,
                "message": message,
                "type": "Warning",
                "source": {"component": COMPONENT},
                "reportingComponent": COMPONENT,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            });
            if let Err(e) = events
                .create(Some(&namespace), event, &WriteOptions::default())
                .await
            {
                debug!(object = %involved, reason, error = %e, "could not record event");
            }
        });
    }
}
