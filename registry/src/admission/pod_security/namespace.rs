//! Namespaces under PodSecurity (upstream's ValidateNamespace): their policy labels must be
//! valid, and a change that tightens the enforce level warns of the namespace's existing
//! pods that would now be refused (they keep running: the policy judges new pods only).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::Value;
use storage::{ListOptions, ReadRevision};

use super::checks::{evaluate, forbidden_reason};
use super::config::Exemptions;
use super::levels::{
    labels_of, policy_to_evaluate, Level, LevelVersion, Policy, AUDIT_LABEL, AUDIT_VERSION_LABEL,
    ENFORCE_LABEL, ENFORCE_VERSION_LABEL, WARN_LABEL, WARN_VERSION_LABEL,
};
use super::{namespace_kind, PodSecurity};
use crate::admission::{Attributes, Operation};
use crate::error::{RegistryError, Result};
use crate::object::Object;

/// How many existing pods, and for how long, a label change checks (upstream's limits, so
/// that labelling a huge namespace stays quick).
const MAX_PODS_TO_CHECK: usize = 3000;
const POD_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

pub(super) async fn validate(
    plugin: &PodSecurity,
    attrs: &Attributes<'_>,
    namespace: &Object,
) -> Result<()> {
    if !attrs.subresource.is_empty() {
        return Ok(());
    }
    let labels = labels_of(namespace);
    let defaults = plugin.config.defaults;
    let (policy, errors) = policy_to_evaluate(&labels, defaults);
    let invalid = || RegistryError::invalid(&namespace_kind(), attrs.name, errors.clone());
    let old = match (attrs.operation, attrs.old) {
        // A create's request has no namespace of its own (upstream's attributes leave it
        // empty), so no exemption applies to it.
        (Operation::Create, _) | (_, None) => {
            return match errors.is_empty() {
                true => Ok(()),
                false => Err(invalid()),
            };
        }
        (_, Some(old)) => old,
    };
    let (old_policy, old_errors) = policy_to_evaluate(&labels_of(old), defaults);
    // Bad labels already there may stay while other labels change.
    if !errors.is_empty() && (old_errors.is_empty() || errors != old_errors) {
        return Err(invalid());
    }
    let (new, before) = (policy.enforce, old_policy.enforce);
    let relaxed = new.version == before.version && new.level <= before.level;
    if new == before || new.level == Level::Privileged || relaxed {
        return Ok(());
    }
    let name = attrs.name;
    if plugin.config.exemptions.namespace(name) {
        if let Some(warning) = exempt_warning(name, &policy, &defaults, &labels) {
            crate::warning::add(warning);
        }
        return Ok(());
    }
    let pods = existing_pods(plugin, name).await;
    let warnings = match pods {
        Ok(pods) => pods_warnings(&plugin.config.exemptions, name, new, pods),
        Err(e) => {
            tracing::warn!(namespace = name, error = %e, "PodSecurity could not list pods");
            vec!["failed to list pods while checking new PodSecurity enforce level".to_string()]
        }
    };
    warnings.into_iter().for_each(crate::warning::add);
    Ok(())
}

async fn existing_pods(plugin: &PodSecurity, namespace: &str) -> Result<Vec<Value>> {
    let opts = ListOptions {
        revision: ReadRevision::Any,
        recursive: true,
        ..Default::default()
    };
    let prefix = format!("{}{namespace}/", plugin.pods_prefix);
    let list = plugin
        .pods
        .get_list(&prefix, opts)
        .await
        .map_err(|e| RegistryError::Internal(e.to_string()))?;
    Ok(list
        .items
        .iter()
        .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
        .collect())
}

fn controller_uid(pod: &Value) -> Option<&str> {
    pod["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == Value::Bool(true))
        .and_then(|r| r["uid"].as_str())
}

/// Upstream's prioritizePods: pods of exempt runtime classes are left out; of the pods of
/// one controller the first comes first and the others last, so that a check cut short has
/// seen as many different workloads as it could.
fn prioritize(exemptions: &Exemptions, pods: Vec<Value>) -> Vec<Value> {
    let mut first = Vec::new();
    let mut duplicates = Vec::new();
    let mut controllers = HashSet::new();
    for pod in pods {
        let class = pod["spec"]["runtimeClassName"].as_str();
        if exemptions.runtime_class(class) {
            continue;
        }
        let seen = controller_uid(&pod).is_some_and(|uid| !controllers.insert(uid.to_string()));
        match seen {
            true => duplicates.push(pod),
            false => first.push(pod),
        }
    }
    first.extend(duplicates);
    first
}

/// Upstream's EvaluatePodsInNamespace: the pods that violate `enforce`, grouped by what they
/// violate, each group named by its first pod and how many others share it.
fn pods_warnings(
    exemptions: &Exemptions,
    namespace: &str,
    enforce: LevelVersion,
    pods: Vec<Value>,
) -> Vec<String> {
    let started = Instant::now();
    let pods = prioritize(exemptions, pods);
    let total = pods.len();
    let mut checked = total.min(MAX_PODS_TO_CHECK);
    // Each distinct reason, in the order first seen, with its first pod by name and count.
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, (String, usize)> = HashMap::new();
    for (i, pod) in pods.iter().take(MAX_PODS_TO_CHECK).enumerate() {
        let found = evaluate(enforce, &pod["metadata"], &pod["spec"]);
        if !found.is_empty() {
            let reason = forbidden_reason(&found);
            let name = pod["metadata"]["name"].as_str().unwrap_or_default();
            let group = groups.entry(reason.clone()).or_insert_with(|| {
                order.push(reason);
                (name.to_string(), 0)
            });
            if name < group.0.as_str() {
                group.0 = name.to_string();
            }
            group.1 += 1;
        }
        if started.elapsed() > POD_CHECK_TIMEOUT {
            checked = i + 1;
            break;
        }
    }
    let mut warnings = Vec::new();
    if checked < total {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
        ));
    }
    if !order.is_empty() {
        warnings.push(format!(
            "existing pods in namespace \"{namespace}\" violate the new PodSecurity enforce level \"{enforce}\""
        ));
    }
    let mut decorated: Vec<String> = order
        .iter()
        .map(|reason| {
            let (pod, count) = &groups[reason];
            match count {
                1 => format!("{pod}: {reason}"),
                2 => format!("{pod} (and 1 other pod): {reason}"),
                n => format!("{pod} (and {} other pods): {reason}", n - 1),
            }
        })
        .collect();
    decorated.sort();
    warnings.extend(decorated);
    warnings
}

