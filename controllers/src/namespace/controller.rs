//! The controller loop: a namespace informer queues every namespace that is deleting, and
//! workers take each through the deleter until it is gone, looking again after an estimate
//! while content remains and retrying failures with backoff.

use std::sync::Arc;
use std::time::Instant;

use registry::{object, Registry};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::config::NamespaceControllerConfig;
use super::content::ContentDeleter;
use super::deleter::{DeletionError, NamespacedResourcesDeleter};
use super::estimate;
use crate::informer::{dispatch, InformerConfig, Notification, ReflectorConfig, SharedInformer};
use crate::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimitingQueue,
};

#[derive(Debug, Error)]
pub enum NamespaceControllerError {
    #[error("the registry serves no v1 namespaces")]
    NoNamespaces,
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
        registry: Arc<Registry>,
        config: NamespaceControllerConfig,
    ) -> Result<Arc<Self>, NamespaceControllerError> {
        let namespaces = registry
            .store("", "v1", "namespaces")
            .ok_or(NamespaceControllerError::NoNamespaces)?;
        let informer = SharedInformer::for_store(
            namespaces.clone(),
            InformerConfig {
                reflector: ReflectorConfig {
                    resync_period: config.resync_period,
                    ..Default::default()
                },
            },
        );
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
            queue: RateLimitingQueue::new(limiter),
            deleter: NamespacedResourcesDeleter::new(registry, namespaces, content),
            config,
        }))
    }

    /// Runs until `stop` fires: starts the informer, waits for it to sync, then works the
    /// queue. A namespace being worked on when `stop` fires is left where it got to (every step
    /// is safe to repeat, so whoever runs next carries on). Runs once: a stopped controller
    /// stays stopped.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        info!(
            workers = self.config.workers,
            "starting namespace controller"
        );
        let notifications = self.informer.subscribe_with_resync();
        self.informer.start();
        let dispatcher = {
            let this = self.clone();
            dispatch(notifications, stop.clone(), move |n| {
                this.on_notification(&n)
            })
        };
        let synced = tokio::select! {
            synced = self.informer.wait_for_sync() => synced,
            () = stop.cancelled() => false,
        };
        let mut workers = Vec::new();
        if synced {
            for _ in 0..self.config.workers.max(1) {
                workers.push(tokio::spawn(self.clone().worker(stop.clone())));
            }
            stop.cancelled().await;
        } else if !stop.is_cancelled() {
            warn!("namespace informer stopped before it synced");
        }
        self.queue.shut_down();
        self.informer.stop().await;
        for worker in workers {
            if let Err(e) = worker.await {
                warn!(error = %e, "namespace worker failed");
            }
        }
        if let Err(e) = dispatcher.await {
            warn!(error = %e, "namespace event dispatch failed");
        }
        info!("namespace controller stopped");
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

    async fn worker(self: Arc<Self>, stop: CancellationToken) {
        while let Some(name) = self.queue.get().await {
            let result = tokio::select! {
                () = stop.cancelled() => {
                    self.queue.done(&name);
                    break;
                }
                result = self.sync(&name) => result,
            };
            match result {
                Ok(()) => self.queue.forget(&name),
                Err(DeletionError::ContentRemaining { estimate }) => {
                    let wait = estimate::requeue_after(estimate);
                    debug!(namespace = %name, estimate, wait = ?wait, "content remains in namespace; looking again later");
                    self.queue.add_after(name.clone(), wait);
                }
                Err(e) => {
                    warn!(
                        namespace = %name,
                        error = %e,
                        retries = self.queue.num_requeues(&name),
                        "namespace deletion failed; retrying"
                    );
                    self.queue.add_rate_limited(name.clone());
                }
            }
            self.queue.done(&name);
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
