//! The CronJob controller's loop: CronJob notifications, and those of the Jobs they control,
//! queue the CronJob; workers sync it and look again at its next scheduled time.

use std::sync::Arc;

use registry::{Registry, Store};
use serde_json::Value;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::config::CronJobControllerConfig;
use super::COMPONENT;
use client::controller::Controller;
use client::events::EventRecorder;
use client::informer::{object_key, FactoryError, InformerFactory, Notification, SharedInformer};
use client::worker::Next;
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
        Controller::new(COMPONENT, self.clone(), self.queue.clone())
            .workers(self.config.workers)
            // Adds and updates only: a deleted CronJob leaves nothing to sync.
            .primary_with(&self.cronjob_informer, "CronJob", |cj, n| {
                if let Notification::Add(cronjob) | Notification::Update { new: cronjob, .. } = &n {
                    cj.enqueue(cronjob);
                }
            })
            .owns(&self.job_informer)
            .run(stop, |cj, key| async move { cj.process(key).await })
            .await
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
}
