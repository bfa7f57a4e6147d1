//! The APIServices of custom resources (upstream's crdRegistrationController with the
//! autoregister controller): every group-version a definition serves gets a local APIService
//! (`v1.stable.example.com`, group priority 1000, version priority 100, Available), so
//! `kubectl get apiservices` and aggregated discovery list it as upstream does; it goes when no
//! definition serves the group-version any more. Only APIServices the server made itself
//! (`kube-aggregator.kubernetes.io/automanaged: "true"`) are ever changed or deleted.

use std::collections::BTreeSet;
use std::sync::Arc;

use registry::options::{DeleteOptions, ListOptions, WriteOptions};
use registry::strategy::apiregistration::{custom_resource_apiservice, AUTOMANAGED_LABEL};
use registry::{object, Registry, RegistryError, Store, Subresource};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use client::controller::Controller;
use client::informer::{InformerFactory, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

use super::DefinitionControllerError;

pub struct ApiServiceRegistration {
    definitions: SharedInformer,
    apiservices: Arc<Store>,
    /// `<version>.<group>` names.
    queue: RateLimitingQueue<String>,
}

/// The group-versions a definition serves, as APIService names.
fn served(definition: &Value) -> Vec<String> {
    let group = definition["spec"]["group"].as_str().unwrap_or_default();
    definition["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"].as_bool() == Some(true))
        .filter_map(|v| v["name"].as_str())
        .map(|version| format!("{version}.{group}"))
        .collect()
}

impl ApiServiceRegistration {
    pub fn new(informers: &InformerFactory) -> Result<Arc<Self>, DefinitionControllerError> {
        let registry: &Arc<Registry> = informers.registry();
        let definitions = registry
            .store("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .ok_or(DefinitionControllerError::NoDefinitions)?;
        let apiservices = registry
            .store("apiregistration.k8s.io", "v1", "apiservices")
            .ok_or(DefinitionControllerError::NoDefinitions)?;
        Ok(Arc::new(Self {
            definitions: informers.informer_for(&definitions),
            apiservices,
            queue: RateLimitingQueue::with_default_rate_limiter("crd_autoregistration_controller"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("crd-autoregister", self.clone(), self.queue.clone())
            .handles(&self.definitions, |c, n| {
                for state in n.states() {
                    for name in served(state) {
                        c.queue.add(name);
                    }
                }
            })
            .spawns(|c, _stop| async move { c.sweep().await })
            .run(stop, |c, name| async move {
                Next::after_sync(c.sync(&name).await, |e| {
                    warn!(apiservice = %name, error = %e, "registering the APIService failed; retrying")
                })
            })
            .await
    }

    /// At start, the APIServices of definitions deleted while no server ran.
    async fn sweep(&self) {
        let Ok(list) = self.apiservices.list(None, &ListOptions::default()).await else {
            return;
        };
        for item in list["items"].as_array().into_iter().flatten() {
            if item.pointer(&format!(
                "/metadata/labels/{}",
                AUTOMANAGED_LABEL.replace('/', "~1")
            )) == Some(&Value::from("true"))
            {
                self.queue.add(object::name(item).to_string());
            }
        }
    }

    async fn sync(&self, name: &str) -> Result<(), RegistryError> {
        let wanted: BTreeSet<String> = self
            .definitions
            .indexer()
            .list()
            .iter()
            .flat_map(|d| served(d))
            .collect();
        let existing = match self
            .apiservices
            .get(None, name, &ListOptions::default())
            .await
        {
            Ok(obj) => Some(obj),
            Err(RegistryError::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        let ours =
            |obj: &Value| obj["metadata"]["labels"][AUTOMANAGED_LABEL].as_str() == Some("true");
        match (wanted.contains(name), existing) {
            (true, None) => {
                let (version, group) = name.split_once('.').unwrap_or((name, ""));
                let mut service = custom_resource_apiservice(group, version, &object::now());
                let status = service.as_object_mut().and_then(|o| o.remove("status"));
                let mut created = self
                    .apiservices
                    .create(None, service, &WriteOptions::by("kube-apiserver"))
                    .await?;
                if let Some(status) = status {
                    created["status"] = status;
                    self.apiservices
                        .update(
                            None,
                            name,
                            created,
                            Subresource::Status,
                            &WriteOptions::by("kube-apiserver"),
                        )
                        .await?;
                }
                info!(
                    apiservice = name,
                    "registered the APIService of custom resources"
                );
            }
            (false, Some(obj)) if ours(&obj) => {
                match self
                    .apiservices
                    .delete(None, name, DeleteOptions::default())
                    .await
                {
                    Ok(_) | Err(RegistryError::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
                info!(
                    apiservice = name,
                    "removed the APIService of custom resources no longer served"
                );
            }
            _ => {}
        }
        Ok(())
    }
}
