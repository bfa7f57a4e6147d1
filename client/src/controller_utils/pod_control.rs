//! Creating and deleting pods for a controller (upstream's RealPodControl): pods are made from
//! the controller's template with its controller reference, and each outcome is recorded as
//! an event on the controller (SuccessfulCreate / FailedCreate, SuccessfulDelete /
//! FailedDelete), as `kubectl describe` shows upstream.

use std::sync::Arc;

use registry::options::{DeleteOptions, WriteOptions};
use registry::{object, Store};
use serde_json::{json, Map, Value};

use super::SyncError;
use crate::events::{EventRecorder, EventType};

#[derive(Clone)]
pub struct PodControl {
    pods: Arc<Store>,
    recorder: EventRecorder,
}

/// A pod as a controller makes it from `template` (upstream's GetPodFromTemplate): the
/// template's labels, annotations, finalizers and spec, a name generated from `prefix`, and
/// the controller reference.
pub fn pod_from_template(template: &Value, prefix: &str, controller_ref: Value) -> Value {
    let meta = &template["metadata"];
    let mut metadata = Map::new();
    metadata.insert("generateName".into(), json!(format!("{prefix}-")));
    for field in ["labels", "annotations", "finalizers"] {
        if let Some(v) = meta.get(field).filter(|v| !v.is_null()) {
            metadata.insert(field.into(), v.clone());
        }
    }
    metadata.insert("ownerReferences".into(), json!([controller_ref]));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

impl PodControl {
    pub fn new(pods: Arc<Store>, recorder: EventRecorder) -> Self {
        Self { pods, recorder }
    }

    pub fn recorder(&self) -> &EventRecorder {
        &self.recorder
    }

    /// Creates `pod` in the owner's namespace, recording the outcome on the owner.
    pub async fn create(&self, owner: &Value, pod: Value) -> Result<Value, SyncError> {
        let namespace = object::namespace(owner);
        match self
            .pods
            .create(Some(namespace), pod, &WriteOptions::default())
            .await
        {
            Ok(created) => {
                let message = format!("Created pod: {}", object::name(&created));
                self.recorder
                    .event(owner, EventType::Normal, "SuccessfulCreate", message);
                Ok(created)
            }
            Err(e) => {
                let message = format!("Error creating: {}", e.status().message);
                self.recorder
                    .event(owner, EventType::Warning, "FailedCreate", message);
                Err(e.into())
            }
        }
    }

    /// Deletes the pod `name` of the owner's namespace (background propagation), recording
    /// the outcome on the owner. A pod already gone is not an error.
    pub async fn delete(&self, owner: &Value, name: &str) -> Result<(), SyncError> {
        let namespace = object::namespace(owner);
        match self
            .pods
            .delete(Some(namespace), name, DeleteOptions::default())
            .await
        {
            Ok(_) => {
                let message = format!("Deleted pod: {name}");
                self.recorder
                    .event(owner, EventType::Normal, "SuccessfulDelete", message);
                Ok(())
            }
            Err(registry::RegistryError::NotFound { .. }) => Ok(()),
            Err(e) => {
                let message = format!("Error deleting: {}", e.status().message);
                self.recorder
                    .event(owner, EventType::Warning, "FailedDelete", message);
                Err(e.into())
            }
        }
    }
}
