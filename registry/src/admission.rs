//! Namespace lifecycle admission (upstream's NamespaceLifecycle plugin): no content in a
//! namespace that does not exist or is terminating, and the system namespaces stay.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use storage::{Interface, ReadRevision, StorageError};

use crate::catalogue::ResourceInfo;
use crate::error::{Qualified, RegistryError, Result};

/// Namespaces every cluster has from its first start; they cannot be deleted.
pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];
const UNDELETABLE: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The little of a namespace admission reads (parsing only that keeps creates cheap).
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct NamespaceState {
    metadata: NamespaceMeta,
    status: NamespaceStatus,
}

#[derive(serde::Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct NamespaceMeta {
    deletion_timestamp: Option<String>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct NamespaceStatus {
    phase: Option<String>,
}

pub struct NamespaceLifecycle {
    namespaces: Arc<dyn Interface>,
    /// Namespaces this server marked terminating: its own cache may not show that yet, and
    /// a create right after the DELETE returned must already be refused.
    terminating: Mutex<HashSet<String>>,
}

impl NamespaceLifecycle {
    /// `namespaces` is the storage of the namespaces resource (keys `/namespaces/<name>`).
    pub fn new(namespaces: Arc<dyn Interface>) -> Self {
        Self {
            namespaces,
            terminating: Mutex::new(HashSet::new()),
        }
    }

    /// A delete of this server marked `name` of `info` as being deleted: for a namespace,
    /// that is the start of its termination.
    pub fn marked_deleting(&self, info: &ResourceInfo, name: &str) {
        if !is_namespaces(info) {
            return;
        }
        let first = self
            .terminating
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string());
        if first {
            tracing::info!(namespace = name, "namespace terminating");
        }
    }

    /// `name` of `info` was created: a namespace made again under a name this server saw
    /// terminating is no longer terminating.
    pub fn created(&self, info: &ResourceInfo, name: &str) {
        if is_namespaces(info) {
            self.terminating
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(name);
        }
    }

    fn known_terminating(&self, namespace: &str) -> bool {
        self.terminating
            .lock()
            .map(|t| t.contains(namespace))
            .unwrap_or(false)
    }

    async fn lookup(&self, namespace: &str) -> Result<Option<NamespaceState>> {
        let key = format!("/namespaces/{namespace}");
        // The cache answers almost always; a namespace created a moment ago may only be in
        // storage yet, so a miss is checked there before it counts.
        let found = match self.namespaces.get(&key, ReadRevision::Any).await {
            Err(StorageError::NotFound { .. }) => {
                self.namespaces.get(&key, ReadRevision::Latest).await
            }
            other => other,
        };
        match found {
            Ok(kv) => Ok(serde_json::from_slice(&kv.value).ok()),

            Err(StorageError::NotFound { .. }) => Ok(None),
            Err(e) => Err(RegistryError::from_storage(
                e,
                &Qualified::new("", "namespaces"),
                namespace,
            )),
        }
    }

    /// Creating `name` of `info` in `namespace`.
    pub async fn admit_create(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<()> {
        let Some(ns) = self.lookup(namespace).await? else {
            return Err(RegistryError::not_found(
                &Qualified::new("", "namespaces"),
                namespace,
            ));
        };
        let terminating = self.known_terminating(namespace)
            || ns.metadata.deletion_timestamp.is_some()
            || ns.status.phase.as_deref() == Some("Terminating");
        if terminating {
            return Err(RegistryError::forbidden(
                &info.qualified_resource(),
                name,
                format!("unable to create new content in namespace {namespace} because it is being terminated"),
            ));
        }
        Ok(())
    }

    /// Deleting `name` of `info`.
    pub fn admit_delete(&self, info: &ResourceInfo, name: &str) -> Result<()> {
        if is_namespaces(info) && UNDELETABLE.contains(&name) {
            return Err(RegistryError::forbidden(
                &info.qualified_resource(),
                name,
                "this namespace may not be deleted",
            ));
        }
        Ok(())
    }
}

fn is_namespaces(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "namespaces"
}
