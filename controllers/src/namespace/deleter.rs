//! One deleting namespace taken one step further (upstream's NamespacedResourcesDeleter):
//! phase Terminating, content deleted, conditions updated, and once nothing is left the
//! `kubernetes` finalizer removed through `finalize` and the namespace deleted.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use registry::options::{DeleteOptions, ListOptions, PreconditionsSpec, WriteOptions};
use registry::{object, Registry, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use thiserror::Error;
use tracing::{debug, info, warn};

use super::conditions::{self, Condition};
use super::content::{ContentDeleter, ContentReport};
use super::{resources, FINALIZER_KUBERNETES};

/// Writes racing other writers of the namespace are retried this often before the sync fails
/// (and is retried later with backoff).
const CONFLICT_RETRIES: usize = 8;

#[derive(Debug, Error)]
pub enum DeletionError {
    /// Not a failure: look again after about half the estimate.
    #[error(
        "some content remains in the namespace, estimate {estimate} seconds before it is removed"
    )]
    ContentRemaining { estimate: u64 },
    #[error("{}", .0.join(", "))]
    Content(Vec<String>),
    #[error("namespace uid has changed across retries")]
    UidChanged,
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

pub struct NamespacedResourcesDeleter {
    registry: Arc<Registry>,
    namespaces: Arc<Store>,
    content: ContentDeleter,
}

impl NamespacedResourcesDeleter {
    pub fn new(registry: Arc<Registry>, namespaces: Arc<Store>, content: ContentDeleter) -> Self {
        Self {
            registry,
            namespaces,
            content,
        }
    }

    /// Takes namespace `name` as far as it can go now. Ok: nothing more to do for it (gone, not
    /// deleting, or waiting for others' spec finalizers).
    pub async fn delete(&self, name: &str) -> Result<(), DeletionError> {
        // Several controllers may edit a deleting namespace: start from its latest state.
        let namespace = match self.get(name).await {
            Err(RegistryError::NotFound { .. }) => return Ok(()),
            other => other?,
        };
        if object::deletion_timestamp(&namespace).is_none() {
            return Ok(());
        }
        let namespace = match self
            .retry_on_conflict(namespace, |ns| self.ensure_terminating(ns))
            .await
        {
            Err(DeletionError::Registry(RegistryError::NotFound { .. })) => return Ok(()),
            other => other?,
        };
        if finalized(&namespace) {
            return self.delete_namespace(&namespace).await;
        }
        let namespace = self.delete_content(namespace).await?;
        let namespace = match self
            .retry_on_conflict(namespace, |ns| self.finalize(ns))
            .await
        {
            // Another controller sharing the finalizer finished it first.
            Err(DeletionError::Registry(RegistryError::NotFound { .. })) => return Ok(()),
            other => other?,
        };
        if finalized(&namespace) {
            return self.delete_namespace(&namespace).await;
        }
        debug!(
            namespace = name,
            "content gone; other spec finalizers remain"
        );
        Ok(())
    }

    /// Deletes what is in the namespace and records on it how far that got. Ok (with the
    /// namespace as last written) once nothing is left.
    async fn delete_content(&self, namespace: Value) -> Result<Value, DeletionError> {
        let name = object::name(&namespace).to_string();
        let deleted_at = object::deletion_timestamp(&namespace)
            .and_then(object::parse_time)
            .unwrap_or_else(Utc::now);

        let started = Instant::now();
        let stores = resources::deletable(self.registry.stores());
        let report = self.content.delete_all(stores, &name, deleted_at).await;
        // A namespace waiting on others' finalizers is passed over again and again: only a
        // pass that deleted something is news.
        if report.deleted() > 0 {
            info!(
                namespace = %name,
                deleted = report.deleted(),
                remaining = report.remaining(),
                resources = report.resources.len(),
                elapsed = ?started.elapsed(),
                "namespace content pass"
            );
        } else {
            debug!(
                namespace = %name,
                remaining = report.remaining(),
                resources = report.resources.len(),
                elapsed = ?started.elapsed(),
                "namespace content pass"
            );
        }

        // Always written, so a condition that was True goes back to False once it no longer
        // holds; a failed write only leaves the conditions stale and the next pass repairs it.
        let problems = problems(&report);
        let namespace = match self
            .retry_on_conflict(namespace.clone(), |ns| self.write_conditions(ns, &problems))
            .await
        {
            Ok(updated) => updated,
            Err(e) => {
                warn!(namespace = %name, error = %e, "could not update the namespace's conditions");
                namespace
            }
        };
        let errors = report.errors();
        if !errors.is_empty() {
            return Err(DeletionError::Content(errors));
        }
        match report.estimate() {
            0 => Ok(namespace),
            estimate => Err(DeletionError::ContentRemaining { estimate }),
        }
    }

    async fn get(&self, name: &str) -> Result<Value, RegistryError> {
        self.namespaces
            .get(None, name, &ListOptions::default())
            .await
    }

