//! The ServiceAccount controller (upstream's pkg/controller/serviceaccount): every active
//! namespace has a `default` ServiceAccount, created when the namespace appears and again
//! whenever it is deleted, so pods that name no account are admitted the same way everywhere.

use std::sync::Arc;

use registry::options::WriteOptions;
use registry::{object, RegistryError, Store};
use serde_json::json;
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use client::controller::Controller;
use client::informer::{FactoryError, InformerFactory, Notification, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

/// The accounts every namespace gets (`--service-account-names`... upstream has just this one).
const ACCOUNTS: &[&str] = &["default"];
const WORKERS: usize = 2;

#[derive(Debug, Error)]
pub enum ServiceAccountControllerError {
    #[error(transparent)]
    Informer(#[from] FactoryError),
    #[error("the registry serves no v1 serviceaccounts")]
    NoServiceAccounts,
}

pub struct ServiceAccountController {
    namespaces: SharedInformer,
    accounts: SharedInformer,
    store: Arc<Store>,
    /// Namespace names.
    queue: RateLimitingQueue<String>,
}

impl ServiceAccountController {
    pub fn new(informers: &InformerFactory) -> Result<Arc<Self>, ServiceAccountControllerError> {
        let store = informers
            .registry()
            .store("", "v1", "serviceaccounts")
            .ok_or(ServiceAccountControllerError::NoServiceAccounts)?;
        Ok(Arc::new(Self {
            namespaces: informers.informer("", "v1", "namespaces")?,
            accounts: informers.informer_for(&store),
            store,
            queue: RateLimitingQueue::with_default_rate_limiter("serviceaccount"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("serviceaccount-controller", self.clone(), self.queue.clone())
            .workers(WORKERS)
            .handles(&self.namespaces, |sa, n| {
                if let Notification::Add(ns) | Notification::Update { new: ns, .. } = n {
                    sa.queue.add(object::name(&ns).to_string());
                }
            })
            // Only a deleted account needs anything: it is made again.
            .handles(&self.accounts, |sa, n| {
                if let Notification::Delete(gone) = n {
                    if let Some(account) = gone.object() {
                        sa.queue.add(object::namespace(account).to_string());
                    }
                }
            })
            .run(stop, |sa, ns| async move {
                Next::after_sync(sa.sync(&ns).await, |e| {
                    warn!(namespace = %ns, error = %e, "creating service accounts failed; retrying")
                })
            })
            .await
    }

    async fn sync(&self, namespace: &str) -> Result<(), RegistryError> {
        let Some(ns) = self.namespaces.indexer().get(namespace) else {
            return Ok(());
        };
        // Nothing new goes into a namespace on its way out.
        if object::deletion_timestamp(&ns).is_some() {
            return Ok(());
        }
        for name in ACCOUNTS {
            if self
                .accounts
                .indexer()
                .get(&format!("{namespace}/{name}"))
                .is_some()
            {
                continue;
            }
            let account = json!({
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace},
            });
            match self
                .store
                .create(Some(namespace), account, &WriteOptions::default())
                .await
            {
                Ok(_) => debug!(namespace, account = name, "created service account"),
                // Created by someone else (or this controller, not yet seen): fine.
                Err(RegistryError::AlreadyExists { .. }) => {}
                // The namespace began terminating or went since the informer saw it.
                Err(RegistryError::Forbidden { .. } | RegistryError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
