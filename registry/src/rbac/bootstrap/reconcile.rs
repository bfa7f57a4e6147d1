//! Reconciling the bootstrap policy at start (upstream's pkg/registry/rbac/reconciliation as
//! the RBAC storage's post-start hook runs it): missing objects are created; an existing one
//! whose autoupdate annotation is not "false" gets back the labels, annotations, permissions,
//! aggregation selectors and subjects of the default that it lacks. Nothing a user added is
//! taken away, and a run over a reconciled cluster writes nothing.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use tracing::{debug, error, info, warn};

use super::plan::{plan_binding, plan_role, Plan};
use super::{policy, RBAC_GROUP};
use crate::options::{ListOptions, WriteOptions};
use crate::{object, Registry, RegistryError, Store, Subresource};

/// The field manager of the writes, upstream's post-start hook runs inside kube-apiserver.
const MANAGER: &str = "kube-apiserver";
/// Rounds lost to concurrent writers (another server starting) before an object is given up.
const ATTEMPTS: usize = 5;

/// One thing reconciliation did (or, for a protected object, would have done).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Created {
        resource: &'static str,
        key: String,
    },
    /// What was added, in words.
    Updated {
        resource: &'static str,
        key: String,
        added: String,
    },
    /// A binding whose roleRef differs was deleted and made again.
    Recreated {
        resource: &'static str,
        key: String,
    },
    /// Left alone (autoupdate "false") though it differs from the default.
    Protected {
        resource: &'static str,
        key: String,
        missing: String,
    },
}

/// What a reconciliation did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub changes: Vec<Change>,
    /// Objects that could not be reconciled, with why; the others were.
    pub failures: Vec<String>,
}

#[derive(Clone, Copy)]
enum Kind {
    Role,
    Binding,
}

/// Reconciles the bootstrap policy through the registry's Stores, as an in-process writer.
/// An object that fails is logged and reported and the rest are still reconciled, as
/// upstream's hook creates as many as it can; only a failure to read or make the roles'
/// namespaces is an error.
pub async fn reconcile(registry: &Registry) -> Result<Report, RegistryError> {
    let policy = policy();
    let mut report = Report::default();
    let mut namespaces: Vec<&str> = policy
        .roles
        .iter()
        .chain(&policy.role_bindings)
        .map(object::namespace)
        .collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    for ns in namespaces {
        ensure_namespace(registry, ns).await?;
    }
    let phases = [
        ("clusterroles", Kind::Role, &policy.cluster_roles),
        (
            "clusterrolebindings",
            Kind::Binding,
            &policy.cluster_role_bindings,
        ),
        ("roles", Kind::Role, &policy.roles),
        ("rolebindings", Kind::Binding, &policy.role_bindings),
    ];
    for (plural, kind, objects) in phases {
        let Some(store) = registry.store(RBAC_GROUP, "v1", plural) else {
            warn!(
                resource = plural,
                "not served: its bootstrap objects are not reconciled"
            );
            continue;
        };
        for expected in objects {
            let namespace = Some(object::namespace(expected)).filter(|n| !n.is_empty());
            let key = match namespace {
                Some(ns) => format!("{ns}/{}", object::name(expected)),
                None => object::name(expected).to_string(),
            };
            match reconcile_one(&store, plural, namespace, expected, kind).await {
                Ok(None) => {}
                Ok(Some(change)) => {
                    // Upstream logs what it wrote at -v=2 and warns of what it could not.
                    match &change {
                        Change::Protected { .. } => warn!("{change}"),
                        _ => debug!("{change}"),
                    }
                    report.changes.push(change);
                }
                Err(e) => {
                    let what = format!("{}.{RBAC_GROUP}/{key}", singular(plural));
                    error!(error = %e, "unable to reconcile {what}");
                    report.failures.push(format!("{what}: {e}"));
                }
            }
        }
    }
    let written = report
        .changes
        .iter()
        .filter(|c| !matches!(c, Change::Protected { .. }))
        .count();
    info!(
        written,
        failed = report.failures.len(),
        "reconciled the bootstrap RBAC policy"
    );
    Ok(report)
}

