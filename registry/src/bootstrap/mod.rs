//! The objects every cluster has from its first start, created when missing and otherwise
//! left as they are (upstream's post-start hooks and bootstrap controllers): the system
//! namespaces, the system PriorityClasses, a local APIService per built-in group-version,
//! the `kubernetes` ServiceCIDR and API Priority and Fairness' configuration (which, unlike
//! the rest, is kept as it should be after start: see `flowcontrol`).

mod flowcontrol;

use serde_json::{json, Value};
use tracing::info;

use crate::admission::SYSTEM_NAMESPACES;
use crate::error::{RegistryError, Result};
use crate::options::WriteOptions;
use crate::store::Store;
use crate::strategy::{apiregistration, networking, scheduling};
use crate::{object, Registry, Subresource};

impl Registry {
    /// Creates what is missing of the initial objects.
    pub async fn bootstrap(&self) -> Result<()> {
        if let Some(namespaces) = self.store("", "v1", "namespaces") {
            for name in SYSTEM_NAMESPACES {
                let ns =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
                if ensure(&namespaces, ns).await? {
                    info!(namespace = name, "created system namespace");
                }
            }
        }
        if let Some(classes) = self.store("scheduling.k8s.io", "v1", "priorityclasses") {
            for class in scheduling::SYSTEM_PRIORITY_CLASSES {
                if ensure(&classes, class.object()).await? {
                    info!(priority_class = class.name, "created system priority class");
                }
            }
        }
        let now = object::timestamp(chrono::Utc::now());
        // Upstream's autoregister controller, which also keeps them current.
        if let Some(services) = self.store("apiregistration.k8s.io", "v1", "apiservices") {
            let resources = self.catalogue().all();
            let mut group_versions: Vec<(&str, &str)> = resources
                .iter()
                .filter(|r| openapi::is_builtin_kind(&r.group, &r.version, &r.kind))
                .map(|r| (r.group.as_str(), r.version.as_str()))
                .collect();
            group_versions.sort();
            group_versions.dedup();
            for (group, version) in group_versions {
                ensure(
                    &services,
                    apiregistration::local_apiservice(group, version, &now),
                )
                .await?;
            }
        }
        // Upstream's default-servicecidr-controller.
        if let Some(cidrs) = self.store("networking.k8s.io", "v1", "servicecidrs") {
            let range = self.service_network().cluster_ips.to_string();
            ensure(&cidrs, networking::default_service_cidr(&range, &now)).await?;
        }
        // The first pass of API Priority and Fairness' configuration producer.
        self.ensure_flow_control().await?;
        Ok(())
    }
}

/// Creates `object` unless one of its name exists; whether it did. A status it carries is
/// written through the status subresource after, as a create keeps none.
async fn ensure(store: &Store, mut object: Value) -> Result<bool> {
    let status = object.as_object_mut().and_then(|o| o.remove("status"));
    let created = match store.create(None, object, &WriteOptions::default()).await {
        Ok(created) => created,
        Err(RegistryError::AlreadyExists { .. }) => return Ok(false),
        Err(e) => return Err(e),
    };
    if let Some(status) = status {
        let mut next = created;
        next["status"] = status;
        let name = object::name(&next).to_string();
        store
            .update(
                None,
                &name,
                next,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await?;
    }
    Ok(true)
}
