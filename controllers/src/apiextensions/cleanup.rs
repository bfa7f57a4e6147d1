//! Deleting a definition's custom resources before the definition goes (upstream's
//! CRDFinalizer): every instance is deleted, and once none is left the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer comes off.

use std::sync::Arc;

use apiextensions::Definition;
use registry::options::{DeleteOptions, ListOptions};
use registry::{object, Registry, RegistryError};
use serde_json::Value;
use tracing::info;

/// How far the deletion of instances got.
pub enum Progress {
    /// Nothing left: the finalizer may go.
    Done,
    /// Deletes were issued; `remaining` objects are still there (finalizers, grace periods).
    Remaining { remaining: usize },
}

/// Deletes every instance of the definition's resource, in all namespaces.
pub async fn delete_instances(
    registry: &Arc<Registry>,
    crd: &Definition,
) -> Result<Progress, RegistryError> {
    let names = if crd.status.accepted_names.plural.is_empty() {
        &crd.spec.names
    } else {
        &crd.status.accepted_names
    };
    // Every version shares one storage path; any served Store reaches all objects.
    let store = crd
        .spec
        .versions
        .iter()
        .find_map(|v| registry.store(&crd.spec.group, &v.name, &names.plural));
    let Some(store) = store else {
        return Ok(Progress::Done);
    };
    let listed = store.list(None, &ListOptions::default()).await?;
    let items = listed["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return Ok(Progress::Done);
    }
    info!(definition = %crd.metadata.name, instances = items.len(), "deleting custom resources of a deleted definition");
    let pending = items
        .iter()
        .filter(|item| object::deletion_timestamp(item).is_none())
        .map(|item| delete_one(&store, item));
    for result in futures::future::join_all(pending).await {
        match result {
            Ok(()) | Err(RegistryError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let left = store.list(None, &ListOptions::default()).await?;
    let remaining = left["items"].as_array().map_or(0, Vec::len);
    if remaining == 0 {
        return Ok(Progress::Done);
    }
    Ok(Progress::Remaining { remaining })
}

async fn delete_one(store: &registry::Store, item: &Value) -> Result<(), RegistryError> {
    let ns = object::namespace(item);
    let ns = (!ns.is_empty()).then_some(ns);
    store
        .delete(ns, object::name(item), DeleteOptions::default())
        .await
        .map(|_| ())
}
