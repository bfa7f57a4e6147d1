//! How the DaemonSet controller runs. The defaults are kube-controller-manager's.

use std::time::Duration;

#[derive(Clone, Debug)]
pub struct DaemonSetControllerConfig {
    /// DaemonSets synced at once (`--concurrent-daemonset-syncs`).
    pub workers: usize,
    /// Most pods created or deleted for one DaemonSet in one sync (upstream's BurstReplicas).
    pub burst_replicas: usize,
    /// First and longest wait before a failed daemon pod is replaced.
    pub failed_pod_backoff: (Duration, Duration),
}

impl Default for DaemonSetControllerConfig {
    fn default() -> Self {
        Self {
            workers: 2,
            burst_replicas: 250,
            failed_pod_backoff: (Duration::from_secs(1), Duration::from_secs(15 * 60)),
        }
    }
}
