//! Finished Jobs with a TTL are queued; a worker deletes each once its TTL ran out since its
//! Complete or Failed condition turned True, or looks again when it will have.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use registry::options::{DeleteOptions, ListOptions, PreconditionsSpec, PropagationPolicy};
use registry::{object, RegistryError, Store};
use serde_json::Value;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::job::finished_condition;
use client::clock::{self, Clock};
use client::controller::Controller;
use client::controller_utils::SyncError;
use client::informer::{object_key, FactoryError, InformerFactory, Notification, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

#[derive(Debug, Error)]
pub enum TtlError {
    #[error("the registry serves no batch/v1 jobs")]
    NoJobs,
    #[error(transparent)]
    Informer(#[from] FactoryError),
}

#[derive(Clone, Debug)]
pub struct TtlAfterFinishedConfig {
    /// Jobs cleaned up at once (`--concurrent-ttl-after-finished-syncs`).
    pub workers: usize,
    pub clock: Arc<dyn Clock>,
}

impl Default for TtlAfterFinishedConfig {
    fn default() -> Self {
        Self {
            workers: 5,
            clock: clock::system(),
        }
    }
}

pub struct TtlAfterFinishedController {
    config: TtlAfterFinishedConfig,
    jobs: Arc<Store>,
    informer: SharedInformer,
    queue: RateLimitingQueue<String>,
}

/// A Job this controller has to look at: a TTL, finished, not already going.
fn needs_cleanup(job: &Value) -> bool {
    job["spec"]["ttlSecondsAfterFinished"].is_i64()
        && object::deletion_timestamp(job).is_none()
        && finished_condition(job).is_some()
}

/// When the Job expires: its TTL after its finishing condition's transition.
fn expires_at(job: &Value) -> Option<DateTime<Utc>> {
    let ttl = job["spec"]["ttlSecondsAfterFinished"].as_i64()?;
    let finished = finished_condition(job)?.last_transition_time?;
    Some(object::parse_time(&finished)? + chrono::Duration::seconds(ttl))
}

impl TtlAfterFinishedController {
    pub fn new(
        informers: &InformerFactory,
        config: TtlAfterFinishedConfig,
    ) -> Result<Arc<Self>, TtlError> {
        let jobs = informers
            .registry()
            .store("batch", "v1", "jobs")
            .ok_or(TtlError::NoJobs)?;
        Ok(Arc::new(Self {
            informer: informers.informer_for(&jobs),
            jobs,
            queue: RateLimitingQueue::with_default_rate_limiter("ttl_jobs_to_delete"),
            config,
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let name = "ttl-after-finished-controller";
        Controller::new(name, self.clone(), self.queue.clone())
            .workers(self.config.workers)
            .handles(&self.informer, |ttl, n| {
                if let Notification::Add(job) | Notification::Update { new: job, .. } = &n {
                    if needs_cleanup(job) {
                        if let Ok(key) = object_key(job) {
                            ttl.queue.add(key);
                        }
                    }
                }
            })
            .run(stop, |ttl, key| async move {
                let result = ttl.sync(&key).await;
                if let Err(e) = &result {
                    warn!(job = %key, error = %e, "TTL cleanup failed; retrying");
                }
                Next::from(result)
            })
            .await
    }

    /// Deletes the Job `key` if it expired; Some(d): it expires in `d`.
    async fn sync(&self, key: &str) -> Result<Option<Duration>, SyncError> {
        let Some(job) = self.informer.indexer().get(key) else {
            return Ok(None);
        };
        if let Some(wait) = self.left(&job) {
            return Ok(wait);
        }
        // The informer may be behind: the TTL or the finish may have changed since.
        let (namespace, name) = (object::namespace(&job), object::name(&job));
        let fresh = match self
            .jobs
            .get(Some(namespace), name, &ListOptions::default())
            .await
        {
            Ok(fresh) => fresh,
            Err(RegistryError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if let Some(wait) = self.left(&fresh) {
            return Ok(wait);
        }
        let options = DeleteOptions {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(PreconditionsSpec {
                uid: Some(object::uid(&fresh).to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        info!(job = key, "deleting job whose TTL after finishing expired");
        match self.jobs.delete(Some(namespace), name, options).await {
            Ok(_) | Err(RegistryError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// None: the Job has expired; Some(None): nothing to do; Some(Some(d)): expires in `d`.
    fn left(&self, job: &Value) -> Option<Option<Duration>> {
        if !needs_cleanup(job) {
            return Some(None);
        }
        // Finished without a time: nothing to count the TTL from.
        let Some(expires) = expires_at(job) else {
            return Some(None);
        };
        let now = self.config.clock.now();
        (expires > now).then(|| (expires - now).to_std().ok())
    }
}
