//! The CronJob controller's loop: CronJob notifications, and those of the Jobs they control,
//! queue the CronJob; workers sync it and look again at its next scheduled time.

use std::sync::Arc;

use registry::{object, Registry, Store};
use serde_json::Value;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::config::CronJobControllerConfig;
use super::COMPONENT;
use client::events::EventRecorder;
use client::informer::{
    dispatch, object_key, FactoryError, InformerFactory, Notification, SharedInformer,
};
use client::worker::{run_when_synced, Next};
use client::workqueue::RateLimitingQueue;

#[derive(Debug, Error)]
pub enum CronJobControllerError {
    #[error("the registry serves no {0}")]
    NotServed(&'static str),
    #[error(transparent)]
    Informer(#[from] FactoryError),
}

pub struct CronJobController {
    pub(super) config: CronJobControllerConfig,
    pub(super) cronjobs: Arc<Store>,
    pub(super) jobs: Arc<Store>,
    pub(super) cronjob_informer: SharedInformer,
    pub(super) job_informer: SharedInformer,
    /// CronJobs by namespace/name.
    pub(super) queue: RateLimitingQueue<String>,
    pub(super) recorder: EventRecorder,
}

impl CronJobController {
    pub fn new(
        informers: &InformerFactory,
        config: CronJobControllerConfig,
    ) -> Result<Arc<Self>, CronJobControllerError> {
        let registry: &Arc<Registry> = informers.registry();
        let cronjobs = registry
            .store("batch", "v1", "cronjobs")
            .ok_or(CronJobControllerError::NotServed("batch/v1 cronjobs"))?;
        let jobs = registry
            .store("batch", "v1", "jobs")
            .ok_or(CronJobControllerError::NotServed("batch/v1 jobs"))?;
        Ok(Arc::new(Self {
            cronjob_informer: informers.informer_for(&cronjobs),
            job_informer: informers.informer_for(&jobs),
            recorder: EventRecorder::new(registry.clone(), COMPONENT),
            cronjobs,
            jobs,
            queue: RateLimitingQueue::with_default_rate_limiter("cronjob"),
            config,
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        info!(workers = self.config.workers, "starting cronjob controller");
        let this = self.clone();
        let cronjobs = dispatch(self.cronjob_informer.subscribe(), stop.clone(), move |n| {
            if let Notification::Add(cj) | Notification::Update { new: cj, .. } = &n {
                this.enqueue(cj);
            }
        });
        let this = self.clone();
        let jobs = dispatch(self.job_informer.subscribe(), stop.clone(), move |n| {
            if let Some(job) = n.latest() {
                this.enqueue_controller_of(job);
            }
        });
        let this = self.clone();
        run_when_synced(
            "cronjob",
            &[&self.cronjob_informer, &self.job_informer],
            self.queue.clone(),
            self.config.workers,
            stop.clone(),
            move |key| {
                let this = this.clone();
                async move { this.process(key).await }
            },
        )
        .await;
        let _ = tokio::join!(cronjobs, jobs);
        info!("cronjob controller stopped");
    }

    async fn process(&self, key: String) -> Next {
        let result = self.sync(&key).await;
        if let Err(e) = &result {
            warn!(cronjob = %key, error = %e, "syncing failed; retrying");
        }
        result.into()
    }

    fn enqueue(&self, cronjob: &Value) {
        if let Ok(key) = object_key(cronjob) {
            self.queue.add(key);
        }
    }

    fn enqueue_controller_of(&self, job: &Value) {
        let Some(reference) = job["metadata"]["ownerReferences"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["controller"].as_bool() == Some(true)))
        else {
            return;
        };
        if reference["kind"] != "CronJob" || reference["apiVersion"] != "batch/v1" {
            return;
        }
        let Some(name) = reference["name"].as_str() else {
            return;
        };
        let key = format!("{}/{name}", object::namespace(job));
        let current = self.cronjob_informer.indexer().get(&key);
        if current.is_some_and(|cj| object::uid(&cj) == reference["uid"].as_str().unwrap_or("")) {
            self.queue.add(key);
        }
    }
}
