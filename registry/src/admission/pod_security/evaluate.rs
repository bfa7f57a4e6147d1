//! The enforce / audit / warn decision for one pod or pod template (upstream's EvaluatePod),
//! kept free of the request so it can be tested alone: what it refuses, the warnings it
//! sends, and the audit annotations it records.

use std::collections::HashMap;

use serde_json::Value;

use super::checks::{evaluate, forbidden_detail, Forbidden};
use super::config::Config;
use super::levels::{LevelVersion, Policy};
use crate::error::{aggregate, Cause};

/// What admission makes of one request.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The Forbidden message's reason when enforce refuses.
    pub refusal: Option<String>,
    pub warnings: Vec<String>,
    /// Audit annotations, keyed without upstream's `pod-security.kubernetes.io/` prefix.
    pub annotations: Vec<(&'static str, String)>,
}

impl Outcome {
    pub fn annotate(&mut self, key: &'static str, value: String) {
        self.annotations.push((key, value));
    }

    /// Let through unjudged, and why (`namespace`, `user`, `runtimeClass`).
    pub fn exempt(reason: &str) -> Outcome {
        let mut outcome = Outcome::default();
        outcome.annotate("exempt", reason.to_string());
        outcome
    }

    /// A pod in a namespace privileged in every mode.
    pub fn privileged() -> Outcome {
        let mut outcome = Outcome::default();
        outcome.annotate(
            "enforce-policy",
            LevelVersion::PRIVILEGED_LATEST.to_string(),
        );
        outcome
    }
}

/// Upstream's EvaluatePod: enforce (for pods only) refuses, audit annotates, warn warns
/// unless the request is refused anyway; a level and version judged once serves every mode
/// that asks for it.
pub fn pod(
    config: &Config,
    policy: Policy,
    policy_errors: &[Cause],
    metadata: &Value,
    spec: &Value,
    enforce: bool,
) -> Outcome {
    if config
        .exemptions
        .runtime_class(spec["runtimeClassName"].as_str())
    {
        return Outcome::exempt("runtimeClass");
    }
    let mut outcome = Outcome::default();
    if !policy_errors.is_empty() {
        let messages: Vec<String> = policy_errors.iter().map(Cause::full_message).collect();
        outcome.annotate(
            "error",
            format!("Failed to parse policy: {}", aggregate(&messages)),
        );
    }
    let mut judged: HashMap<LevelVersion, Vec<Forbidden>> = HashMap::new();
    let mut judge = |lv: LevelVersion| {
        judged
            .entry(lv)
            .or_insert_with(|| evaluate(lv, metadata, spec))
            .clone()
    };
    if enforce {
        outcome.annotate("enforce-policy", policy.enforce.to_string());
        let found = judge(policy.enforce);
        if !found.is_empty() {
            outcome.refusal = Some(format!(
                "violates PodSecurity \"{}\": {}",
                policy.enforce,
                forbidden_detail(&found)
            ));
        }
    }
    let found = judge(policy.audit);
    if !found.is_empty() {
        outcome.annotate(
            "audit-violations",
            format!(
                "would violate PodSecurity \"{}\": {}",
                policy.audit,
                forbidden_detail(&found)
            ),
        );
    }
    if outcome.refusal.is_none() {
        let found = judge(policy.warn);
        if !found.is_empty() {
            outcome.warnings.push(format!(
                "would violate PodSecurity \"{}\": {}",
                policy.warn,
                forbidden_detail(&found)
            ));
        }
    }
    outcome
}

/// The pod template a workload holds (its metadata and spec), None when it has none.
pub fn pod_template<'a>(plural: &str, obj: &'a Value) -> Option<&'a Value> {
    let template = match plural {
        "cronjobs" => &obj["spec"]["jobTemplate"]["spec"]["template"],
        "podtemplates" => &obj["template"],
        _ => &obj["spec"]["template"],
    };
    // Only a ReplicationController's template is optional; the others are always judged.
    match (plural, template) {
        ("replicationcontrollers", Value::Null) => None,
        (_, Value::Null) => Some(&Value::Null),
        (_, t) => Some(t),
    }
}

fn images(spec: &Value, field: &str) -> Vec<Value> {
    spec[field]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["image"].clone())
        .collect()
}

