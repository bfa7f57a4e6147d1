//! The horizontal pod autoscaler controller (upstream's pkg/controller/podautoscaler): every
//! HorizontalPodAutoscaler is looked at every sync period (15 s,
//! `--horizontal-pod-autoscaler-sync-period`). It reads its target's `/scale`; a target
//! outside minReplicas..maxReplicas is scaled into the range; otherwise the replica count
//! follows the metrics (`compute`: resource metrics from the metrics API the server gives it,
//! `source`; the replica calculator, `replicas`), stabilized and rate-limited (`normalize`).
//! A metric that cannot be read is reported in the ScalingActive condition and events, as on
//! a cluster without metrics-server. Conditions, events and status follow upstream's words.

mod compute;
mod metrics;
mod normalize;
mod replicas;
pub mod source;
mod status;

use std::sync::Arc;
use std::time::Duration;

use registry::options::WriteOptions;
use registry::store::subresources::ScaleChange;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use client::controller::Controller;
use client::events::{EventRecorder, EventType};
use client::informer::{InformerFactory, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

use status::{set_condition, set_status};

/// How often each autoscaler is looked at by default (--horizontal-pod-autoscaler-sync-period).
pub const SYNC_PERIOD: Duration = Duration::from_secs(15);

/// How the controller runs.
#[derive(Clone, Debug)]
pub struct HorizontalConfig {
    pub sync_period: Duration,
    /// The resource metrics API; None: every metric fails as without metrics-server.
    pub metrics: Option<source::MetricsClient>,
}

impl Default for HorizontalConfig {
    fn default() -> Self {
        Self {
            sync_period: SYNC_PERIOD,
            metrics: None,
        }
    }
}
const WORKERS: usize = 5;
const MANAGER: &str = "horizontal-pod-autoscaler";

#[derive(Debug, Error)]
pub enum HorizontalError {
    #[error("the registry serves no autoscaling/v2 horizontalpodautoscalers")]
    NoAutoscalers,
}

pub struct HorizontalController {
    autoscalers: SharedInformer,
    store: Arc<Store>,
    registry: Arc<registry::Registry>,
    recorder: EventRecorder,
    queue: RateLimitingQueue<String>,
    config: HorizontalConfig,
    normalizer: normalize::Normalizer,
}

/// Why the target's scale could not be read.
fn scale_error(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl HorizontalController {
    pub fn new(
        informers: &InformerFactory,
        config: HorizontalConfig,
    ) -> Result<Arc<Self>, HorizontalError> {
        let registry = informers.registry().clone();
        let store = registry
            .store("autoscaling", "v2", "horizontalpodautoscalers")
            .ok_or(HorizontalError::NoAutoscalers)?;
        Ok(Arc::new(Self {
            autoscalers: informers.informer_for(&store),
            store,
            recorder: EventRecorder::new(registry.clone(), MANAGER),
            registry,
            queue: RateLimitingQueue::with_default_rate_limiter("horizontalpodautoscaler"),
            config,
            normalizer: normalize::Normalizer::default(),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new(
            "horizontal-pod-autoscaler",
            self.clone(),
            self.queue.clone(),
        )
        .workers(WORKERS)
        .primary(&self.autoscalers, "HorizontalPodAutoscaler")
        .run(stop, |c, key| async move {
            match c.sync(&key).await {
                Ok(true) => Next::After(c.config.sync_period),
                Ok(false) => {
                    c.normalizer.forget(&key);
                    Next::Done
                }
                Err(e) => {
                    warn!(hpa = %key, error = %e, "syncing the autoscaler failed; retrying");
                    Next::Retry
                }
            }
        })
        .await
    }

    /// The store serving the target's kind, and the target's name.
    fn target_store(&self, target: &Value) -> Result<Arc<Store>, String> {
        let api_version = target["apiVersion"].as_str().unwrap_or_default();
        let kind = target["kind"].as_str().unwrap_or_default();
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let catalogue = self.registry.catalogue();
        let info = catalogue
            .by_kind(group, kind)
            .ok_or_else(|| format!("no matches for kind {kind:?} in group {group:?}"))?;
        self.registry
            .store(group, version, &info.plural)
            .or_else(|| self.registry.store(group, &info.version, &info.plural))
            .ok_or_else(|| format!("no matches for kind {kind:?} in version {api_version:?}"))
    }

    /// One look at an autoscaler; whether it is still there (and so looked at again).
    async fn sync(&self, key: &str) -> Result<bool, RegistryError> {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        let Some(shared) = self.autoscalers.indexer().get(key) else {
            return Ok(false);
        };
        let original = Value::clone(&shared);
        let mut hpa = original.clone();
        let spec = hpa["spec"].clone();
        let target = &spec["scaleTargetRef"];
        let scale = match self.target_store(target) {
            Ok(store) => store
                .get_scale(Some(namespace), target["name"].as_str().unwrap_or_default())
                .await
                .map_err(scale_error),
            Err(e) => Err(e),
        };
        let mut scale = match scale {
            Ok(scale) => scale,
            Err(e) => {
                self.recorder
                    .event(&hpa, EventType::Warning, "FailedGetScale", e.clone());
                set_condition(
                    &mut hpa,
                    "AbleToScale",
                    "False",
                    "FailedGetScale",
                    &format!(
                        "the HPA controller was unable to get the target's current scale: {e}"
                    ),
                );
                self.write_status(&original, &hpa, name).await?;
                return Ok(true);
            }
        };
        set_condition(
            &mut hpa,
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
        );
        let current = scale["spec"]["replicas"].as_i64().unwrap_or(0);
        let min = spec["minReplicas"].as_i64().unwrap_or(1);
        let max = spec["maxReplicas"].as_i64().unwrap_or(0);
        let mut statuses: Vec<Value> = Vec::new();
        let (desired, reason) = if current == 0 && min != 0 {
            set_condition(
                &mut hpa,
                "ScalingActive",
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
            );
            set_status(&mut hpa, current, 0, &[], false);
            self.write_status(&original, &hpa, name).await?;
            return Ok(true);
        } else if current > max {
            (
                max,
                "Current number of replicas above Spec.MaxReplicas".to_string(),
            )
        } else if current < min {
            (
                min,
                "Current number of replicas below Spec.MinReplicas".to_string(),
            )
        } else {
            let selector = scale["status"]["selector"].as_str().unwrap_or_default();
            if selector.is_empty() {
                self.selector_missing(&mut hpa);
                let desired = hpa["status"]["desiredReplicas"].as_i64().unwrap_or(0);
                set_status(&mut hpa, current, desired, &[], false);
                self.write_status(&original, &hpa, name).await?;
                return Ok(true);
            }
            let computed = match self.compute(&spec, namespace, selector, current).await {
                Ok(computed) => computed,
                Err(failed) => {
                    self.metrics_failed(&mut hpa, &failed);
                    let desired = hpa["status"]["desiredReplicas"].as_i64().unwrap_or(0);
                    set_status(&mut hpa, current, desired, &failed.statuses, false);
                    self.write_status(&original, &hpa, name).await?;
                    return Ok(true);
                }
            };
            for failure in &computed.failures {
                self.recorder.event(
                    &hpa,
                    EventType::Warning,
                    failure.reason,
                    failure.error.clone(),
                );
            }
            set_condition(
                &mut hpa,
                "ScalingActive",
                "True",
                "ValidMetricFound",
                &format!(
                    "the HPA was able to successfully calculate a replica count from {}",
                    computed.metric_name
                ),
            );
            let reason = if computed.replicas > current {
                format!("{} above target", computed.metric_name)
            } else {
                "All metrics below target".to_string()
            };
            let (desired, conditions) =
                self.normalizer
                    .normalize(key, &spec, current, computed.replicas);
            for (kind, status, why, message) in conditions {
                set_condition(&mut hpa, kind, status, why, message);
            }
            if desired == current {
                set_status(&mut hpa, current, desired, &computed.statuses, false);
                self.write_status(&original, &hpa, name).await?;
                return Ok(true);
            }
            statuses = computed.statuses;
            (desired, reason)
        };
        scale["spec"]["replicas"] = json!(desired);
        let target_name = target["name"].as_str().unwrap_or_default().to_string();
        let written = match self.target_store(target) {
            Ok(store) => store
                .update_scale(
                    Some(namespace),
                    &target_name,
                    ScaleChange::Replace(scale),
                    &WriteOptions::by(MANAGER),
                )
                .await
                .map_err(scale_error),
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            self.recorder.event(
                &hpa,
                EventType::Warning,
                "FailedRescale",
                format!("New size: {desired}; reason: {reason}; error: {e}"),
            );
            set_condition(
                &mut hpa,
                "AbleToScale",
                "False",
                "FailedUpdateScale",
                &format!("the HPA controller was unable to update the target scale: {e}"),
            );
            let kept = hpa["status"]["desiredReplicas"].as_i64().unwrap_or(0);
            set_status(&mut hpa, current, kept, &[], false);
            self.write_status(&original, &hpa, name).await?;
            return Ok(true);
        }
        set_condition(
            &mut hpa,
            "AbleToScale",
            "True",
            "SucceededRescale",
            &format!("the HPA controller was able to update the target scale to {desired}"),
        );
        self.recorder.event(
            &hpa,
            EventType::Normal,
            "SuccessfulRescale",
            format!("New size: {desired}; reason: {reason}"),
        );
        self.normalizer.record_scale(key, current, desired);
        set_status(&mut hpa, current, desired, &statuses, true);
        self.write_status(&original, &hpa, name).await?;
        debug!(hpa = key, desired, reason, "rescaled");
        Ok(true)
    }

    /// A target's scale without a selector (upstream: computing replicas needs one).
    fn selector_missing(&self, hpa: &mut Value) {
        self.recorder.event(
            hpa,
            EventType::Warning,
            "SelectorRequired",
            "selector is required",
        );
        set_condition(
            hpa,
            "ScalingActive",
            "False",
            "InvalidSelector",
            "the HPA target's scale is missing a selector",
        );
    }

    /// What computeReplicasForMetrics reports of failed metrics: each metric's event, the
    /// first failure as the ScalingActive condition, and FailedComputeMetricsReplicas.
    fn metrics_failed(&self, hpa: &mut Value, failed: &compute::Failed) {
        for failure in &failed.failures {
            self.recorder.event(
                hpa,
                EventType::Warning,
                failure.reason,
                failure.error.clone(),
            );
        }
        let Some(first) = failed.failures.first() else {
            return;
        };
        set_condition(
            hpa,
            "ScalingActive",
            "False",
            first.reason,
            &format!(
                "the HPA was unable to compute the replica count: {}",
                first.error
            ),
        );
        self.recorder.event(
            hpa,
            EventType::Warning,
            "FailedComputeMetricsReplicas",
            format!(
                "invalid metrics ({} invalid out of {}), first error is: {}",
                failed.failures.len(),
                failed.total,
                first.wrapped
            ),
        );
    }

    /// Writes the status when it changed (upstream's updateStatusIfNeeded).
    async fn write_status(
        &self,
        original: &Value,
        hpa: &Value,
        name: &str,
    ) -> Result<(), RegistryError> {
        if original["status"] == hpa["status"] {
            return Ok(());
        }
        let namespace = object::namespace(hpa).to_string();
        match self
            .store
            .update(
                Some(&namespace),
                name,
                hpa.clone(),
                Subresource::Status,
                &WriteOptions::by(MANAGER),
            )
            .await
        {
            // Changed or gone meanwhile: the next look starts over.
            Err(RegistryError::Conflict { .. } | RegistryError::NotFound { .. }) => Ok(()),
            other => other.map(|_| ()),
        }
    }
}
