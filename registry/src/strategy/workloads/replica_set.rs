//! ReplicaSets (apps/v1) and ReplicationControllers (core/v1): replicas and a selector over
//! a long-running pod template.

use serde_json::{json, Value};

use super::status;
use super::template::{
    apps_selector, default_template, long_running, nonnegative, selector_matches,
    selector_unchanged, template_labels, validate_template,
};
use crate::error::Cause;
use crate::selector::labels::LabelSelector;
use crate::strategy::{at, default_at, Strategy};

pub struct ReplicaSetStrategy;

fn validate_replica_set(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    nonnegative(obj, &["spec", "replicas"], &mut causes);
    nonnegative(obj, &["spec", "minReadySeconds"], &mut causes);
    causes.extend(apps_selector(obj, "deployment", "invalid label selector"));
    let template = at(obj, &["spec", "template"]);
    causes.extend(validate_template(template, "spec.template"));
    causes.extend(long_running(template, "spec.template", "ReplicaSet"));
    causes
}

impl Strategy for ReplicaSetStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        default_at(obj, &["spec", "replicas"], json!(1));
        default_template(obj, &["spec", "template"]);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_replica_set(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = validate_replica_set(new);
        causes.extend(selector_unchanged(new, old));
        causes
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        status::replica_counts(new, &["fullyLabeledReplicas"])
    }
}

pub struct ReplicationControllerStrategy;

/// SetDefaults_ReplicationController: the template's labels stand in for a missing selector
/// and for missing labels of the controller itself.
fn rc_defaults(obj: &mut Value) {
    if let Some(labels) = template_labels(obj, &["spec", "template"]).cloned() {
        let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(|m| m.is_empty());
        if empty(at(obj, &["spec", "selector"])) {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("selector".into(), labels.clone());
            }
        }
        if empty(at(obj, &["metadata", "labels"])) {
            crate::object::meta_mut(obj).insert("labels".into(), labels);
        }
    }
    default_at(obj, &["spec", "replicas"], json!(1));
    default_template(obj, &["spec", "template"]);
}

fn validate_rc(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    nonnegative(obj, &["spec", "minReadySeconds"], &mut causes);
    let selector = at(obj, &["spec", "selector"])
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty());
    if selector.is_none() {
        causes.push(Cause::required("spec.selector"));
    }
    nonnegative(obj, &["spec", "replicas"], &mut causes);
    match at(obj, &["spec", "template"]).filter(|t| !t.is_null()) {
        None => causes.push(Cause::required("spec.template")),
        Some(template) => {
            if let Some(map) = selector {
                let as_selector = json!({ "matchLabels": map });
                if let Ok(sel) = LabelSelector::from_label_selector_json(&as_selector) {
                    let labels = template_labels(obj, &["spec", "template"]);
                    causes.extend(selector_matches(&sel, labels, "spec.template"));
                }
            }
            causes.extend(validate_template(Some(template), "spec.template"));
            causes.extend(long_running(
                Some(template),
                "spec.template",
                "ReplicationController",
            ));
        }
    }
    causes
}

impl Strategy for ReplicationControllerStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        rc_defaults(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        rc_defaults(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_rc(obj)
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        status::replica_counts(new, &["fullyLabeledReplicas"])
    }
}
