//! PodSecurity (upstream's plugin/pkg/admission/security/podsecurity over
//! k8s.io/pod-security-admission): pods are judged against the Pod Security Standards level
//! their namespace's `pod-security.kubernetes.io/*` labels name (or the configured defaults).
//! `enforce` refuses a violating pod, `warn` sends the client a warning, `audit` annotates the
//! request's audit event. Workloads (Deployments, Jobs, ...) are judged by their pod template
//! for warn and audit only, so that users hear early of pods that will be refused. Namespace
//! labels must be valid, and tightening a namespace's enforce level warns of its existing
//! pods that violate it. Configured users, namespaces and runtime classes are exempt.

mod baseline;
mod checks;
pub(crate) mod config;
mod evaluate;
mod levels;
mod namespace;
mod restricted;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use storage::{Interface, ReadRevision, StorageError};

use super::{watched, Attributes, Operation, Plugin};
use crate::catalogue::ResourceInfo;
use crate::error::{Qualified, RegistryError, Result};
use crate::object::Object;
use crate::Registry;

pub use config::Config;
use evaluate::Outcome;
use levels::{labels_of, policy_to_evaluate};

pub(super) fn build(registry: &Registry) -> Arc<dyn Plugin> {
    let (pods, path) = watched(registry, "", "pods");
    Arc::new(PodSecurity {
        config: registry.admission_configured().pod_security.clone(),
        namespaces: registry.namespaces_cache(),
        pods,
        pods_prefix: format!("{path}/"),
    })
}

