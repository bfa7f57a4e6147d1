//! The cluster's default StorageClass, `standard`, served by this module's simulated
//! provisioner: made at start when absent and left alone afterwards, as the
//! addon manager's EnsureExists mode (and k3s's `local-path`) treat theirs, so a user's edits
//! stand; a deleted one comes back at the next start.

use std::sync::Arc;

use registry::options::WriteOptions;
use registry::{Registry, RegistryError};
use serde_json::json;
use tracing::info;

use super::PROVISIONER;

const NAME: &str = "standard";

/// Creates the default class unless one of its name exists (edited or not).
pub async fn ensure_default_class(registry: &Arc<Registry>) -> Result<(), RegistryError> {
    let Some(classes) = registry.store("storage.k8s.io", "v1", "storageclasses") else {
        return Ok(());
    };
    let class = json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": NAME,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            "labels": {"addonmanager.kubernetes.io/mode": "EnsureExists"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    });
    match classes.create(None, class, &WriteOptions::default()).await {
        Ok(_) => {
            info!(
                class = NAME,
                provisioner = PROVISIONER,
                "created the default storage class"
            );
            Ok(())
        }
        Err(RegistryError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}
