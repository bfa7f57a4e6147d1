use client::informer::FactoryError;

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error(transparent)]
    Informer(#[from] FactoryError),
    #[error("resource {0} is not served")]
    NotServed(String),
}
