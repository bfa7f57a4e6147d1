use client::informer::FactoryError;

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error(transparent)]
    Informer(#[from] FactoryError),
    #[error("resource {0} is not served")]
    NotServed(String),
    /// A configuration file (KubeSchedulerConfiguration) that is invalid or asks for what
    /// this scheduler does not do.
    #[error("{0}")]
    Config(String),
}
