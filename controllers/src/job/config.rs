//! How the Job controller runs; the defaults are kube-controller-manager's.

use std::sync::Arc;
use std::time::Duration;

use client::clock::{self, Clock};

#[derive(Clone, Debug)]
pub struct JobControllerConfig {
    /// Jobs synced at once (`--concurrent-job-syncs`).
    pub workers: usize,
    /// The wait before a failed pod is replaced, doubled with each failure since the last
    /// success (upstream's DefaultJobPodFailureBackOff, 10s)...
    pub pod_failure_backoff: Duration,
    /// ...up to this (MaxJobPodFailureBackOff, 10 minutes).
    pub max_pod_failure_backoff: Duration,
    pub clock: Arc<dyn Clock>,
}

impl Default for JobControllerConfig {
    fn default() -> Self {
        Self {
            workers: 5,
            pod_failure_backoff: Duration::from_secs(10),
            max_pod_failure_backoff: Duration::from_secs(600),
            clock: clock::system(),
        }
    }
}
