//! Controllers of pods: defaults of their specs and pod templates, and the selector rules.

use serde_json::{json, Value};

use super::pod::{default_pod_spec, validate_pod_spec};
use super::{at, at_mut, default_at, Strategy};
use crate::error::Cause;
use crate::selector::labels::LabelSelector;

fn default_template(obj: &mut Value, template: &[&str]) {
    let mut spec_path = template.to_vec();
    spec_path.push("spec");
    if let Some(spec) = at_mut(obj, &spec_path) {
        default_pod_spec(spec);
    }
}

/// The apps/v1 rule: a selector is required and must match the template's labels.
fn validate_selector_and_template(
    obj: &Value,
    template: &[&str],
    field_prefix: &str,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut spec_path = template.to_vec();
    spec_path.push("spec");
    let template_field = format!("{field_prefix}.{}", template[1..].join("."));
    causes.extend(validate_pod_spec(
        at(obj, &spec_path),
        &format!("{template_field}.spec"),
    ));
    let mut labels_path = template.to_vec();
    labels_path.extend(["metadata", "labels"]);
    let labels = at(obj, &labels_path).cloned().unwrap_or(Value::Null);
    match at(obj, &["spec", "selector"]) {
        None | Some(Value::Null) => causes.push(Cause::required("spec.selector")),
        Some(selector) => match LabelSelector::from_label_selector_json(selector) {
            Err(e) => causes.push(Cause::invalid("spec.selector", selector, &e.to_string())),
            Ok(sel) if sel.is_empty() => causes.push(Cause::invalid(
                "spec.selector",
                selector,
                "empty selector is invalid for deployment",
            )),
            Ok(sel) if !sel.matches_labels(&labels) => causes.push(Cause::invalid(
                &format!("{template_field}.metadata.labels"),
                &labels,
                "`selector` does not match template `labels`",
            )),
            Ok(_) => {}
        },
    }
    if let Some(replicas) = at(obj, &["spec", "replicas"]).and_then(Value::as_i64) {
        if replicas < 0 {
            causes.push(Cause::invalid(
                "spec.replicas",
                replicas,
                "must be greater than or equal to 0",
            ));
        }
    }
    causes
}

/// Deployments, ReplicaSets, StatefulSets and DaemonSets share the apps/v1 template rules.
macro_rules! apps_strategy {
    ($name:ident, $defaults:expr) => {
        pub struct $name;

        impl Strategy for $name {
            fn prepare_for_create(&self, obj: &mut Value) {
                #[allow(clippy::redundant_closure_call)]
                ($defaults)(&mut *obj);
                default_template(obj, &["spec", "template"]);
            }

            fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
                self.prepare_for_create(new);
            }

            fn validate(&self, obj: &Value) -> Vec<Cause> {
                validate_selector_and_template(obj, &["spec", "template"], "spec")
            }

            fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
                let mut causes = self.validate(new);
                if at(new, &["spec", "selector"]) != at(old, &["spec", "selector"]) {
                    causes.push(Cause::invalid(
                        "spec.selector",
                        at(new, &["spec", "selector"])
                            .cloned()
                            .unwrap_or(Value::Null),
                        "field is immutable",
                    ));
                }
                causes
            }
        }
    };
}

apps_strategy!(DeploymentStrategy, |obj: &mut Value| {
    default_at(obj, &["spec", "replicas"], json!(1));
    default_at(
        obj,
        &["spec", "strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
    );
    if at(obj, &["spec", "strategy", "type"]).and_then(Value::as_str) == Some("RollingUpdate") {
        default_at(obj, &["spec", "strategy", "rollingUpdate"], json!({}));
        default_at(
            obj,
            &["spec", "strategy", "rollingUpdate", "maxUnavailable"],
            json!("25%"),
        );
        default_at(
            obj,
            &["spec", "strategy", "rollingUpdate", "maxSurge"],
            json!("25%"),
        );
    }
    default_at(obj, &["spec", "revisionHistoryLimit"], json!(10));
    default_at(obj, &["spec", "progressDeadlineSeconds"], json!(600));
});

apps_strategy!(ReplicaSetStrategy, |obj: &mut Value| {
    default_at(obj, &["spec", "replicas"], json!(1));
});

apps_strategy!(StatefulSetStrategy, |obj: &mut Value| {
    default_at(obj, &["spec", "replicas"], json!(1));
    default_at(obj, &["spec", "podManagementPolicy"], json!("OrderedReady"));
    default_at(
        obj,
        &["spec", "updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
    );
    default_at(obj, &["spec", "revisionHistoryLimit"], json!(10));
    default_at(
        obj,
        &["spec", "persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
    );
});

apps_strategy!(DaemonSetStrategy, |obj: &mut Value| {
    default_at(
        obj,
        &["spec", "updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
    );
    default_at(obj, &["spec", "revisionHistoryLimit"], json!(10));
});

pub struct ReplicationControllerStrategy;

impl Strategy for ReplicationControllerStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        default_at(obj, &["spec", "replicas"], json!(1));
        // A missing selector defaults to the template's labels (core/v1 behaviour).
        if at(obj, &["spec", "selector"]).is_none() {
            if let Some(labels) = at(obj, &["spec", "template", "metadata", "labels"]).cloned() {
                default_at(obj, &["spec", "selector"], labels);
            }
        }
        default_template(obj, &["spec", "template"]);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }
}

pub struct JobStrategy;

impl Strategy for JobStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        default_at(obj, &["spec", "completions"], json!(1));
        default_at(obj, &["spec", "parallelism"], json!(1));
        default_at(obj, &["spec", "backoffLimit"], json!(6));
        default_at(obj, &["spec", "completionMode"], json!("NonIndexed"));
        default_at(obj, &["spec", "suspend"], json!(false));
        default_at(
            obj,
            &["spec", "podReplacementPolicy"],
            json!("TerminatingOrFailed"),
        );
        default_template(obj, &["spec", "template"]);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes =
            validate_pod_spec(at(obj, &["spec", "template", "spec"]), "spec.template.spec");
        let policy =
            at(obj, &["spec", "template", "spec", "restartPolicy"]).and_then(Value::as_str);
        if !matches!(policy, Some("Never") | Some("OnFailure")) {
            causes.push(Cause::not_supported(
                "spec.template.spec.restartPolicy",
                policy.unwrap_or_default(),
                &["OnFailure", "Never"],
            ));
        }
        causes
    }
}

pub struct CronJobStrategy;

impl Strategy for CronJobStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        default_at(obj, &["spec", "concurrencyPolicy"], json!("Allow"));
        default_at(obj, &["spec", "suspend"], json!(false));
        default_at(obj, &["spec", "successfulJobsHistoryLimit"], json!(3));
        default_at(obj, &["spec", "failedJobsHistoryLimit"], json!(1));
        default_template(obj, &["spec", "jobTemplate", "spec", "template"]);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        if at(obj, &["spec", "schedule"])
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            causes.push(Cause::required("spec.schedule"));
        }
        causes.extend(validate_pod_spec(
            at(obj, &["spec", "jobTemplate", "spec", "template", "spec"]),
            "spec.jobTemplate.spec.template.spec",
        ));
        causes
    }
}
