//! Building the bootstrap objects: every one carries upstream's bootstrapping label and the
//! autoupdate annotation that lets reconciliation keep it current.

use serde_json::{json, Map, Value};

use super::rule::{to_json, PolicyRule};
use super::RBAC_GROUP;

pub const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
pub const BOOTSTRAPPING_VALUE: &str = "rbac-defaults";
/// `"false"` on an object stops reconciliation from touching it.
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";

const API_VERSION: &str = "rbac.authorization.k8s.io/v1";

fn metadata(name: &str, namespace: Option<&str>, labels: &[(&str, &str)]) -> Value {
    let mut all: Map<String, Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    all.insert(BOOTSTRAPPING_LABEL.into(), json!(BOOTSTRAPPING_VALUE));
    let mut meta = json!({
        "name": name,
        "labels": all,
        "annotations": {AUTOUPDATE_ANNOTATION: "true"},
    });
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    meta
}

fn rules_json(rules: Vec<PolicyRule>) -> Value {
    Value::Array(rules.iter().map(to_json).collect())
}

/// A ClusterRole holding `rules`.
pub fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> Value {
    labelled_cluster_role(name, &[], rules)
}

/// A ClusterRole with labels of its own (one that is aggregated into another).
pub fn labelled_cluster_role(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "ClusterRole",
        "metadata": metadata(name, None, labels),
        "rules": rules_json(rules),
    })
}

/// A ClusterRole whose rules are those of the ClusterRoles labelled `<aggregate_label>: "true"`,
/// filled in by the aggregation controller.
pub fn aggregated_cluster_role(
    name: &str,
    labels: &[(&str, &str)],
    aggregate_label: &str,
) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "ClusterRole",
        "metadata": metadata(name, None, labels),
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {aggregate_label: "true"}}]},
    })
}

pub fn role(namespace: &str, name: &str, rules: Vec<PolicyRule>) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "Role",
        "metadata": metadata(name, Some(namespace), &[]),
        "rules": rules_json(rules),
    })
}

/// Subjects of a binding, in upstream's wire form.
pub fn user(name: &str) -> Value {
    json!({"kind": "User", "apiGroup": RBAC_GROUP, "name": name})
}

pub fn group(name: &str) -> Value {
    json!({"kind": "Group", "apiGroup": RBAC_GROUP, "name": name})
}

pub fn service_account(namespace: &str, name: &str) -> Value {
    json!({"kind": "ServiceAccount", "name": name, "namespace": namespace})
}

fn binding(
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    role_kind: &str,
    role: &str,
    subjects: Vec<Value>,
) -> Value {
    let mut b = json!({
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata(name, namespace, &[]),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": role},
    });
    // Upstream's system:node binding has no subjects at all (the Node authorizer serves
    // nodes), and its wire form omits the field.
    if !subjects.is_empty() {
        b["subjects"] = Value::Array(subjects);
    }
    b
}

/// A ClusterRoleBinding of the ClusterRole of the same name.
pub fn cluster_role_binding(role: &str, subjects: Vec<Value>) -> Value {
    binding(
        "ClusterRoleBinding",
        None,
        role,
        "ClusterRole",
        role,
        subjects,
    )
}

/// A RoleBinding named `name` of the Role `role` in `namespace`.
pub fn role_binding(namespace: &str, name: &str, role: &str, subjects: Vec<Value>) -> Value {
    binding("RoleBinding", Some(namespace), name, "Role", role, subjects)
}