/// Upstream's isSignificantPodUpdate: an update is judged again only when it changes what
/// runs (a container's image, the number of containers, or an ephemeral container).
pub fn significant_pod_update(new: &Value, old: &Value) -> bool {
    let (spec, old_spec) = (&new["spec"], &old["spec"]);
    for field in ["containers", "initContainers"] {
        if images(spec, field) != images(old_spec, field) {
            return true;
        }
    }
    let old_ephemeral = old_spec["ephemeralContainers"].as_array();
    spec["ephemeralContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            let before = old_ephemeral
                .into_iter()
                .flatten()
                .find(|o| o["name"] == c["name"]);
            before.is_none_or(|o| o["image"] != c["image"])
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::pod_security::levels::{Level, Version};
    use serde_json::json;

    fn lv(level: Level) -> LevelVersion {
        LevelVersion {
            level,
            version: Version::Latest,
        }
    }

    fn policy(enforce: Level, audit: Level, warn: Level) -> Policy {
        Policy {
            enforce: lv(enforce),
            audit: lv(audit),
            warn: lv(warn),
        }
    }

    fn privileged_spec() -> Value {
        json!({"containers": [{"name": "c", "image": "nginx", "securityContext": {"privileged": true}}]})
    }

    const PRIVILEGED: &str =
        "privileged (container \"c\" must not set securityContext.privileged=true)";

    #[test]
    fn enforce_refuses_and_then_warns_nothing() {
        let p = policy(Level::Baseline, Level::Baseline, Level::Baseline);
        let out = pod(
            &Config::default(),
            p,
            &[],
            &json!({}),
            &privileged_spec(),
            true,
        );
        assert_eq!(
            out.refusal.as_deref(),
            Some(format!("violates PodSecurity \"baseline:latest\": {PRIVILEGED}").as_str())
        );
        assert!(out.warnings.is_empty());
        assert_eq!(
            out.annotations,
            [
                ("enforce-policy", "baseline:latest".to_string()),
                (
                    "audit-violations",
                    format!("would violate PodSecurity \"baseline:latest\": {PRIVILEGED}")
                )
            ]
        );
    }

    #[test]
    fn workloads_are_only_warned_of_and_audited() {
        let p = policy(Level::Restricted, Level::Privileged, Level::Baseline);
        let out = pod(
            &Config::default(),
            p,
            &[],
            &json!({}),
            &privileged_spec(),
            false,
        );
        assert_eq!(out.refusal, None);
        assert_eq!(
            out.warnings,
            [format!(
                "would violate PodSecurity \"baseline:latest\": {PRIVILEGED}"
            )]
        );
        assert!(out.annotations.is_empty());
    }

    #[test]
    fn exempt_runtime_classes_and_bad_labels_are_recorded() {
        let mut config = Config::default();
        config.exemptions.runtime_classes = vec!["kata".into()];
        let mut spec = privileged_spec();
        spec["runtimeClassName"] = json!("kata");
        let p = policy(Level::Restricted, Level::Restricted, Level::Restricted);
        let out = pod(&config, p, &[], &json!({}), &spec, true);
        assert_eq!(out, Outcome::exempt("runtimeClass"));

        let errors = [Cause::invalid("metadata.labels[x]", "\"y\"", "bad")];
        let p = policy(Level::Privileged, Level::Privileged, Level::Privileged);
        let out = pod(
            &Config::default(),
            p,
            &errors,
            &json!({}),
            &privileged_spec(),
            true,
        );
        assert_eq!(
            out.annotations[0],
            (
                "error",
                "Failed to parse policy: metadata.labels[x]: Invalid value: \"y\": bad".to_string()
            )
        );
        assert_eq!(out.refusal, None);
    }

    #[test]
    fn templates_are_found_where_each_workload_keeps_them() {
        let t = json!({"spec": {"containers": []}});
        let deployment = json!({"spec": {"template": t}});
        assert_eq!(pod_template("deployments", &deployment), Some(&t));
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": t}}}});
        assert_eq!(pod_template("cronjobs", &cron), Some(&t));
        assert_eq!(
            pod_template("podtemplates", &json!({"template": t})),
            Some(&t)
        );
        assert_eq!(
            pod_template("replicationcontrollers", &json!({"spec": {}})),
            None
        );
    }

    #[test]
    fn only_updates_of_what_runs_are_judged_again() {
        let old = json!({"spec": {"containers": [{"name": "c", "image": "a"}]}});
        let relabelled = json!({"metadata": {"labels": {"x": "y"}}, "spec": {"containers": [{"name": "c", "image": "a"}]}});
        assert!(!significant_pod_update(&relabelled, &old));
        let new_image = json!({"spec": {"containers": [{"name": "c", "image": "b"}]}});
        assert!(significant_pod_update(&new_image, &old));
        let debug = json!({"spec": {"containers": [{"name": "c", "image": "a"}], "ephemeralContainers": [{"name": "d", "image": "busybox"}]}});
        assert!(significant_pod_update(&debug, &old));
        assert!(!significant_pod_update(&debug, &debug));
    }
}