fn singular(plural: &str) -> &str {
    plural.strip_suffix('s').unwrap_or(plural)
}

/// Makes the namespace when it is missing (a deleted kube-public).
async fn ensure_namespace(registry: &Registry, name: &str) -> Result<(), RegistryError> {
    let Some(namespaces) = registry.store("", "v1", "namespaces") else {
        return Ok(());
    };
    match namespaces.get(None, name, &ListOptions::default()).await {
        Err(RegistryError::NotFound { .. }) => {}
        other => return other.map(|_| ()),
    }
    let ns =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    match namespaces
        .create(None, ns, &WriteOptions::by(MANAGER))
        .await
    {
        Ok(_) | Err(RegistryError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

async fn reconcile_one(
    store: &Arc<Store>,
    resource: &'static str,
    namespace: Option<&str>,
    expected: &Value,
    kind: Kind,
) -> Result<Option<Change>, RegistryError> {
    let name = object::name(expected);
    let key = match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    let opts = WriteOptions::by(MANAGER);
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let existing = match store.get(namespace, name, &ListOptions::default()).await {
            Ok(existing) => existing,
            Err(RegistryError::NotFound { .. }) => {
                match store.create(namespace, expected.clone(), &opts).await {
                    Ok(_) => return Ok(Some(Change::Created { resource, key })),
                    // Made meanwhile: look at it again.
                    Err(e @ RegistryError::AlreadyExists { .. }) => {
                        last = Some(e);
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        let plan = match kind {
            Kind::Role => plan_role(&existing, expected),
            Kind::Binding => plan_binding(&existing, expected),
        };
        let result = match plan {
            Plan::Nothing => return Ok(None),
            Plan::Protected(missing) => {
                return Ok(Some(Change::Protected {
                    resource,
                    key,
                    missing,
                }))
            }
            Plan::Update(updated, added) => store
                .update(namespace, name, updated, Subresource::Main, &opts)
                .await
                .map(|_| Change::Updated {
                    resource,
                    key: key.clone(),
                    added,
                }),
            Plan::Recreate => recreate(store, namespace, &existing, expected, &opts)
                .await
                .map(|_| Change::Recreated {
                    resource,
                    key: key.clone(),
                }),
        };
        match result {
            Ok(change) => return Ok(Some(change)),
            // Changed, deleted or made again since it was read: judge it again.
            Err(
                e @ (RegistryError::Conflict { .. }
                | RegistryError::NotFound { .. }
                | RegistryError::AlreadyExists { .. }),
            ) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| RegistryError::Internal(format!("reconciling {key} gave up"))))
}

/// A binding's roleRef cannot change: the old one goes (only if it is still the one read) and
/// the default is made.
async fn recreate(
    store: &Store,
    namespace: Option<&str>,
    existing: &Value,
    expected: &Value,
    opts: &WriteOptions,
) -> Result<(), RegistryError> {
    let delete = crate::options::DeleteOptions {
        preconditions: Some(crate::options::PreconditionsSpec {
            uid: Some(object::uid(existing).to_string()),
            resource_version: None,
        }),
        ..Default::default()
    };
    store
        .delete(namespace, object::name(existing), delete)
        .await?;
    store.create(namespace, expected.clone(), opts).await?;
    Ok(())
}

impl fmt::Display for Change {
    /// Upstream's log lines.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Created { resource, key } => {
                write!(f, "created {}.{RBAC_GROUP}/{key}", singular(resource))
            }
            Change::Updated {
                resource,
                key,
                added,
            } => write!(
                f,
                "updated {}.{RBAC_GROUP}/{key} with {added}",
                singular(resource)
            ),
            Change::Recreated { resource, key } => {
                write!(f, "recreated {}.{RBAC_GROUP}/{key}", singular(resource))
            }
            Change::Protected {
                resource,
                key,
                missing,
            } => write!(
                f,
                "skipped reconcile-protected {}.{RBAC_GROUP}/{key} with missing {missing}",
                singular(resource)
            ),
        }
    }
}
