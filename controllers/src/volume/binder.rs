//! Upstream's syncClaim / syncVolume: each side of a binding is put right from what the
//! informers show, one idempotent step at a time, so a sync interrupted anywhere is finished
//! by the next.

use std::sync::Arc;

use registry::options::{DeleteOptions, PreconditionsSpec, WriteOptions};
use registry::{object, RegistryError, Subresource};
use serde_json::{json, Value};
use tracing::{debug, info};

use super::controller::{claim_key, claim_ref_key, PersistentVolumeController};
use super::{
    ANN_BETA_STORAGE_CLASS, ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_PROVISIONED_BY,
    PROVISIONER,
};
use client::controller_utils::SyncError;
use client::events::EventType;

/// The class a claim asks for: spec.storageClassName, or the legacy annotation.
pub(super) fn claim_class(claim: &Value) -> &str {
    claim["metadata"]["annotations"][ANN_BETA_STORAGE_CLASS]
        .as_str()
        .or_else(|| claim["spec"]["storageClassName"].as_str())
        .unwrap_or("")
}

fn annotation<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj["metadata"]["annotations"][key].as_str().unwrap_or("")
}

/// Sets an annotation; true when that changed the object.
pub(super) fn set_annotation(obj: &mut Value, key: &str, value: &str) -> bool {
    if annotation(obj, key) == value {
        return false;
    }
    let annotations = object::meta_mut(obj)
        .entry("annotations")
        .or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[key] = json!(value);
    true
}

fn claim_volume(claim: &Value) -> &str {
    claim["spec"]["volumeName"].as_str().unwrap_or("")
}

fn phase(obj: &Value) -> &str {
    obj["status"]["phase"].as_str().unwrap_or("")
}

/// Whether `volume`'s claimRef names `claim`: the same claim (by UID) or, for a volume
/// pre-bound by name with no UID yet, the same namespace and name.
fn refers_to(volume: &Value, claim: &Value) -> bool {
    if claim_ref_key(volume).as_deref() != Some(claim_key(claim).as_str()) {
        return false;
    }
    let uid = volume["spec"]["claimRef"]["uid"].as_str().unwrap_or("");
    uid.is_empty() || uid == object::uid(claim)
}

/// A volume's status in `phase` from now (lastPhaseTransitionTime, as upstream since 1.29).
fn volume_status(phase: &str, message: &str) -> Value {
    let mut status = json!({"phase": phase, "lastPhaseTransitionTime": object::now()});
    if !message.is_empty() {
        status["message"] = json!(message);
    }
    status
}

impl PersistentVolumeController {
    pub(super) async fn sync_claim(&self, key: &str) -> Result<(), SyncError> {
        let Some(claim) = self.claims.indexer().get(key) else {
            return Ok(());
        };
        if object::deletion_timestamp(&claim).is_some() {
            return Ok(());
        }
        let name = claim_volume(&claim);
        if name.is_empty() {
            return self.sync_unbound_claim(&claim).await;
        }
        let Some(volume) = self.volumes.indexer().get(name) else {
            if annotation(&claim, ANN_BIND_COMPLETED).is_empty() {
                // Pre-bound to a volume that does not exist (yet).
                return self.claim_phase(&claim, "Pending").await;
            }
            let why = "Bound claim has lost its PersistentVolume. Data on the volume is lost!";
            return self.lose_claim(&claim, why).await;
        };
        if volume["spec"]["claimRef"].is_null() || refers_to(&volume, &claim) {
            return self.bind(&volume, &claim).await;
        }
        if annotation(&claim, ANN_BIND_COMPLETED).is_empty() {
            let why = format!("volume \"{name}\" already bound to a different claim.");
            self.recorder
                .event(&claim, EventType::Warning, "FailedBinding", why);
            return self.claim_phase(&claim, "Pending").await;
        }
        let why = "Two claims are bound to the same volume, this one is bound incorrectly";
        self.lose_claim(&claim, why).await
    }

