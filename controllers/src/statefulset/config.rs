//! How the StatefulSet controller runs. The defaults are kube-controller-manager's.

#[derive(Clone, Debug)]
pub struct StatefulSetControllerConfig {
    /// Sets synced at once (`--concurrent-statefulset-syncs`).
    pub workers: usize,
}

impl Default for StatefulSetControllerConfig {
    fn default() -> Self {
        Self { workers: 5 }
    }
}
