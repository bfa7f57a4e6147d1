//! Why a worker could not finish an item; most mean "retry later with backoff".

use registry::RegistryError;

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// No served resource has this apiVersion and kind (perhaps not installed yet).
    #[error("unable to map kind {kind} of {api_version} to a served resource")]
    RestMapping { api_version: String, kind: String },

    /// An invalid reference that no retry will fix.
    #[error("cluster-scoped objects cannot refer to namespaced owners")]
    NamespacedOwnerOfClusterScopedObject,

    #[error(transparent)]
    Registry(#[from] RegistryError),

    #[error("{0}")]
    Failed(String),
}

impl GcError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Registry(RegistryError::NotFound { .. }))
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Registry(RegistryError::Conflict { .. }))
    }
}
