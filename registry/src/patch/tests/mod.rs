mod json;
mod lists;
mod strategic;
mod upstream;

use serde_json::Value;

use super::{apply_patch, PatchSchema, PatchType};
use crate::error::{RegistryError, Result};

/// The generated patch metadata of a built-in v1 kind.
fn schema_for(group: &str, kind: &str) -> Option<&'static PatchSchema> {
    openapi::patch_meta::patch_schema(group, "v1", kind)
}

/// A strategic merge patch on a built-in kind.
fn smp(group: &str, kind: &str, original: &Value, patch: &Value) -> Result<Value> {
    let schema = schema_for(group, kind).expect("built-in kind");
    apply_patch(
        PatchType::Strategic,
        original,
        patch.to_string().as_bytes(),
        Some(schema),
    )
}

fn smp_ok(group: &str, kind: &str, original: &Value, patch: &Value) -> Value {
    match smp(group, kind, original, patch) {
        Ok(v) => v,
        Err(e) => panic!("patch failed: {e}"),
    }
}

fn raw(kind: PatchType, original: &Value, body: &str) -> Result<Value> {
    apply_patch(kind, original, body.as_bytes(), schema_for("", "Pod"))
}

fn bad_request(result: Result<Value>) -> String {
    match result {
        Err(RegistryError::BadRequest(message)) => message,
        other => panic!("expected BadRequest, got {other:?}"),
    }
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

/// No `$`-directive key anywhere in the value.
fn assert_no_directives(value: &Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                assert!(!k.starts_with('$'), "directive {k} leaked into {value}");
                assert_no_directives(v);
            }
        }
        Value::Array(items) => items.iter().for_each(assert_no_directives),
        _ => {}
    }
}

#[test]
fn content_types() {
    assert_eq!(
        PatchType::from_content_type("application/json-patch+json"),
        Some(PatchType::Json)
    );
    assert_eq!(
        PatchType::from_content_type("application/merge-patch+json; charset=utf-8"),
        Some(PatchType::Merge)
    );
    assert_eq!(
        PatchType::from_content_type("application/strategic-merge-patch+json"),
        Some(PatchType::Strategic)
    );
    assert_eq!(
        PatchType::from_content_type("application/apply-patch+yaml"),
        Some(PatchType::Apply)
    );
    assert_eq!(PatchType::from_content_type("application/json"), None);
    assert_eq!(PatchType::from_content_type(""), None);
    assert_eq!(PatchType::Strategic.content_type(), PatchType::STRATEGIC);
}

#[test]
fn apply_is_no_json_level_patch() {
    // Server-side apply needs the kind's schema and managers: Store::apply, never here.
    let err = raw(PatchType::Apply, &serde_json::json!({}), "{}").unwrap_err();
    assert_eq!(err.code(), 500);
}

#[test]
fn schemas_cover_the_served_kinds() {
    for (group, kind) in [
        ("", "Pod"),
        ("", "Service"),
        ("", "Endpoints"),
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "ServiceAccount"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("", "ReplicationController"),
        ("", "Namespace"),
        ("", "Event"),
        ("", "LimitRange"),
        ("", "ResourceQuota"),
        ("", "PodTemplate"),
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("apps", "ControllerRevision"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("coordination.k8s.io", "Lease"),
        ("policy", "PodDisruptionBudget"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("events.k8s.io", "Event"),
        ("autoscaling", "Scale"),
    ] {
        assert!(schema_for(group, kind).is_some(), "{group}/{kind}");
    }
    assert!(schema_for("example.com", "Widget").is_none());
    assert!(schema_for("apps", "Pod").is_none());
}

#[test]
fn strategic_patch_on_a_custom_resource_is_415() {
    let err = apply_patch(
        PatchType::Strategic,
        &serde_json::json!({"spec": {}}),
        b"{\"spec\":{\"a\":1}}",
        None,
    )
    .unwrap_err();
    let status = err.status();
    assert_eq!(status.code, 415);
    assert_eq!(status.reason, "UnsupportedMediaType");
    assert_eq!(
        status.message,
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}
