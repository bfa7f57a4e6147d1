//! Pruning a CronJob's finished Jobs past successfulJobsHistoryLimit and
//! failedJobsHistoryLimit, oldest first (upstream's cleanupFinishedJobs), and deleting Jobs.

use std::sync::Arc;

use registry::options::{DeleteOptions, PropagationPolicy};
use registry::{object, RegistryError};
use serde_json::{Map, Value};

use super::controller::CronJobController;
use super::sync::remove_active;
use client::controller_utils::SyncError;
use client::events::EventType;

impl CronJobController {
    pub(super) async fn cleanup_finished_jobs(
        &self,
        cronjob: &Value,
        jobs: &[Arc<Value>],
        status: &mut Map<String, Value>,
    ) {
        if object::deletion_timestamp(cronjob).is_some() {
            return;
        }
        let spec = &cronjob["spec"];
        let limits = [
            (
                "Complete",
                spec["successfulJobsHistoryLimit"].as_i64().unwrap_or(3),
            ),
            (
                "Failed",
                spec["failedJobsHistoryLimit"].as_i64().unwrap_or(1),
            ),
        ];
        for (kind, limit) in limits {
            let mut finished: Vec<&Arc<Value>> = jobs
                .iter()
                .filter(|j| crate::job::finished_condition_type(j).as_deref() == Some(kind))
                .collect();
            let excess = finished.len().saturating_sub(limit.max(0) as usize);
            if excess == 0 {
                continue;
            }
            // By start time, Jobs never started last, then by name.
            finished.sort_by(|a, b| {
                let start = |j: &Value| j["status"]["startTime"].as_str().map(str::to_string);
                match (start(a), start(b)) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                }
                .then_with(|| object::name(a).cmp(object::name(b)))
            });
            for job in finished.into_iter().take(excess) {
                if let Ok(true) = self
                    .delete_job(cronjob, object::namespace(job), object::name(job))
                    .await
                {
                    remove_active(status, object::uid(job));
                }
            }
        }
    }

    /// Deletes a Job of the CronJob, its pods after it (background propagation), with an
    /// event; whether it went (or was gone).
    pub(super) async fn delete_job(
        &self,
        cronjob: &Value,
        namespace: &str,
        name: &str,
    ) -> Result<bool, SyncError> {
        let options = DeleteOptions {
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
        };
        match self.jobs.delete(Some(namespace), name, options).await {
            Ok(_) => {
                self.recorder.event(
                    cronjob,
                    EventType::Normal,
                    "SuccessfulDelete",
                    format!("Deleted job {name}"),
                );
                Ok(true)
            }
            Err(RegistryError::NotFound { .. }) => Ok(true),
            Err(e) => {
                self.recorder.event(
                    cronjob,
                    EventType::Warning,
                    "FailedDelete",
                    format!("Deleted job: {}", e.status().message),
                );
                Err(e.into())
            }
        }
    }
}
