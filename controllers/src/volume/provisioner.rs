//! The simulated provisioner: a hostPath volume named `pvc-<claim uid>` with the claim's
//! size and access modes and the class's reclaim policy, made as upstream's in-tree
//! provisioning (provisionClaimOperation) makes one, events included.

use std::sync::Arc;

use registry::options::{ListOptions, WriteOptions};
use registry::{object, RegistryError, Subresource};
use serde_json::{json, Value};
use tracing::info;

use super::binder::set_annotation;
use super::controller::PersistentVolumeController;
use super::{
    ANN_BETA_STORAGE_PROVISIONER, ANN_BOUND_BY_CONTROLLER, ANN_PROVISIONED_BY, ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER, PROVISIONER, VOLUME_ROOT,
};
use client::controller_utils::SyncError;
use client::events::EventType;

/// The name upstream gives a provisioned volume.
pub(super) fn volume_name_for(claim: &Value) -> String {
    format!("pvc-{}", object::uid(claim))
}

impl PersistentVolumeController {
    /// The volume provisioned for `claim` (made now, or found from an earlier try) and the
    /// claim as it stands after being marked for the provisioner; None while the claim must
    /// wait (a WaitForFirstConsumer class with no node chosen) or cannot be provisioned.
    pub(super) async fn provision(
        &self,
        claim: &Arc<Value>,
        class: &Value,
    ) -> Result<Option<(Value, Value)>, SyncError> {
        let node = claim["metadata"]["annotations"][ANN_SELECTED_NODE]
            .as_str()
            .unwrap_or("");
        if class["volumeBindingMode"] == "WaitForFirstConsumer" && node.is_empty() {
            let why = "waiting for first consumer to be created before binding";
            self.recorder
                .event(claim, EventType::Normal, "WaitForFirstConsumer", why);
            return Ok(None);
        }
        if !claim["spec"]["selector"].is_null() {
            let why = format!(
                "claim.Spec.Selector is not supported for dynamic provisioning on {PROVISIONER}"
            );
            self.recorder
                .event(claim, EventType::Warning, "ProvisioningFailed", why);
            return Ok(None);
        }
        let Some(size) = claim["spec"]["resources"]["requests"]["storage"]
            .as_str()
            .filter(|s| !s.is_empty())
        else {
            let why = "claim requests no storage size (spec.resources.requests.storage)";
            self.recorder
                .event(claim, EventType::Warning, "ProvisioningFailed", why);
            return Ok(None);
        };
        let claim = self.mark_provisioner(claim).await?;
        let name = volume_name_for(&claim);
        if let Some(found) = self.existing(&name).await? {
            return Ok(Some((found, claim)));
        }
        let volume = new_volume(&name, &claim, class, size, node);
        let created = match (self.volume_store)
            .create(None, volume, &WriteOptions::default())
            .await
        {
            Ok(v) => v,
            // Made by an earlier try this informer has not shown yet.
            Err(RegistryError::AlreadyExists { .. }) => match self.existing(&name).await? {
                Some(v) => v,
                None => return Ok(None),
            },
            Err(e) => return Err(e.into()),
        };
        let why = format!("Successfully provisioned volume {name} using {PROVISIONER}");
        self.recorder
            .event(&claim, EventType::Normal, "ProvisioningSucceeded", why);
        info!(claim = %super::controller::claim_key(&claim), volume = %name, "provisioned volume");
        Ok(Some((created, claim)))
    }

    /// Upstream's setClaimProvisioner: the claim says which provisioner works on it.
    async fn mark_provisioner(&self, claim: &Arc<Value>) -> Result<Value, SyncError> {
        let mut marked = (**claim).clone();
        let mut changed = set_annotation(&mut marked, ANN_STORAGE_PROVISIONER, PROVISIONER);
        changed |= set_annotation(&mut marked, ANN_BETA_STORAGE_PROVISIONER, PROVISIONER);
        if !changed {
            return Ok(marked);
        }
        let ns = object::namespace(claim).to_string();
        let name = object::name(claim).to_string();
        let (updated, _) = self
            .claim_store
            .update(
                Some(&ns),
                &name,
                marked,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await?;
        Ok(updated)
    }

    async fn existing(&self, name: &str) -> Result<Option<Value>, SyncError> {
        if let Some(v) = self.volumes.indexer().get(name) {
            return Ok(Some((*v).clone()));
        }
        match self
            .volume_store
            .get(None, name, &ListOptions::default())
            .await
        {
            Ok(v) => Ok(Some(v)),
            Err(RegistryError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// The volume for `claim`: bound to it from the start (claimRef with its UID), as upstream's
/// provisioner returns it.
fn new_volume(name: &str, claim: &Value, class: &Value, size: &str, node: &str) -> Value {
    let access_modes = match &claim["spec"]["accessModes"] {
        Value::Array(modes) if !modes.is_empty() => json!(modes),
        _ => json!(["ReadWriteOnce"]),
    };
    let mut spec = json!({
        "capacity": {"storage": size},
        "accessModes": access_modes,
        "persistentVolumeReclaimPolicy": class["reclaimPolicy"].as_str().unwrap_or("Delete"),
        "storageClassName": object::name(class),
        "volumeMode": claim["spec"]["volumeMode"].as_str().unwrap_or("Filesystem"),
        "hostPath": {"path": format!("{VOLUME_ROOT}/{name}"), "type": "DirectoryOrCreate"},
        "claimRef": {
            "kind": "PersistentVolumeClaim", "apiVersion": "v1",
            "namespace": object::namespace(claim), "name": object::name(claim),
            "uid": object::uid(claim), "resourceVersion": object::resource_version(claim),
        },
    });
    if let Some(options) = class["mountOptions"].as_array() {
        spec["mountOptions"] = json!(options);
    }
    // A volume made for a chosen node stays on it, as local-path provisioners pin theirs.
    if !node.is_empty() {
        spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}});
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "annotations": {
                ANN_PROVISIONED_BY: PROVISIONER,
                ANN_BOUND_BY_CONTROLLER: "yes",
            },
        },
        "spec": spec,
    })
}