    /// A claim naming no volume: one pre-bound to it, else one provisioned for it.
    async fn sync_unbound_claim(&self, claim: &Arc<Value>) -> Result<(), SyncError> {
        if !annotation(claim, ANN_BIND_COMPLETED).is_empty() {
            let why = "Bound claim has lost reference to PersistentVolume. Data lost!";
            return self.lose_claim(claim, why).await;
        }
        let prebound = self
            .volumes
            .indexer()
            .list()
            .into_iter()
            .find(|v| refers_to(v, claim) && object::deletion_timestamp(v).is_none());
        if let Some(volume) = prebound {
            return self.bind(&volume, claim).await;
        }
        let class_name = claim_class(claim);
        if class_name.is_empty() {
            let why = "no persistent volumes available for this claim and no storage class is set";
            self.recorder
                .event(claim, EventType::Normal, "FailedBinding", why);
            return self.claim_phase(claim, "Pending").await;
        }
        let Some(class) = self.classes.indexer().get(class_name) else {
            let why = format!("storageclass.storage.k8s.io \"{class_name}\" not found");
            self.recorder
                .event(claim, EventType::Warning, "ProvisioningFailed", why);
            return self.claim_phase(claim, "Pending").await;
        };
        let provisioner = class["provisioner"].as_str().unwrap_or("");
        if provisioner != PROVISIONER {
            let why = format!("Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.");
            self.recorder
                .event(claim, EventType::Normal, "ExternalProvisioning", why);
            return self.claim_phase(claim, "Pending").await;
        }
        match self.provision(claim, &class).await? {
            Some((volume, claim)) => self.bind(&volume, &claim).await,
            None => self.claim_phase(claim, "Pending").await,
        }
    }

    /// Upstream's bind: the volume's claimRef, its phase, the claim's volumeName and
    /// annotations, the claim's phase; each written only when it differs.
    pub(super) async fn bind(&self, volume: &Value, claim: &Value) -> Result<(), SyncError> {
        let opts = WriteOptions::default();
        let volume_name = object::name(volume).to_string();
        let mut volume = volume.clone();
        let claim_ref = json!({
            "kind": "PersistentVolumeClaim", "apiVersion": "v1",
            "namespace": object::namespace(claim), "name": object::name(claim),
            "uid": object::uid(claim), "resourceVersion": object::resource_version(claim),
        });
        if volume["spec"]["claimRef"]["uid"] != claim_ref["uid"] {
            if volume["spec"]["claimRef"].is_null() {
                set_annotation(&mut volume, ANN_BOUND_BY_CONTROLLER, "yes");
            }
            volume["spec"]["claimRef"] = claim_ref;
            volume = (self.volume_store)
                .update(None, &volume_name, volume, Subresource::Main, &opts)
                .await?
                .0;
        }
        if phase(&volume) != "Bound" {
            volume["status"] = volume_status("Bound", "");
            (self.volume_store)
                .update(
                    None,
                    &volume_name,
                    volume.clone(),
                    Subresource::Status,
                    &opts,
                )
                .await?;
        }
        let namespace = object::namespace(claim).to_string();
        let ns = Some(namespace.as_str());
        let name = object::name(claim).to_string();
        let mut claim = claim.clone();
        let mut changed = false;
        if claim_volume(&claim) != volume_name {
            claim["spec"]["volumeName"] = json!(volume_name);
            set_annotation(&mut claim, ANN_BOUND_BY_CONTROLLER, "yes");
            changed = true;
        }
        changed |= set_annotation(&mut claim, ANN_BIND_COMPLETED, "yes");
        if changed {
            claim = (self.claim_store)
                .update(ns, &name, claim, Subresource::Main, &opts)
                .await?
                .0;
        }
        let status = json!({
            "phase": "Bound",
            "accessModes": volume["spec"]["accessModes"].clone(),
            "capacity": volume["spec"]["capacity"].clone(),
        });
        let current = &claim["status"];
        if ["phase", "accessModes", "capacity"]
            .iter()
            .any(|f| current[f] != status[f])
        {
            if let Some(map) = claim.as_object_mut() {
                map.insert("status".into(), status);
            }
            (self.claim_store)
                .update(ns, &name, claim, Subresource::Status, &opts)
                .await?;
            info!(claim = %format!("{namespace}/{name}"), volume = %volume_name, "bound claim");
        }
        Ok(())
    }

