//! The admission chain (upstream's k8s.io/apiserver/pkg/admission): every create, update and
//! delete a Store makes passes the enabled plugins, in upstream's order, the mutating ones
//! first (each may change the object), then the validating ones (each may only refuse). A
//! plugin is one file here, named and switched by upstream's plugin name
//! (`--enable-admission-plugins` / `--disable-admission-plugins`, see [`plugins`]).
//!
//! Where the Store calls the chain, as upstream's handlers and generic store do:
//! - create: mutating after defaults, then the kind's validation, then validating;
//! - update of the main resource (and create through update): mutating and validating on
//!   the object the update produced, before the kind's update rules and validation, each
//!   attempt against the state it would replace;
//! - delete: mutating with no object (as upstream's handler), before anything is read.
//!
//! RBAC's escalation checks are not admission: they stay with the RBAC storage (`WriteGuard`).

mod always_admit;
mod always_deny;
mod certificate_approval;
mod certificate_signing;
mod certificate_subject_restriction;
mod config;
mod default_class;
mod default_ingress_class;
mod default_storage_class;
mod default_toleration_seconds;
mod limit_ranger;
mod namespace_lifecycle;
mod persistent_volume_claim_resize;
pub mod plugins;
mod pod_security;
mod priority;
mod resource_quota;
mod runtime_class;
pub mod service_account;
mod signer_permission;
mod storage_object_in_use_protection;
mod taint_nodes_by_condition;

use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;

use crate::auth::UserInfo;
use crate::catalogue::ResourceInfo;
use crate::error::Result;
use crate::object::Object;
use crate::Registry;
use storage::Interface;

pub use config::{configure, Configured};
pub use namespace_lifecycle::SYSTEM_NAMESPACES;
pub use plugins::{resolve, PluginConfigError, Resolved, ORDERED};
pub use storage_object_in_use_protection::{PVC_PROTECTION, PV_PROTECTION};

/// What a request does (upstream's admission.Operation; CONNECT has no Store here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

/// A request as admission sees it (upstream's admission.Attributes).
pub struct Attributes<'a> {
    pub info: &'a ResourceInfo,
    pub operation: Operation,
    /// "" for the main resource, else the subresource written (`status`).
    pub subresource: &'a str,
    pub namespace: Option<&'a str>,
    /// The object's name; on a create with generateName, empty until the write draws one.
    pub name: &'a str,
    /// The stored object an update or delete replaces.
    pub old: Option<&'a Object>,
    /// Who makes the request; None for in-process writers.
    pub user: Option<&'a Arc<UserInfo>>,
    pub dry_run: bool,
}

/// Whether a request is for the main resource of `group`/`plural` (not a subresource): what
/// most plugins check before their operations.
pub(crate) fn on_main(info: &ResourceInfo, subresource: &str, group: &str, plural: &str) -> bool {
    subresource.is_empty() && info.group == group && info.plural == plural
}

/// The watch cache and key path of a built-in resource a plugin reads (upstream's plugins
/// read their listers).
fn watched(registry: &Registry, group: &str, plural: &str) -> (Arc<dyn Interface>, String) {
    let path = registry
        .catalogue()
        .lookup(group, "v1", plural)
        .map(|r| r.storage_path.clone())
        .unwrap_or_else(|| format!("/{plural}"));
    (registry.cache_for(&path), path)
}

/// The objects of core resource `plural` in `namespace`, from its storage at `path` (a plugin's
/// lister), read at `revision`.
async fn namespaced_list(
    storage: &dyn Interface,
    path: &str,
    plural: &str,
    namespace: &str,
    revision: storage::ReadRevision,
) -> Result<Vec<serde_json::Value>> {
    let opts = storage::ListOptions {
        revision,
        recursive: true,
        ..Default::default()
    };
    let list = storage
        .get_list(&format!("{path}/{namespace}/"), opts)
        .await
        .map_err(|e| {
            crate::RegistryError::from_storage(e, &crate::Qualified::new("", plural), "")
        })?;
    Ok(list
        .items
        .iter()
        .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
        .collect())
}

