//! Resolved schemas for server-side validation, and reads from many threads.

mod common;

use std::sync::Arc;

use common::openapi;
use serde_json::Value;

fn has_ref(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.contains_key("$ref") || map.values().any(has_ref),
        Value::Array(items) => items.iter().any(has_ref),
        _ => false,
    }
}

#[test]
fn built_in_schemas_are_resolved() {
    let api = openapi();
    let pod = api.schema_for("", "v1", "Pod").expect("Pod");
    assert!(!has_ref(&pod));
    let containers = &pod["properties"]["spec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-list-map-keys"][0], "name");
    assert_eq!(containers["items"]["properties"]["name"]["type"], "string");
    assert_eq!(
        pod["properties"]["metadata"]["properties"]["creationTimestamp"]["format"],
        "date-time"
    );
    // Kinds the server does not serve still have schemas.
    let lease = api
        .schema_for("coordination.k8s.io", "v1", "Lease")
        .expect("Lease");
    assert_eq!(lease["properties"]["spec"]["type"], "object");
    let list = api
        .schema_for("apps", "v1", "DeploymentList")
        .expect("list");
    assert_eq!(list["properties"]["items"]["type"], "array");
    assert!(api.schema_for("apps", "v1", "Nothing").is_none());
    // Built anew each time (its callers keep their compiled forms), and the same.
    let again = api.schema_for("", "v1", "Pod").expect("Pod");
    assert!(!Arc::ptr_eq(&pod, &again));
    assert_eq!(pod, again);
}

#[test]
fn recursive_schemas_are_cut() {
    let api = openapi();
    let crd = api
        .schema_for("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
        .expect("CRD");
    assert!(!has_ref(&crd));
    let props = crd.pointer(
        "/properties/spec/properties/versions/items/properties/schema/properties/openAPIV3Schema/properties/properties/additionalProperties",
    );
    assert_eq!(
        props.and_then(|p| p.get("x-kubernetes-preserve-unknown-fields")),
        Some(&Value::Bool(true))
    );
}

#[test]
fn concurrent_readers_see_one_document() {
    let api = Arc::new(openapi());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let api = api.clone();
            std::thread::spawn(move || {
                let index = api.v3_index().hash().to_string();
                let core = api.v3_group_version("api/v1").map(|d| d.hash().to_string());
                (index, core)
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("no panic"))
        .collect();
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}
