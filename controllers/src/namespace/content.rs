//! Deleting everything in a namespace (upstream's deleteAllContent): pods first, and nothing
//! else until they are gone (OrderedNamespaceDeletion, so the policies guarding pods outlive
//! them); then every other resource. Each resource is deleted as a collection where it can be,
//! else object by object, then listed again to see what remains, what holds it, and how long
//! it may take.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::{StreamExt, TryStreamExt};
use registry::options::{DeleteOptions, ListOptions};
use registry::{object, RegistryError, Store, Verb};
use serde_json::Value;
use tracing::{debug, info};

use super::{estimate, resources};

/// Deletes of one resource's objects in flight at once, where it has no deletecollection.
const EACH_CONCURRENCY: usize = 16;

/// What the pass over one resource found.
#[derive(Debug, Default)]
pub struct ResourceReport {
    /// `<resource>.<group>`.
    pub resource: String,
    /// Objects gone in this pass (those merely marked deleting, still waiting on a grace
    /// period or finalizers, are not counted until they go).
    pub deleted: usize,
    pub remaining: usize,
    /// Finalizer → objects left that carry it.
    pub finalizers: BTreeMap<String, usize>,
    /// Seconds the remaining objects may still need; 0: none are expected to go by themselves.
    pub estimate: u64,
    pub error: Option<String>,
}

/// What a pass over a namespace's content found.
#[derive(Debug, Default)]
pub struct ContentReport {
    pub resources: Vec<ResourceReport>,
}

impl ContentReport {
    pub fn estimate(&self) -> u64 {
        self.resources.iter().map(|r| r.estimate).max().unwrap_or(0)
    }

    pub fn errors(&self) -> Vec<String> {
        self.resources
            .iter()
            .filter_map(|r| r.error.clone())
            .collect()
    }

    pub fn deleted(&self) -> usize {
        self.resources.iter().map(|r| r.deleted).sum()
    }

    pub fn remaining(&self) -> usize {
        self.resources.iter().map(|r| r.remaining).sum()
    }

    /// Objects left by `<resource>.<group>`.
    pub fn remaining_by_resource(&self) -> BTreeMap<String, usize> {
        self.resources
            .iter()
            .filter(|r| r.remaining > 0)
            .map(|r| (r.resource.clone(), r.remaining))
            .collect()
    }

    /// Objects left by the finalizers holding them, over all resources.
    pub fn remaining_by_finalizer(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for (finalizer, n) in self.resources.iter().flat_map(|r| &r.finalizers) {
            *out.entry(finalizer.clone()).or_insert(0) += n;
        }
        out
    }
}

pub struct ContentDeleter {
    pub finalizer_estimate_seconds: u64,
    pub resource_concurrency: usize,
}

impl ContentDeleter {
    /// Deletes the content of `namespace` (deleted at `deleted_at`) in `stores`.
    pub async fn delete_all(
        &self,
        stores: Vec<Arc<Store>>,
        namespace: &str,
        deleted_at: DateTime<Utc>,
    ) -> ContentReport {
        let (pods, others): (Vec<_>, Vec<_>) = stores
            .into_iter()
            .partition(|s| resources::is_pods(&s.info));
        let mut report = ContentReport::default();
        for store in pods {
            report
                .resources
                .push(self.delete_resource(&store, namespace, deleted_at).await);
        }
        // A pod list that failed says nothing about whether pods are gone: wait as if not.
        let pods_left = report
            .resources
            .iter()
            .any(|r| r.remaining > 0 || r.error.is_some());
        if pods_left {
            debug!(
                namespace,
                "pods remain; the rest of the content waits for them"
            );
            return report;
        }
        let rest: Vec<ResourceReport> = futures::stream::iter(others)
            .map(|store| async move { self.delete_resource(&store, namespace, deleted_at).await })
            .buffer_unordered(self.resource_concurrency.max(1))
            .collect()
            .await;
        report.resources.extend(rest);
        report
    }

