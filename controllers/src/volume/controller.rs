//! The controller's wiring: informers on claims, volumes and classes, one queue of both
//! kinds of keys, and the workers that sync them (`binder`).

use std::sync::Arc;

use registry::{object, Store};
use serde_json::Value;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use client::controller::Controller;
use client::events::EventRecorder;
use client::informer::{FactoryError, InformerFactory, Notification, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

const WORKERS: usize = 2;

#[derive(Debug, Error)]
pub enum PersistentVolumeControllerError {
    #[error(transparent)]
    Informer(#[from] FactoryError),
    #[error("the registry serves no {0}")]
    Missing(&'static str),
}

/// What the queue holds: upstream keeps a claim queue and a volume queue; one queue of
/// tagged keys does the same with one set of workers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Key {
    /// `namespace/name` of a claim.
    Claim(String),
    /// The name of a volume.
    Volume(String),
}

pub struct PersistentVolumeController {
    pub(super) claims: SharedInformer,
    pub(super) volumes: SharedInformer,
    pub(super) classes: SharedInformer,
    pub(super) claim_store: Arc<Store>,
    pub(super) volume_store: Arc<Store>,
    pub(super) recorder: EventRecorder,
    queue: RateLimitingQueue<Key>,
}

impl PersistentVolumeController {
    pub fn new(informers: &InformerFactory) -> Result<Arc<Self>, PersistentVolumeControllerError> {
        let registry = informers.registry();
        let claim_store = registry.store("", "v1", "persistentvolumeclaims").ok_or(
            PersistentVolumeControllerError::Missing("persistentvolumeclaims"),
        )?;
        let volume_store = registry.store("", "v1", "persistentvolumes").ok_or(
            PersistentVolumeControllerError::Missing("persistentvolumes"),
        )?;
        Ok(Arc::new(Self {
            claims: informers.informer_for(&claim_store),
            volumes: informers.informer_for(&volume_store),
            classes: informers.informer("storage.k8s.io", "v1", "storageclasses")?,
            claim_store,
            volume_store,
            recorder: EventRecorder::new(registry.clone(), "persistentvolume-controller"),
            queue: RateLimitingQueue::with_default_rate_limiter("volumes"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let name = "persistentvolume-binder-controller";
        Controller::new(name, self.clone(), self.queue.clone())
            .workers(WORKERS)
            .handles(&self.claims, |pv, n| pv.on_claim(&n))
            .watches(&self.volumes, |_, volume| {
                let claim = claim_ref_key(volume).map(Key::Claim);
                [Some(Key::Volume(object::name(volume).to_string())), claim]
                    .into_iter()
                    .flatten()
            })
            // Claims waiting for this class may be provisioned now.
            .watches(&self.classes, |pv, class| pv.claims_waiting_for(class))
            .run(stop, |pv, key| async move {
                let result = match &key {
                    Key::Claim(k) => pv.sync_claim(k).await,
                    Key::Volume(k) => pv.sync_volume(k).await,
                };
                Next::after_sync(
                    result,
                    |e| warn!(?key, error = %e, "syncing persistent volumes failed; retrying"),
                )
            })
            .await
    }

    fn on_claim(&self, n: &Notification) {
        for claim in n.states() {
            self.queue.add(Key::Claim(claim_key(claim)));
            // A claim that went releases its volume.
            if let Some(volume) = claim["spec"]["volumeName"].as_str() {
                if matches!(n, Notification::Delete(_)) && !volume.is_empty() {
                    self.queue.add(Key::Volume(volume.to_string()));
                }
            }
        }
    }

    fn claims_waiting_for(&self, class: &Value) -> Vec<Key> {
        let unbound = |claim: &Value| {
            claim["spec"]["volumeName"]
                .as_str()
                .unwrap_or("")
                .is_empty()
        };
        self.claims
            .indexer()
            .list()
            .into_iter()
            .filter(|claim| {
                super::binder::claim_class(claim) == object::name(class) && unbound(claim)
            })
            .map(|claim| Key::Claim(claim_key(&claim)))
            .collect()
    }
}

pub(super) fn claim_key(claim: &Value) -> String {
    format!("{}/{}", object::namespace(claim), object::name(claim))
}

/// `namespace/name` of the claim a volume points at.
pub(super) fn claim_ref_key(volume: &Value) -> Option<String> {
    let claim_ref = &volume["spec"]["claimRef"];
    let name = claim_ref["name"].as_str().filter(|n| !n.is_empty())?;
    let namespace = claim_ref["namespace"].as_str().unwrap_or("");
    Some(format!("{namespace}/{name}"))
}
