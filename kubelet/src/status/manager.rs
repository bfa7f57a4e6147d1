//! The status manager (pkg/kubelet/status/status_manager.go): writes a pod's status through
//! the status subresource, only to the pod with the UID the kubelet runs, and once the pod
//! is terminated and its resources reclaimed sends the final delete with grace period 0 and
//! a UID precondition (seed 004), so a pod made anew under the same name is never touched.

use std::sync::Arc;

use registry::options::{DeleteOptions, ListOptions, PreconditionsSpec, WriteOptions};
use registry::{object, RegistryError, Store, Subresource};
use serde_json::Value;
use tracing::{debug, info};

use super::conditions::OWNED;

/// Conflicts retried with a fresh read before a write gives up until the next sync.
const WRITE_ATTEMPTS: usize = 5;

#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    Done,
    /// The pod is gone, or another pod holds its name now.
    Gone,
}

#[derive(Clone)]
pub struct StatusManager {
    pods: Arc<Store>,
}

impl StatusManager {
    pub fn new(pods: Arc<Store>) -> Self {
        Self { pods }
    }

    /// Writes `status` to the pod `namespace/name` with `uid`.
    pub async fn set_status(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        status: &Value,
    ) -> Result<Written, RegistryError> {
        let mut last = None;
        for attempt in 0..WRITE_ATTEMPTS {
            // The first read is the watch cache's copy (the store's read costs a range on etcd
            // per status write); the update's resourceVersion proves it current, and a conflict
            // or a pod the cache lacks reads the store.
            let cached = attempt == 0;
            let read = match cached {
                true => ListOptions::any(),
                false => ListOptions::default(),
            };
            let mut pod = match self.pods.get(Some(namespace), name, &read).await {
                Ok(pod) => pod,
                Err(RegistryError::NotFound { .. }) if cached => continue,
                Err(RegistryError::NotFound { .. }) => return Ok(Written::Gone),
                Err(e) => return Err(e),
            };
            if object::uid(&pod) != uid {
                return Ok(Written::Gone);
            }
            let mut status = status.clone();
            keep_foreign_conditions(&pod["status"]["conditions"], &mut status);
            if pod["status"] == status {
                return Ok(Written::Done);
            }
            pod["status"] = status;
            match self
                .pods
                .update(
                    Some(namespace),
                    name,
                    pod,
                    Subresource::Status,
                    &WriteOptions::by("kubelet"),
                )
                .await
            {
                Ok(_) => return Ok(Written::Done),
                Err(RegistryError::NotFound { .. }) => return Ok(Written::Gone),
                Err(e @ RegistryError::Conflict { .. }) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| RegistryError::BadRequest("status write failed".into())))
    }

    /// The final delete of a terminated pod.
    pub async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<(), RegistryError> {
        let opts = DeleteOptions {
            grace_period_seconds: Some(0),
            preconditions: Some(PreconditionsSpec {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        match self.pods.delete(Some(namespace), name, opts).await {
            Ok(_) => {
                info!(pod = %format!("{namespace}/{name}"), "pod fully terminated and removed");
                Ok(())
            }
            Err(RegistryError::NotFound { .. }) | Err(RegistryError::Conflict { .. }) => {
                debug!(pod = %format!("{namespace}/{name}"), "pod already gone or replaced");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// Conditions others own (PodScheduled, DisruptionTarget, readiness gates) as they are now
/// stored, with the kubelet's own from `status`: the kubelet never rolls them back.
fn keep_foreign_conditions(stored: &Value, status: &mut Value) {
    let owned = |c: &&Value| OWNED.contains(&c["type"].as_str().unwrap_or_default());
    let mut merged: Vec<Value> = stored
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| !owned(c))
        .cloned()
        .collect();
    merged.extend(
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(owned)
            .cloned(),
    );
    status["conditions"] = Value::Array(merged);
}
