//! The root CA certificate publisher (upstream's pkg/controller/certificates/rootcacertpublisher):
//! every active namespace holds a ConfigMap `kube-root-ca.crt` with the CA bundle that verifies
//! the API server (`ca.crt`), made when the namespace appears and put back whenever it is
//! changed or deleted, so pods can trust `kubernetes.default.svc` in any namespace.

use std::sync::Arc;

use registry::options::WriteOptions;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use client::controller::Controller;
use client::informer::{FactoryError, InformerFactory, Notification, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

pub const CONFIG_MAP: &str = "kube-root-ca.crt";
pub const DATA_KEY: &str = "ca.crt";
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Upstream's words.
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";
const WORKERS: usize = 2;
const MANAGER: &str = "kube-controller-manager";

#[derive(Debug, Error)]
pub enum RootCaPublisherError {
    #[error(transparent)]
    Informer(#[from] FactoryError),
    #[error("the registry serves no v1 configmaps")]
    NoConfigMaps,
}

pub struct RootCaPublisher {
    namespaces: SharedInformer,
    config_maps: SharedInformer,
    store: Arc<Store>,
    /// The PEM bundle published.
    bundle: String,
    /// Namespace names.
    queue: RateLimitingQueue<String>,
}

impl RootCaPublisher {
    pub fn new(
        informers: &InformerFactory,
        bundle: String,
    ) -> Result<Arc<Self>, RootCaPublisherError> {
        let store = informers
            .registry()
            .store("", "v1", "configmaps")
            .ok_or(RootCaPublisherError::NoConfigMaps)?;
        Ok(Arc::new(Self {
            namespaces: informers.informer("", "v1", "namespaces")?,
            config_maps: informers.informer_for(&store),
            store,
            bundle,
            queue: RateLimitingQueue::with_default_rate_limiter("root_ca_cert_publisher"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let name = "root-ca-certificate-publisher-controller";
        Controller::new(name, self.clone(), self.queue.clone())
            .workers(WORKERS)
            .handles(&self.namespaces, |ca, n| {
                if let Notification::Add(ns) | Notification::Update { new: ns, .. } = n {
                    ca.queue.add(object::name(&ns).to_string());
                }
            })
            // Ours changed or went: it is put back.
            .handles(&self.config_maps, |ca, n| {
                let changed = match &n {
                    Notification::Add(_) => None,
                    other => other.latest(),
                };
                if let Some(cm) = changed.filter(|cm| object::name(cm) == CONFIG_MAP) {
                    ca.queue.add(object::namespace(cm).to_string());
                }
            })
            .run(stop, |ca, ns| async move {
                Next::after_sync(ca.sync(&ns).await, |e| {
                    warn!(namespace = %ns, error = %e, "publishing the root CA failed; retrying")
                })
            })
            .await
    }

    /// The ConfigMap's data and annotation as they must be.
    fn wanted(&self, mut cm: Value) -> Value {
        cm["data"] = json!({ DATA_KEY: self.bundle });
        let meta = object::meta_mut(&mut cm);
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations[DESCRIPTION_ANNOTATION] = json!(DESCRIPTION);
        cm
    }

    async fn sync(&self, namespace: &str) -> Result<(), RegistryError> {
        let Some(ns) = self.namespaces.indexer().get(namespace) else {
            return Ok(());
        };
        // Nothing new goes into a namespace on its way out.
        if object::deletion_timestamp(&ns).is_some() {
            return Ok(());
        }
        let opts = WriteOptions::by(MANAGER);
        let key = format!("{namespace}/{CONFIG_MAP}");
        let Some(current) = self.config_maps.indexer().get(&key) else {
            let cm = self.wanted(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": CONFIG_MAP, "namespace": namespace},
            }));
            return match self.store.create(Some(namespace), cm, &opts).await {
                Ok(_) => {
                    debug!(namespace, "published the root CA");
                    Ok(())
                }
                // Made meanwhile (seen soon), or the namespace is going: nothing to do.
                Err(
                    RegistryError::AlreadyExists { .. }
                    | RegistryError::Forbidden { .. }
                    | RegistryError::NotFound { .. },
                ) => Ok(()),
                Err(e) => Err(e),
            };
        };
        let current = (*current).clone();
        let wanted = self.wanted(current.clone());
        if wanted == current {
            return Ok(());
        }
        match self
            .store
            .update(
                Some(namespace),
                CONFIG_MAP,
                wanted,
                Subresource::Main,
                &opts,
            )
            .await
        {
            Ok(_) => {
                debug!(namespace, "put the root CA back");
                Ok(())
            }
            // A newer version comes through the informer and is looked at again.
            Err(RegistryError::Conflict { .. } | RegistryError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
