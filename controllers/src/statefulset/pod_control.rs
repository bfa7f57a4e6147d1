//! Writing a StatefulSet's pods and claims (upstream's StatefulPodControl): claims before
//! the pod that mounts them, each outcome recorded as an event on the set in upstream's
//! words, and claims' owner references kept to the retention policy.

use std::sync::Arc;

use registry::options::{DeleteOptions, WriteOptions};
use registry::{object, RegistryError, Store, Subresource};
use serde_json::Value;

use super::identity::{claims_for, ordinal};
use super::retention::desired_claim_references;
use client::controller_utils::{patch_owner_references, SyncError};
use client::events::{EventRecorder, EventType};
use client::informer::SharedInformer;

pub(super) struct StatefulPodControl {
    pub pods: Arc<Store>,
    pub claims: Arc<Store>,
    pub claim_informer: SharedInformer,
    pub recorder: EventRecorder,
}

/// Whether a create's failure means the object is already there.
fn already_exists(e: &RegistryError) -> bool {
    matches!(e, RegistryError::AlreadyExists { .. })
}

impl StatefulPodControl {
    /// Creates the pod's missing claims, then the pod. A pod already there (the informer
    /// had not shown it yet) is not an error.
    pub async fn create_pod(&self, set: &Value, pod: Value) -> Result<(), SyncError> {
        self.create_claims(set, &pod).await?;
        let name = object::name(&pod).to_string();
        let set_name = object::name(set);
        match self
            .pods
            .create(Some(object::namespace(set)), pod, &WriteOptions::default())
            .await
        {
            Ok(_) => {
                let message = format!("create Pod {name} in StatefulSet {set_name} successful");
                self.recorder
                    .event(set, EventType::Normal, "SuccessfulCreate", message);
                Ok(())
            }
            Err(e) if already_exists(&e) => Ok(()),
            Err(e) => {
                let message = format!(
                    "create Pod {name} in StatefulSet {set_name} failed error: {}",
                    e.status().message
                );
                self.recorder
                    .event(set, EventType::Warning, "FailedCreate", message);
                Err(e.into())
            }
        }
    }

    /// Creates the claims of the pod's ordinal that do not exist yet.
    pub async fn create_claims(&self, set: &Value, pod: &Value) -> Result<(), SyncError> {
        let Some(ordinal) = ordinal(pod) else {
            return Ok(());
        };
        let namespace = object::namespace(set);
        for mut claim in claims_for(set, ordinal) {
            let name = object::name(&claim).to_string();
            if self
                .claim_informer
                .indexer()
                .get(&format!("{namespace}/{name}"))
                .is_some()
            {
                continue;
            }
            let refs = desired_claim_references(set, pod, &[]);
            if !refs.is_empty() {
                claim["metadata"]["ownerReferences"] = Value::Array(refs);
            }
            let pod_name = object::name(pod);
            let set_name = object::name(set);
            match self
                .claims
                .create(Some(namespace), claim, &WriteOptions::default())
                .await
            {
                Ok(_) => {
                    let message = format!(
                        "create Claim {name} Pod {pod_name} in StatefulSet {set_name} success"
                    );
                    self.recorder
                        .event(set, EventType::Normal, "SuccessfulCreate", message);
                }
                Err(e) if already_exists(&e) => {}
                Err(e) => {
                    let message = format!(
                        "create Claim {name} for Pod {pod_name} in StatefulSet {set_name} failed error: {}",
                        e.status().message
                    );
                    self.recorder
                        .event(set, EventType::Warning, "FailedCreate", message);
                    return Err(e.into());
                }
            }
        }
        Ok(())
    }

    /// Deletes the pod, recording the outcome on the set. A pod already gone is not an error.
    pub async fn delete_pod(&self, set: &Value, pod: &Value) -> Result<(), SyncError> {
        let name = object::name(pod);
        let set_name = object::name(set);
        let options = DeleteOptions {
            preconditions: Some(registry::options::PreconditionsSpec {
                uid: Some(object::uid(pod).to_string()),
                resource_version: None,
            }),
            ..DeleteOptions::default()
        };
        match self
            .pods
            .delete(Some(object::namespace(pod)), name, options)
            .await
        {
            Ok(_) => {
                let message = format!("delete Pod {name} in StatefulSet {set_name} successful");
                self.recorder
                    .event(set, EventType::Normal, "SuccessfulDelete", message);
                Ok(())
            }
            // Gone, or replaced by another pod of the name: nothing of ours to delete.
            Err(RegistryError::NotFound { .. } | RegistryError::Conflict { .. }) => Ok(()),
            Err(e) => {
                let message = format!(
                    "delete Pod {name} in StatefulSet {set_name} failed error: {}",
                    e.status().message
                );
                self.recorder
                    .event(set, EventType::Warning, "FailedDelete", message);
                Err(e.into())
            }
        }
    }

    /// Writes the pod back with its identity restored (labels a user changed).
    pub async fn update_pod(&self, set: &Value, pod: Value) -> Result<(), SyncError> {
        let name = object::name(&pod).to_string();
        let set_name = object::name(set);
        match self
            .pods
            .update(
                Some(object::namespace(set)),
                &name,
                pod,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(RegistryError::NotFound { .. }) => Ok(()),
            Err(e) => {
                let message = format!(
                    "update Pod {name} in StatefulSet {set_name} failed error: {}",
                    e.status().message
                );
                self.recorder
                    .event(set, EventType::Warning, "FailedUpdate", message);
                Err(e.into())
            }
        }
    }

    /// Brings the owner references of the pod's existing claims in line with the set's
    /// retention policy (upstream's UpdatePodClaimForRetentionPolicy).
    pub async fn update_claims_for_retention(
        &self,
        set: &Value,
        pod: &Value,
    ) -> Result<(), SyncError> {
        let Some(ordinal) = ordinal(pod) else {
            return Ok(());
        };
        let namespace = object::namespace(set);
        for wanted in claims_for(set, ordinal) {
            let key = format!("{namespace}/{}", object::name(&wanted));
            let Some(claim) = self.claim_informer.indexer().get(&key) else {
                continue;
            };
            let current = claim["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if desired_claim_references(set, pod, &current) == current {
                continue;
            }
            let result = patch_owner_references(
                &self.claims,
                Some(namespace),
                object::name(&claim),
                object::uid(&claim),
                Some((*claim).clone()),
                |refs| {
                    let next = desired_claim_references(set, pod, refs);
                    (next != refs).then_some(next)
                },
            )
            .await;
            match result {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Whether the pod's claims carry the owner references the policy wants.
    pub fn claims_match_retention(&self, set: &Value, pod: &Value) -> bool {
        let Some(ordinal) = ordinal(pod) else {
            return true;
        };
        let namespace = object::namespace(set);
        claims_for(set, ordinal).iter().all(|wanted| {
            let key = format!("{namespace}/{}", object::name(wanted));
            self.claim_informer.indexer().get(&key).is_none_or(|claim| {
                let current = claim["metadata"]["ownerReferences"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                desired_claim_references(set, pod, &current) == current
            })
        })
    }
}