    async fn claim_phase(&self, claim: &Value, phase_now: &str) -> Result<(), SyncError> {
        if phase(claim) == phase_now {
            return Ok(());
        }
        let mut claim = claim.clone();
        claim["status"]["phase"] = json!(phase_now);
        let ns = object::namespace(&claim).to_string();
        let name = object::name(&claim).to_string();
        self.claim_store
            .update(
                Some(&ns),
                &name,
                claim,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await?;
        Ok(())
    }

    async fn lose_claim(&self, claim: &Value, why: &str) -> Result<(), SyncError> {
        if phase(claim) != "Lost" {
            self.recorder
                .event(claim, EventType::Warning, "ClaimLost", why);
        }
        self.claim_phase(claim, "Lost").await
    }

    async fn volume_phase(
        &self,
        volume: &Value,
        phase_now: &str,
        message: &str,
    ) -> Result<(), SyncError> {
        if phase(volume) == phase_now
            && volume["status"]["message"].as_str().unwrap_or("") == message
        {
            return Ok(());
        }
        let mut volume = volume.clone();
        volume["status"] = volume_status(phase_now, message);
        let name = object::name(&volume).to_string();
        self.volume_store
            .update(
                None,
                &name,
                volume,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await?;
        Ok(())
    }

    pub(super) async fn sync_volume(&self, name: &str) -> Result<(), SyncError> {
        let Some(volume) = self.volumes.indexer().get(name) else {
            return Ok(());
        };
        if object::deletion_timestamp(&volume).is_some() {
            return Ok(());
        }
        let Some(claim_key) = claim_ref_key(&volume) else {
            return self.volume_phase(&volume, "Available", "").await;
        };
        let claim = self.claims.indexer().get(&claim_key);
        let uid = volume["spec"]["claimRef"]["uid"].as_str().unwrap_or("");
        if uid.is_empty() {
            // Pre-bound by name: available to that claim only, which binds it when it comes.
            return self.volume_phase(&volume, "Available", "").await;
        }
        match claim {
            Some(claim) if object::uid(&claim) == uid => {
                if claim_volume(&claim) == name {
                    self.volume_phase(&volume, "Bound", "").await
                } else {
                    // The claim side of the binding follows from its own sync.
                    Ok(())
                }
            }
            _ => self.reclaim(&volume).await,
        }
    }

    /// The volume's claim is gone: Released, then its reclaim policy.
    async fn reclaim(&self, volume: &Value) -> Result<(), SyncError> {
        let name = object::name(volume);
        let policy = volume["spec"]["persistentVolumeReclaimPolicy"]
            .as_str()
            .unwrap_or("Retain");
        match policy {
            "Delete" if annotation(volume, ANN_PROVISIONED_BY) == PROVISIONER => {
                self.volume_phase(volume, "Released", "").await?;
                let opts = DeleteOptions {
                    preconditions: Some(PreconditionsSpec {
                        uid: Some(object::uid(volume).to_string()),
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                match self.volume_store.delete(None, name, opts).await {
                    Ok(_) | Err(RegistryError::NotFound { .. }) => {
                        info!(volume = name, "deleted released volume");
                        Ok(())
                    }
                    Err(e) => Err(e.into()),
                }
            }
            "Delete" => {
                let why = format!("error getting deleter volume plugin for volume \"{name}\": no deletable volume plugin matched");
                if phase(volume) != "Failed" {
                    self.recorder.event(
                        volume,
                        EventType::Warning,
                        "VolumeFailedDelete",
                        why.clone(),
                    );
                }
                self.volume_phase(volume, "Failed", &why).await
            }
            "Recycle" => {
                let why = "No recycler plugin found for the volume!";
                if phase(volume) != "Failed" {
                    self.recorder
                        .event(volume, EventType::Warning, "VolumeFailedRecycle", why);
                }
                self.volume_phase(volume, "Failed", why).await
            }
            _ => {
                debug!(volume = name, "volume is retained");
                self.volume_phase(volume, "Released", "").await
            }
        }
    }
}