/// One admission plugin (upstream's admission.Interface with MutationInterface and/or
/// ValidationInterface).
#[async_trait]
pub trait Plugin: Send + Sync {
    /// Upstream's name for it (`NamespaceLifecycle`).
    fn name(&self) -> &'static str;

    /// Whether it acts on `operation` of `subresource` of `info` at all (upstream's Handles
    /// with the plugin's own kind check): a Store whose writes no plugin handles keeps its
    /// plain write path.
    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool;

    /// The mutating phase; `obj` is None for deletes.
    async fn admit(&self, _attrs: &Attributes<'_>, _obj: Option<&mut Object>) -> Result<()> {
        Ok(())
    }

    /// The validating phase; `obj` is None for deletes.
    async fn validate(&self, _attrs: &Attributes<'_>, _obj: Option<&Object>) -> Result<()> {
        Ok(())
    }

    /// Whether `admit` does anything (upstream: implements MutationInterface).
    fn mutates(&self) -> bool {
        false
    }

    /// Whether `validate` does anything (upstream: implements ValidationInterface).
    fn validates(&self) -> bool {
        false
    }
}

/// The enabled plugins in upstream's order.
#[derive(Default)]
pub struct Chain {
    plugins: Vec<Arc<dyn Plugin>>,
}

impl Chain {
    pub fn new(plugins: Vec<Arc<dyn Plugin>>) -> Self {
        Self { plugins }
    }

    /// The enabled plugins' names, in the order they run.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name()).collect()
    }

    pub fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        self.plugins
            .iter()
            .any(|p| p.handles(info, operation, subresource))
    }

    /// Runs every mutating plugin that handles the request, in order.
    pub async fn admit(&self, attrs: &Attributes<'_>, mut obj: Option<&mut Object>) -> Result<()> {
        for plugin in self.applicable(attrs).filter(|p| p.mutates()) {
            plugin.admit(attrs, obj.as_deref_mut()).await?;
        }
        Ok(())
    }

    /// Runs every validating plugin that handles the request, in order; the first refusal
    /// answers.
    pub async fn validate(&self, attrs: &Attributes<'_>, obj: Option<&Object>) -> Result<()> {
        for plugin in self.applicable(attrs).filter(|p| p.validates()) {
            plugin.validate(attrs, obj).await?;
        }
        Ok(())
    }

    /// Both phases, for writes whose mutation and validation run back to back.
    pub async fn admit_and_validate(&self, attrs: &Attributes<'_>, obj: &mut Object) -> Result<()> {
        self.admit(attrs, Some(obj)).await?;
        self.validate(attrs, Some(obj)).await
    }

    fn applicable<'a>(
        &'a self,
        attrs: &'a Attributes<'_>,
    ) -> impl Iterator<Item = &'a Arc<dyn Plugin>> {
        self.plugins
            .iter()
            .filter(|p| p.handles(attrs.info, attrs.operation, attrs.subresource))
    }
}

/// The chain every Store of a registry consults: set once the server has read its flags
/// (until then, and in registries built for tests, the in-process defaults of
/// [`plugins::IN_PROCESS`]).
#[derive(Default)]
pub struct Admission {
    chain: RwLock<Arc<Chain>>,
    /// The plugins' configuration (`--admission-control-config-file`), read by the
    /// plugins the chain is built of.
    configured: RwLock<Arc<Configured>>,
    /// Plugins the server built and handed in, by name (see `plugins::provided`).
    provided: RwLock<std::collections::HashMap<&'static str, Arc<dyn Plugin>>>,
}

impl Admission {
    pub fn chain(&self) -> Arc<Chain> {
        self.chain
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn configured(&self) -> Arc<Configured> {
        self.configured
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn configure(&self, configured: Configured) {
        *self
            .configured
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(configured);
    }

    pub(crate) fn provide(&self, name: &'static str, plugin: Arc<dyn Plugin>) {
        self.provided
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name, plugin);
    }

    pub(crate) fn provided(&self, name: &str) -> Option<Arc<dyn Plugin>> {
        self.provided
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    pub(crate) fn set(&self, chain: Chain) {
        *self.chain.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(chain);
    }
}
