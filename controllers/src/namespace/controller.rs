//! The controller loop: a namespace informer queues every namespace that is deleting, and
//! workers take each through the deleter until it is gone, looking again after an estimate
//! while content remains and retrying failures with backoff.

use std::sync::Arc;
use std::time::Instant;

use registry::{object, Registry};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::config::NamespaceControllerConfig;
use super::content::ContentDeleter;
use super::deleter::{DeletionError, NamespacedResourcesDeleter};
use super::estimate;
use client::controller::Controller;
use client::informer::{FactoryError, InformerFactory, Notification, SharedInformer};
use client::worker::Next;
use client::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimitingQueue,
};

#[derive(Debug, Error)]
pub enum NamespaceControllerError {
    #[error("the registry serves no v1 namespaces")]
    NoNamespaces,
    #[error(transparent)]
    Informer(#[from] FactoryError),
}

pub struct NamespaceController {
    config: NamespaceControllerConfig,
    informer: SharedInformer,
    /// Namespace names.
    queue: RateLimitingQueue<String>,
    deleter: NamespacedResourcesDeleter,
}

impl NamespaceController {
    pub fn new(
        informers: &InformerFactory,
        config: NamespaceControllerConfig,
    ) -> Result<Arc<Self>, NamespaceControllerError> {
        let registry: Arc<Registry> = informers.registry().clone();
        let namespaces = registry
            .store("", "v1", "namespaces")
            .ok_or(NamespaceControllerError::NoNamespaces)?;
        let informer = informers.informer_for(&namespaces);
        let (base, max) = config.retry_backoff;
        // The bucket only spaces retries overall; first attempts are never rate limited.
        let limiter = MaxOfRateLimiter::new(vec![
            Box::new(ItemExponentialFailureRateLimiter::new(base, max)),
            Box::new(BucketRateLimiter::new(10.0, 100)),
        ]);
        let content = ContentDeleter {
            finalizer_estimate_seconds: config.finalizer_estimate_seconds,
            resource_concurrency: config.resource_concurrency,
        };
        Ok(Arc::new(Self {
            informer,
            queue: RateLimitingQueue::new("namespace", limiter),
            deleter: NamespacedResourcesDeleter::new(registry, namespaces, content),
            config,
        }))
    }

    /// Runs until `stop` fires: waits for the informer to sync, then works the queue. A
    /// namespace being worked on when `stop` fires is left where it got to (every step is safe
    /// to repeat, so whoever runs next carries on). Runs once: a stopped controller stays
    /// stopped.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("namespace-controller", self.clone(), self.queue.clone())
            .workers(self.config.workers)
            .handles(&self.informer, |nc, n| nc.on_notification(&n))
            .spawns(Self::resync)
            .run(stop, |nc, name| async move { nc.process(name).await })
            .await
    }

    /// Looks at every deleting namespace again each resync period although nothing changed
    /// (`--namespace-sync-period`), as the informer resync does upstream.
    async fn resync(self: Arc<Self>, stop: CancellationToken) {
        let Some(period) = self.config.resync_period else {
            return;
        };
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(period) => {}
            }
            for namespace in self.informer.indexer().list() {
                self.on_notification(&Notification::Add(namespace));
            }
        }
    }

    fn on_notification(&self, notification: &Notification) {
        let namespace = match notification {
            Notification::Add(obj) => obj,
            Notification::Update { new, .. } => new,
            Notification::Delete(_) => return,
        };
        if object::deletion_timestamp(namespace).is_none() {
            return;
        }
        // Waits a little first: see `deletion_grace_period`.
        self.queue.add_after(
            object::name(namespace).to_string(),
            self.config.deletion_grace_period,
        );
    }

    async fn process(&self, name: String) -> Next {
        match self.sync(&name).await {
            Ok(()) => Next::Done,
            Err(DeletionError::ContentRemaining { estimate }) => {
                let wait = estimate::requeue_after(estimate);
                debug!(namespace = %name, estimate, wait = ?wait, "content remains in namespace; looking again later");
                Next::After(wait)
            }
            Err(e) => {
                warn!(
                    namespace = %name,
                    error = %e,
                    retries = self.queue.num_requeues(&name),
                    "namespace deletion failed; retrying"
                );
                Next::Retry
            }
        }
    }

    async fn sync(&self, name: &str) -> Result<(), DeletionError> {
        let started = Instant::now();
        if self.informer.indexer().get(name).is_none() {
            debug!(namespace = name, "namespace has been deleted");
            return Ok(());
        }
        let result = self.deleter.delete(name).await;
        debug!(namespace = name, elapsed = ?started.elapsed(), "finished syncing namespace");
        result
    }
}
