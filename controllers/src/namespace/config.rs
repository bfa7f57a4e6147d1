//! How the namespace controller runs. The defaults are kube-controller-manager's.

use std::time::Duration;

#[derive(Clone, Debug)]
pub struct NamespaceControllerConfig {
    /// Namespaces worked on at once (`--concurrent-namespace-syncs`).
    pub workers: usize,
    /// How long a namespace seen deleting waits before its content is removed, so every API
    /// server sharing the storage already refuses new content in it and creates that raced the
    /// deletion are visible to the lists that find content.
    pub deletion_grace_period: Duration,
    /// How often every namespace is looked at again although nothing changed
    /// (`--namespace-sync-period`); None: never.
    pub resync_period: Option<Duration>,
    /// Seconds assumed for content held by finalizers to go when nothing better is known; the
    /// namespace is checked again after about half of it.
    pub finalizer_estimate_seconds: u64,
    /// A failed sync is retried after a wait doubling from the first to the second value.
    pub retry_backoff: (Duration, Duration),
    /// Resources whose content is deleted at the same time (pods always go first, alone).
    pub resource_concurrency: usize,
}

impl Default for NamespaceControllerConfig {
    fn default() -> Self {
        Self {
            workers: 10,
            deletion_grace_period: Duration::from_secs(5),
            resync_period: Some(Duration::from_secs(300)),
            finalizer_estimate_seconds: 15,
            // Upstream caps the backoff at a minute so a stuck namespace is retried often.
            retry_backoff: (Duration::from_millis(5), Duration::from_secs(60)),
            resource_concurrency: 4,
        }
    }
}