/// Upstream's exemptNamespaceWarning: labelling an exempt namespace with a policy other than
/// the defaults warns that the policy is ignored, naming the modes set explicitly.
pub fn exempt_warning(
    namespace: &str,
    policy: &Policy,
    defaults: &Policy,
    labels: &BTreeMap<String, String>,
) -> Option<String> {
    if policy.fully_privileged() || policy.equivalent(defaults) {
        return None;
    }
    let modes = [
        (
            "enforce",
            policy.enforce,
            ENFORCE_LABEL,
            ENFORCE_VERSION_LABEL,
        ),
        ("audit", policy.audit, AUDIT_LABEL, AUDIT_VERSION_LABEL),
        ("warn", policy.warn, WARN_LABEL, WARN_VERSION_LABEL),
    ];
    let set: Vec<String> = modes
        .iter()
        .filter(|(_, lv, level, version)| {
            lv.level != Level::Privileged
                && (labels.contains_key(*level) || labels.contains_key(*version))
        })
        .map(|(mode, lv, _, _)| format!("{mode}={lv}"))
        .collect();
    Some(format!(
        "namespace \"{namespace}\" is exempt from Pod Security, and the policy ({}) will be ignored",
        set.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::pod_security::levels::Version;
    use serde_json::json;

    fn pod(name: &str, privileged: bool, owner: Option<&str>) -> Value {
        let owners: Vec<Value> = owner
            .map(|uid| json!({"uid": uid, "controller": true, "kind": "ReplicaSet", "name": "rs", "apiVersion": "apps/v1"}))
            .into_iter()
            .collect();
        json!({
            "metadata": {"name": name, "ownerReferences": owners},
            "spec": {"containers": [{"name": "c", "securityContext": {"privileged": privileged}}]}
        })
    }

    const RESTRICTED: LevelVersion = LevelVersion {
        level: Level::Restricted,
        version: Version::Latest,
    };

    #[test]
    fn violating_pods_are_grouped_by_reason_and_named() {
        let pods = vec![
            pod("web-2", true, Some("rs1")),
            pod("web-1", true, Some("rs1")),
            pod("solo", false, None),
            pod("zeta", true, None),
            pod("debug", false, None),
        ];
        let warnings = pods_warnings(&Exemptions::default(), "ns", RESTRICTED, pods);
        assert_eq!(
            warnings,
            [
                "existing pods in namespace \"ns\" violate the new PodSecurity enforce level \"restricted:latest\"",
                "debug (and 1 other pod): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
                "web-1 (and 2 other pods): privileged, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
            ]
        );
        let clean = pods_warnings(&Exemptions::default(), "ns", RESTRICTED, Vec::new());
        assert!(clean.is_empty());
    }

    #[test]
    fn pods_of_exempt_runtime_classes_and_repeated_controllers_come_last_or_not_at_all() {
        let exemptions = Exemptions {
            runtime_classes: vec!["kata".into()],
            ..Default::default()
        };
        let mut kata = pod("kata", true, None);
        kata["spec"]["runtimeClassName"] = json!("kata");
        let order: Vec<String> = prioritize(
            &exemptions,
            vec![
                pod("a", true, Some("x")),
                pod("b", true, Some("x")),
                kata,
                pod("c", true, None),
            ],
        )
        .iter()
        .map(|p| {
            p["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
        assert_eq!(order, ["a", "c", "b"]);
    }

    #[test]
    fn exempt_namespaces_warn_that_their_labels_are_ignored() {
        let labels: BTreeMap<String, String> = [
            (ENFORCE_LABEL.to_string(), "baseline".to_string()),
            (WARN_VERSION_LABEL.to_string(), "v1.30".to_string()),
        ]
        .into();
        let (policy, _) = policy_to_evaluate(&labels, Policy::default());
        assert_eq!(
            exempt_warning("ci", &policy, &Policy::default(), &labels).as_deref(),
            Some("namespace \"ci\" is exempt from Pod Security, and the policy (enforce=baseline:latest, warn=baseline:v1.30) will be ignored")
        );
        let none = BTreeMap::new();
        assert_eq!(
            exempt_warning("ci", &Policy::default(), &Policy::default(), &none),
            None
        );
    }
}
