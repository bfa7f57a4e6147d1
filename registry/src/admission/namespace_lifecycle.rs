//! NamespaceLifecycle (upstream's k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle):
//! no content is created in a namespace that does not exist or is terminating, and the
//! system namespaces cannot be deleted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use storage::{Interface, ReadRevision, StorageError};

use super::{Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{Qualified, RegistryError, Result};
use crate::object::Object;
use crate::Registry;

/// Namespaces every cluster has from its first start.
pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];
/// Those that cannot be deleted (upstream's immortal namespaces).
const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];
/// How long after a namespace's delete creates in it read the namespace from storage rather
/// than the cache, which may not show the deletion yet (upstream's forceLiveLookupTTL).
const FORCE_LIVE_LOOKUP: Duration = Duration::from_secs(30);

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    Arc::new(NamespaceLifecycle {
        namespaces: registry.namespaces_cache(),
        force_live: Mutex::new(HashMap::new()),
    })
}

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

struct NamespaceLifecycle {
    /// The namespaces' storage (their watch cache; keys `/namespaces/<name>`).
    namespaces: Arc<dyn Interface>,
    /// Namespaces whose delete passed admission, until when they are read live.
    force_live: Mutex<HashMap<String, Instant>>,
}

fn is_namespaces(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "namespaces"
}

impl NamespaceLifecycle {
    fn force_live_lookup(&self, namespace: &str) -> bool {
        let mut force = self
            .force_live
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        force.retain(|_, until| *until > now);
        force.contains_key(namespace)
    }

    async fn lookup(&self, namespace: &str) -> Result<Option<NamespaceState>> {
        let key = format!("/namespaces/{namespace}");
        // The cache answers almost always; a namespace created a moment ago may only be in
        // storage yet, so a miss is checked there before it counts, and one being deleted
        // is read there throughout.
        let first = match self.force_live_lookup(namespace) {
            true => ReadRevision::Latest,
            false => ReadRevision::Any,
        };
        let found = match self.namespaces.get(&key, first).await {
            Err(StorageError::NotFound { .. }) if first == ReadRevision::Any => {
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
}

#[async_trait]
impl Plugin for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, _: &str) -> bool {
        match operation {
            Operation::Create => info.namespaced,
            Operation::Delete => is_namespaces(info),
            Operation::Update => false,
        }
    }

    async fn admit(&self, attrs: &Attributes<'_>, _: Option<&mut Object>) -> Result<()> {
        if attrs.operation == Operation::Delete {
            if IMMORTAL.contains(&attrs.name) {
                return Err(RegistryError::forbidden(
                    &attrs.info.qualified_resource(),
                    attrs.name,
                    "this namespace may not be deleted",
                ));
            }
            self.force_live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(attrs.name.to_string(), Instant::now() + FORCE_LIVE_LOOKUP);
            return Ok(());
        }
        let Some(namespace) = attrs.namespace else {
            return Ok(());
        };
        let Some(ns) = self.lookup(namespace).await? else {
            return Err(RegistryError::not_found(
                &Qualified::new("", "namespaces"),
                namespace,
            ));
        };
        let terminating = ns.metadata.deletion_timestamp.is_some()
            || ns.status.phase.as_deref() == Some("Terminating");
        if terminating {
            return Err(RegistryError::forbidden(
                &attrs.info.qualified_resource(),
                attrs.name,
                format!("unable to create new content in namespace {namespace} because it is being terminated"),
            ));
        }
        Ok(())
    }

    fn mutates(&self) -> bool {
        true
    }
}
