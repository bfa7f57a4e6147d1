//! `/openapi/v2`: one Swagger 2.0 document of everything served.

mod common;

use common::{json, openapi};
use serde_json::{json, Value};

#[test]
fn swagger_document_with_definitions_and_paths() {
    let api = openapi();
    let doc = json(api.v2().bytes());
    assert_eq!(doc["swagger"], "2.0");
    let definitions = doc["definitions"].as_object().expect("definitions");
    let pod = &definitions["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "Pod", "version": "v1"}])
    );
    assert_eq!(
        pod["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(definitions.contains_key("io.k8s.api.apps.v1.Deployment"));
    assert!(definitions.contains_key("io.k8s.api.core.v1.ConfigMapList"));
    let containers = &definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(
        definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"],
        "string"
    );
    assert_eq!(
        definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"],
        "string"
    );

    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.contains_key("/api/v1/namespaces/{namespace}/pods"));
    let patch = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
    assert!(patch["consumes"]
        .as_array()
        .expect("consumes")
        .contains(&json!("application/strategic-merge-patch+json")));
    let params = patch["parameters"].as_array().expect("parameters");
    assert!(params.iter().any(|p| p["in"] == "body"
        && p["schema"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"));
    assert!(params
        .iter()
        .any(|p| p["name"] == "fieldValidation" && p["in"] == "query" && p["type"] == "string"));

    // Self-contained: every reference names a definition of the document.
    let mut refs = Vec::new();
    collect(&doc, &mut refs);
    for r in refs {
        let name = r.strip_prefix("#/definitions/").expect("v2 reference");
        assert!(definitions.contains_key(name), "{name} is missing");
    }
    assert_eq!(api.v2().hash(), openapi().v2().hash());
}

fn collect(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push(r.clone());
            }
            map.values().for_each(|v| collect(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
        _ => {}
    }
}