    /// Runs `write` on the namespace, and again on its latest state while it conflicts with
    /// another writer, as long as it is still the same namespace (not one deleted and made
    /// anew under the same name).
    async fn retry_on_conflict<F, Fut>(
        &self,
        mut namespace: Value,
        mut write: F,
    ) -> Result<Value, DeletionError>
    where
        F: FnMut(Value) -> Fut,
        Fut: Future<Output = Result<Value, RegistryError>>,
    {
        let mut tries = 0;
        loop {
            match write(namespace.clone()).await {
                Err(RegistryError::Conflict { .. }) if tries < CONFLICT_RETRIES => tries += 1,
                other => return Ok(other?),
            }
            let latest = self.get(object::name(&namespace)).await?;
            if object::uid(&latest) != object::uid(&namespace) {
                return Err(DeletionError::UidChanged);
            }
            namespace = latest;
        }
    }

    /// The registry marks a namespace Terminating when it is deleted; one deleted by an older
    /// server, or written over since, is marked here.
    async fn ensure_terminating(&self, mut namespace: Value) -> Result<Value, RegistryError> {
        if namespace["status"]["phase"] == "Terminating" {
            return Ok(namespace);
        }
        let name = object::name(&namespace).to_string();
        match namespace.as_object_mut() {
            Some(map) => {
                let status = map.entry("status").or_insert_with(|| json!({}));
                if !status.is_object() {
                    *status = json!({});
                }
                status["phase"] = json!("Terminating");
            }
            None => return Ok(namespace),
        }
        self.write_status(&name, namespace).await
    }

    async fn write_status(&self, name: &str, namespace: Value) -> Result<Value, RegistryError> {
        let (updated, _) = self
            .namespaces
            .update(
                None,
                name,
                namespace,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await?;
        Ok(updated)
    }

    async fn write_conditions(
        &self,
        mut namespace: Value,
        problems: &[Condition],
    ) -> Result<Value, RegistryError> {
        if !conditions::apply(&mut namespace, problems, &object::now()) {
            return Ok(namespace);
        }
        let name = object::name(&namespace).to_string();
        self.write_status(&name, namespace).await
    }

    /// Takes this controller's token out of spec.finalizers (the rest kept, sorted and without
    /// duplicates, as upstream writes them).
    async fn finalize(&self, mut namespace: Value) -> Result<Value, RegistryError> {
        let mut rest: Vec<String> = spec_finalizers(&namespace)
            .into_iter()
            .filter(|f| f != FINALIZER_KUBERNETES)
            .collect();
        rest.sort();
        rest.dedup();
        let name = object::name(&namespace).to_string();
        if let Some(map) = namespace.as_object_mut() {
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if !spec.is_object() {
                *spec = json!({});
            }
            spec["finalizers"] = json!(rest);
        }
        let (updated, _) = self
            .namespaces
            .update(
                None,
                &name,
                namespace,
                Subresource::Finalize,
                &WriteOptions::default(),
            )
            .await?;
        Ok(updated)
    }

    /// Deletes a namespace whose spec finalizers are all done; guarded by its UID so a
    /// namespace made anew under the same name is never the one removed.
    async fn delete_namespace(&self, namespace: &Value) -> Result<(), DeletionError> {
        let name = object::name(namespace);
        let opts = DeleteOptions {
            preconditions: Some(PreconditionsSpec {
                uid: Some(object::uid(namespace).to_string()).filter(|u| !u.is_empty()),
                resource_version: None,
            }),
            ..Default::default()
        };
        let outcome = match self.namespaces.delete(None, name, opts).await {
            Err(RegistryError::NotFound { .. }) => return Ok(()),
            other => other?,
        };
        if !outcome.deleted {
            debug!(
                namespace = name,
                "namespace waits for its metadata finalizers"
            );
            return Ok(());
        }
        let took = object::deletion_timestamp(namespace)
            .and_then(object::parse_time)
            .and_then(|at| Utc::now().signed_duration_since(at).to_std().ok());
        match took {
            Some(took) => info!(namespace = name, took = ?took, "namespace deleted"),
            None => info!(namespace = name, "namespace deleted"),
        }
        Ok(())
    }
}

/// The conditions a content pass calls for. Unlike upstream, content left while pods still
/// hold up the rest is reported too, so a namespace waiting on its pods says so.
fn problems(report: &ContentReport) -> Vec<Condition> {
    [
        conditions::content_failure(&report.errors()),
        conditions::content_remaining(&report.remaining_by_resource()),
        conditions::finalizers_remaining(&report.remaining_by_finalizer()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn spec_finalizers(namespace: &Value) -> Vec<String> {
    namespace["spec"]["finalizers"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether every spec finalizer is done.
fn finalized(namespace: &Value) -> bool {
    spec_finalizers(namespace).is_empty()
}
