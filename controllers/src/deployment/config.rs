//! How the deployment controller runs. The defaults are kube-controller-manager's.

#[derive(Clone, Debug)]
pub struct DeploymentControllerConfig {
    /// Deployments synced at once (`--concurrent-deployment-syncs`).
    pub workers: usize,
    /// Longest `deployment.kubernetes.io/revision-history` kept on a ReplicaSet.
    pub max_revision_history_chars: usize,
}

impl Default for DeploymentControllerConfig {
    fn default() -> Self {
        Self {
            workers: 5,
            max_revision_history_chars: super::util::revision::MAX_REVISION_HISTORY_CHARS,
        }
    }
}
