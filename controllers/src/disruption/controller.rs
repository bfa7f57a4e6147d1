//! The controller: one queue of budgets, fed by budget changes and by changes of the pods
//! they select; each sync recomputes the status and writes it through the status subresource
//! only when it changed.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use registry::options::WriteOptions;
use registry::selector::labels::LabelSelector;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::Value;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::scale::Finders;
use super::status::{self, Expected};
use client::controller::Controller;
use client::controller_utils::SyncError;
use client::events::{EventRecorder, EventType};
use client::informer::{FactoryError, InformerFactory, SharedInformer, NAMESPACE_INDEX};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

#[derive(Debug, Error)]
pub enum DisruptionError {
    #[error("the registry serves no policy/v1 poddisruptionbudgets")]
    NoBudgets,
    #[error(transparent)]
    Informer(#[from] FactoryError),
}

#[derive(Clone, Debug)]
pub struct DisruptionControllerConfig {
    pub workers: usize,
}

impl Default for DisruptionControllerConfig {
    fn default() -> Self {
        Self { workers: 1 }
    }
}

pub struct DisruptionController {
    config: DisruptionControllerConfig,
    store: Arc<Store>,
    budgets: SharedInformer,
    pods: SharedInformer,
    finders: Finders,
    queue: RateLimitingQueue<String>,
    recorder: EventRecorder,
}

fn key(obj: &Value) -> String {
    format!("{}/{}", object::namespace(obj), object::name(obj))
}

/// A budget's selector; a missing one selects nothing, an empty one everything (upstream's
/// LabelSelectorAsSelector, as the controller uses it).
fn selector(pdb: &Value) -> Result<LabelSelector, String> {
    LabelSelector::from_label_selector_json(&pdb["spec"]["selector"])
        .map_err(|e| e.message().to_string())
}

impl DisruptionController {
    pub fn new(
        informers: &InformerFactory,
        config: DisruptionControllerConfig,
    ) -> Result<Arc<Self>, DisruptionError> {
        let store = informers
            .registry()
            .store("policy", "v1", "poddisruptionbudgets")
            .ok_or(DisruptionError::NoBudgets)?;
        Ok(Arc::new(Self {
            budgets: informers.informer_for(&store),
            store,
            pods: informers.informer("", "v1", "pods")?,
            finders: Finders {
                replica_sets: informers.informer("apps", "v1", "replicasets")?,
                deployments: informers.informer("apps", "v1", "deployments")?,
                replication_controllers: informers.informer("", "v1", "replicationcontrollers")?,
                stateful_sets: informers.informer("apps", "v1", "statefulsets")?,
            },
            queue: RateLimitingQueue::with_default_rate_limiter("disruption"),
            recorder: EventRecorder::new(informers.registry().clone(), "controllermanager"),
            config,
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let f = &self.finders;
        Controller::new("disruption-controller", self.clone(), self.queue.clone())
            .workers(self.config.workers)
            .primary(&self.budgets, "PodDisruptionBudget")
            .watches(&self.pods, |dc, pod| dc.budgets_of(pod))
            // Read to find each pod's controller and its scale.
            .reads(&f.replica_sets)
            .reads(&f.deployments)
            .reads(&f.replication_controllers)
            .reads(&f.stateful_sets)
            .run(stop, |dc, key| async move {
                let result = dc.sync(&key).await;
                if let Err(e) = &result {
                    warn!(budget = %key, error = %e, "syncing PodDisruptionBudget failed; retrying");
                }
                Next::from(result)
            })
            .await
    }

    /// The budgets whose selector matches the pod (upstream picks one; every one of them
    /// needs its counts refreshed, so all are queued).
    fn budgets_of(&self, pod: &Value) -> Vec<String> {
        self.budgets
            .indexer()
            .by_index(NAMESPACE_INDEX, object::namespace(pod))
            .unwrap_or_default()
            .iter()
            .filter(|pdb| selector(pdb).is_ok_and(|s| s.matches_labels(object::labels(pod))))
            .map(|pdb| key(pdb))
            .collect()
    }

    fn pods_of(&self, pdb: &Value) -> Result<Vec<Arc<Value>>, String> {
        let selector = selector(pdb)?;
        Ok(self
            .pods
            .indexer()
            .by_index_selected(NAMESPACE_INDEX, object::namespace(pdb), |pod| {
                pod.labels().matches(&selector)
            })
            .unwrap_or_default())
    }

    async fn sync(&self, key: &str) -> Result<Option<Duration>, SyncError> {
        let Some(pdb) = self.budgets.indexer().get(key) else {
            return Ok(None);
        };
        match self.try_sync(&pdb).await {
            Err(SyncError::Registry(e @ RegistryError::Conflict { .. })) => Err(e.into()),
            Err(e) => {
                warn!(budget = %key, error = %e, "failed to sync PodDisruptionBudget");
                self.write(status::failed(&pdb, &e.to_string())).await?;
                Err(e)
            }
            ok => ok,
        }
    }

    async fn try_sync(&self, pdb: &Value) -> Result<Option<Duration>, SyncError> {
        let pods = self.pods_of(pdb).map_err(|e| {
            self.recorder.event(
                pdb,
                EventType::Warning,
                "NoPods",
                format!("Failed to get pods: {e}"),
            );
            SyncError::Failed(e)
        })?;
        if pods.is_empty() {
            self.recorder
                .event(pdb, EventType::Normal, "NoPods", "No matching pods found");
        }
        let pods: Vec<&Value> = pods.iter().map(|p| p.as_ref()).collect();
        let mut unmanaged = Vec::new();
        let expected: Expected = status::expected(pdb, pods.len(), || {
            let scale = self.finders.expected_scale(&pods)?;
            unmanaged = scale.unmanaged;
            Ok(scale.expected)
        })
        .map_err(|e| {
            self.recorder.event(
                pdb,
                EventType::Warning,
                "CalculateExpectedPodCountFailed",
                format!("Failed to calculate the number of expected pods: {e}"),
            );
            SyncError::Failed(e)
        })?;
        if !unmanaged.is_empty() {
            self.recorder.event(
                pdb,
                EventType::Warning,
                "UnmanagedPods",
                format!(
                    "Pods selected by this PodDisruptionBudget (selector: {}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.",
                    pdb["spec"]["selector"]
                ),
            );
        }
        let now = Utc::now();
        let disrupted = status::disrupted_pods(pdb, &pods, now);
        for name in &disrupted.expired {
            if let Some(pod) = pods.iter().find(|p| object::name(p) == name) {
                self.recorder.event(
                    pod,
                    EventType::Warning,
                    "NotDeleted",
                    format!(
                        "Pod was expected by PDB {}/{} to be deleted but it wasn't",
                        object::namespace(pdb),
                        object::name(pdb)
                    ),
                );
            }
        }
        let healthy = status::healthy(&pods, &disrupted.pods);
        if let Some(new) = status::updated(pdb, expected, healthy, &disrupted.pods) {
            self.write(new).await?;
        }
        // Look again when the first awaited deletion is overdue.
        Ok(disrupted
            .recheck
            .and_then(|at| (at - now).to_std().ok())
            .map(|d| d + Duration::from_millis(100)))
    }

    async fn write(&self, pdb: Value) -> Result<(), SyncError> {
        let name = object::name(&pdb).to_string();
        let namespace = object::namespace(&pdb).to_string();
        self.store
            .update(
                Some(&namespace),
                &name,
                pdb,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await?;
        Ok(())
    }
}
