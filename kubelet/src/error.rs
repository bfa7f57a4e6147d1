use thiserror::Error;

#[derive(Debug, Error)]
pub enum KubeletError {
    #[error("the registry serves no {0}")]
    NotServed(String),
    #[error(transparent)]
    Informer(#[from] client::informer::FactoryError),
    #[error("invalid cluster CIDR {cidr:?}: {why}")]
    ClusterCidr { cidr: String, why: String },
    #[error(transparent)]
    Registry(#[from] registry::RegistryError),
    #[error(transparent)]
    Network(#[from] crate::network::NetworkError),
}

pub type Result<T, E = KubeletError> = std::result::Result<T, E>;