    async fn delete_resource(
        &self,
        store: &Store,
        namespace: &str,
        deleted_at: DateTime<Utc>,
    ) -> ResourceReport {
        let mut report = ResourceReport {
            resource: resources::group_resource(&store.info),
            ..Default::default()
        };
        if let Err(e) = self
            .try_delete_resource(store, namespace, deleted_at, &mut report)
            .await
        {
            report.error = Some(e);
        }
        // One line per resource as it finishes: the progress of a long deletion. What merely
        // still waits is not news on every pass.
        if report.deleted > 0 || report.error.is_some() {
            info!(
                namespace,
                resource = %report.resource,
                deleted = report.deleted,
                remaining = report.remaining,
                error = report.error.as_deref(),
                "namespace content"
            );
        } else if report.remaining > 0 {
            debug!(
                namespace,
                resource = %report.resource,
                remaining = report.remaining,
                "namespace content"
            );
        }
        report
    }

    async fn try_delete_resource(
        &self,
        store: &Store,
        namespace: &str,
        deleted_at: DateTime<Utc>,
        report: &mut ResourceReport,
    ) -> Result<(), String> {
        let info = &store.info;
        // Estimated before deleting: a pod's grace period is what its deletion will take.
        let estimate = if resources::is_pods(info) {
            let pods = list(store, namespace).await?;
            estimate::still_running(estimate::pods_grace_seconds(&pods), deleted_at, Utc::now())
        } else {
            0
        };
        report.estimate = estimate;
        let issued = delete_content(store, namespace).await?;
        report.deleted = issued;
        if !info.has_verb(Verb::List) {
            return Ok(());
        }
        let left = list(store, namespace).await?;
        report.deleted = issued.saturating_sub(left.len());
        if left.is_empty() {
            report.estimate = 0;
            return Ok(());
        }
        report.remaining = left.len();
        for item in &left {
            for finalizer in object::finalizers(item) {
                *report.finalizers.entry(finalizer).or_insert(0) += 1;
            }
        }
        if estimate > 0 {
            return Ok(());
        }
        // Finalizers are someone else's work in progress: a normal wait, not a failure.
        if !report.finalizers.is_empty() {
            report.estimate = self.finalizer_estimate_seconds.max(1);
            return Ok(());
        }
        Err(format!(
            "unexpected items still remain in namespace: {namespace} for gvr: {}",
            resources::group_version_resource(info)
        ))
    }
}

/// Issues the deletes; returns how many objects they were for. They propagate in the
/// background: the namespace controller purges everything itself, so the garbage collector
/// must not orphan (or wait for) dependents on its account.
async fn delete_content(store: &Store, namespace: &str) -> Result<usize, String> {
    let info = &store.info;
    if info.has_verb(Verb::DeleteCollection) {
        match store
            .delete_collection(
                Some(namespace),
                &ListOptions::default(),
                DeleteOptions::background(),
            )
            .await
        {
            Ok(deleted) => return Ok(items(deleted).len()),
            Err(RegistryError::MethodNotAllowed(_) | RegistryError::NoSuchResource) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    if !info.has_verb(Verb::List) {
        return Ok(0);
    }
    let objects = list(store, namespace).await?;
    futures::stream::iter(objects)
        .map(|obj| async move {
            match store
                .delete(
                    Some(namespace),
                    object::name(&obj),
                    DeleteOptions::background(),
                )
                .await
            {
                Ok(_) => Ok(1),
                Err(RegistryError::NotFound { .. } | RegistryError::MethodNotAllowed(_)) => Ok(0),
                Err(e) => Err(e.to_string()),
            }
        })
        .buffer_unordered(EACH_CONCURRENCY)
        .try_fold(0, |sum, n| async move { Ok(sum + n) })
        .await
}

async fn list(store: &Store, namespace: &str) -> Result<Vec<Value>, String> {
    store
        .list(Some(namespace), &ListOptions::default())
        .await
        .map(items)
        .map_err(|e| e.to_string())
}

fn items(mut list: Value) -> Vec<Value> {
    match list.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}
