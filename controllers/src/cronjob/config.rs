//! How the CronJob controller runs; the defaults are kube-controller-manager's.

use std::sync::Arc;

use client::clock::{self, Clock};

#[derive(Clone, Debug)]
pub struct CronJobControllerConfig {
    /// CronJobs synced at once (`--concurrent-cron-job-syncs`).
    pub workers: usize,
    /// What the schedules are compared with.
    pub clock: Arc<dyn Clock>,
}

impl Default for CronJobControllerConfig {
    fn default() -> Self {
        Self {
            workers: 5,
            clock: clock::system(),
        }
    }
}