/// The resources whose objects hold a pod spec: pods themselves, and the workloads judged by
/// their template (upstream's DefaultPodSpecExtractor).
const WORKLOADS: [(&str, &str); 8] = [
    ("", "replicationcontrollers"),
    ("", "podtemplates"),
    ("apps", "replicasets"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
];

/// Pod subresources that cannot change the pod's spec; any other (ephemeralcontainers,
/// resize) is judged, so that no way around the policy is left open.
const IGNORED_POD_SUBRESOURCES: [&str; 8] = [
    "exec",
    "attach",
    "binding",
    "eviction",
    "log",
    "portforward",
    "proxy",
    "status",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Namespace,
    Pod,
    Workload,
}

fn kind_of(info: &ResourceInfo) -> Option<Kind> {
    let is = |group: &str, plural: &str| info.group == group && info.plural == plural;
    if is("", "namespaces") {
        Some(Kind::Namespace)
    } else if is("", "pods") {
        Some(Kind::Pod)
    } else if WORKLOADS.iter().any(|(g, p)| is(g, p)) {
        Some(Kind::Workload)
    } else {
        None
    }
}

struct PodSecurity {
    config: Arc<Config>,
    /// The namespaces' watch cache (keys `/namespaces/<name>`).
    namespaces: Arc<dyn Interface>,
    /// The pods' watch cache, for a namespace's existing pods.
    pods: Arc<dyn Interface>,
    pods_prefix: String,
}

fn user_name<'a>(attrs: &'a Attributes<'_>) -> &'a str {
    attrs.user.map(|u| u.name.as_str()).unwrap_or_default()
}

impl PodSecurity {
    /// A namespace's labels: from the cache, else storage (one created a moment ago).
    async fn namespace_labels(
        &self,
        namespace: &str,
    ) -> std::result::Result<std::collections::BTreeMap<String, String>, StorageError> {
        let key = format!("/namespaces/{namespace}");
        let kv = match self.namespaces.get(&key, ReadRevision::Any).await {
            Err(StorageError::NotFound { .. }) => {
                self.namespaces.get(&key, ReadRevision::Latest).await?
            }
            other => other?,
        };
        let object: Value =
            serde_json::from_slice(&kv.value).map_err(|e| StorageError::Internal(e.to_string()))?;
        Ok(labels_of(&object))
    }

    /// Upstream's ValidatePod and ValidatePodController.
    async fn judge(&self, attrs: &Attributes<'_>, kind: Kind, obj: &Object) -> Result<Outcome> {
        let namespace = attrs.namespace.unwrap_or_default();
        if self.config.exemptions.namespace(namespace) {
            return Ok(Outcome::exempt("namespace"));
        }
        if self.config.exemptions.user(user_name(attrs)) {
            return Ok(Outcome::exempt("user"));
        }
        let labels = match self.namespace_labels(namespace).await {
            Ok(labels) => labels,
            Err(e) => {
                tracing::warn!(namespace, error = %e, "PodSecurity could not read the namespace");
                // A pod is refused when its namespace's policy is unknown; a workload is
                // let through, judged again when its pods are made.
                if kind == Kind::Pod {
                    let refusal = RegistryError::Internal(format!(
                        "failed to lookup namespace {}",
                        crate::validation::quote(namespace)
                    ));
                    crate::audit::annotate(
                        levels::annotation_key("error"),
                        format!("{refusal}: {e}"),
                    );
                    return Err(refusal);
                }
                let mut outcome = Outcome::default();
                outcome.annotate(
                    "error",
                    format!(
                        "failed to lookup namespace {}: {e}",
                        crate::validation::quote(namespace)
                    ),
                );
                return Ok(outcome);
            }
        };
        let (policy, errors) = policy_to_evaluate(&labels, self.config.defaults);
        if kind == Kind::Pod {
            if errors.is_empty() && policy.fully_privileged() {
                return Ok(Outcome::privileged());
            }
            if let Some(old) = attrs.old.filter(|_| attrs.operation == Operation::Update) {
                if !evaluate::significant_pod_update(obj, old) {
                    return Ok(Outcome::default());
                }
            }
            let (meta, spec) = (&obj["metadata"], &obj["spec"]);
            return Ok(evaluate::pod(
                &self.config,
                policy,
                &errors,
                meta,
                spec,
                true,
            ));
        }
        let quiet = policy.warn.level == levels::Level::Privileged
            && policy.audit.level == levels::Level::Privileged;
        if errors.is_empty() && quiet {
            return Ok(Outcome::default());
        }
        let Some(template) = evaluate::pod_template(&attrs.info.plural, obj) else {
            return Ok(Outcome::default());
        };
        let (meta, spec) = (&template["metadata"], &template["spec"]);
        Ok(evaluate::pod(
            &self.config,
            policy,
            &errors,
            meta,
            spec,
            false,
        ))
    }
}

#[async_trait]
impl Plugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }

    fn handles(&self, info: &ResourceInfo, operation: Operation, subresource: &str) -> bool {
        if !matches!(operation, Operation::Create | Operation::Update) {
            return false;
        }
        match kind_of(info) {
            Some(Kind::Pod) => !IGNORED_POD_SUBRESOURCES.contains(&subresource),
            Some(_) => subresource.is_empty(),
            None => false,
        }
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: Option<&Object>) -> Result<()> {
        let (Some(obj), Some(kind)) = (obj, kind_of(attrs.info)) else {
            return Ok(());
        };
        let outcome = match kind {
            Kind::Namespace => {
                namespace::validate(self, attrs, obj).await?;
                return Ok(());
            }
            _ => self.judge(attrs, kind, obj).await?,
        };
        outcome.apply(attrs)
    }
}

impl Outcome {
    /// Sends the warnings, records the audit annotations, and refuses when enforce did.
    fn apply(self, attrs: &Attributes<'_>) -> Result<()> {
        for warning in self.warnings {
            crate::warning::add(warning);
        }
        for (key, value) in self.annotations {
            crate::audit::annotate(levels::annotation_key(key), value);
        }
        match self.refusal {
            Some(message) => Err(RegistryError::forbidden(
                &attrs.info.qualified_resource(),
                attrs.name,
                message,
            )),
            None => Ok(()),
        }
    }
}

/// The Namespace kind, as an Invalid error names it.
fn namespace_kind() -> Qualified {
    Qualified::new("", "Namespace")
}

#[cfg(test)]
mod check_tests;
