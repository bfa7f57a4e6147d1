//! Custom resources: documents change at runtime as definitions come and go.

mod common;

use common::{json, openapi, spec};
use openapi::CustomResource;
use serde_json::{json, Value};

fn crontab(schema: Option<Value>) -> CustomResource {
    let mut resource = spec(
        "stable.example.com",
        "CronTab",
        "crontabs",
        true,
        &["status"],
    );
    resource.version = "v1".to_string();
    CustomResource { resource, schema }
}

fn crontab_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "cronSpec": {"type": "string"},
                    "replicas": {"type": "integer"},
                },
            },
        },
    })
}

fn index_hash(api: &openapi::OpenApi, path: &str) -> Option<String> {
    let index = json(api.v3_index().bytes());
    index["paths"][path]["serverRelativeURL"]
        .as_str()
        .and_then(|url| url.split_once("hash="))
        .map(|(_, hash)| hash.to_string())
}

#[test]
fn a_custom_resource_gets_its_own_document() {
    let api = openapi();
    assert!(api.v3_group_version("apis/stable.example.com/v1").is_none());
    api.set_custom(crontab(Some(crontab_schema())));
    let doc = json(
        api.v3_group_version("apis/stable.example.com/v1")
            .expect("served now")
            .bytes(),
    );
    let schemas = &doc["components"]["schemas"];
    let crontab = &schemas["com.example.stable.v1.CronTab"];
    assert_eq!(
        crontab["x-kubernetes-group-version-kind"],
        json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
    );
    assert_eq!(
        crontab["properties"]["spec"]["properties"]["cronSpec"]["type"],
        "string"
    );
    assert_eq!(
        crontab["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
    assert_eq!(
        schemas["com.example.stable.v1.CronTabList"]["x-kubernetes-group-version-kind"][0]["kind"],
        "CronTabList"
    );
    let list = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"];
    assert_eq!(
        list["get"]["operationId"],
        "listStableExampleComV1NamespacedCronTab"
    );
    let patch = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]
        ["patch"];
    let types = patch["requestBody"]["content"]
        .as_object()
        .expect("content");
    assert!(types.contains_key("application/merge-patch+json"));
    // Strategic merge needs Go structs: never for custom resources.
    assert!(!types.contains_key("application/strategic-merge-patch+json"));
    assert!(patch["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .any(|p| p["name"] == "fieldValidation"));
}

#[test]
fn hashes_change_only_where_the_change_is() {
    let api = openapi();
    let index = api.v3_index();
    let apps = index_hash(&api, "apis/apps/v1").expect("apps listed");
    let v2 = api.v2();

    api.set_custom(crontab(Some(crontab_schema())));
    let with_crontab = api.v3_index();
    assert_ne!(with_crontab.hash(), index.hash());
    let first = index_hash(&api, "apis/stable.example.com/v1").expect("listed");
    assert_eq!(index_hash(&api, "apis/apps/v1"), Some(apps.clone()));
    assert_ne!(api.v2().hash(), v2.hash());
    assert!(json(api.v2().bytes())["definitions"]
        .get("com.example.stable.v1.CronTab")
        .is_some());

    // Setting the same thing again changes nothing; a new schema changes the hash.
    api.set_custom(crontab(Some(crontab_schema())));
    assert_eq!(api.v3_index().hash(), with_crontab.hash());
    let mut changed = crontab_schema();
    changed["properties"]["spec"]["properties"]["image"] = json!({"type": "string"});
    api.set_custom(crontab(Some(changed)));
    let second = index_hash(&api, "apis/stable.example.com/v1").expect("listed");
    assert_ne!(first, second);
    let served = api
        .v3_group_version("apis/stable.example.com/v1")
        .expect("served");
    assert_eq!(served.hash(), second);

    assert!(api.remove_custom("stable.example.com", "v1", "crontabs"));
    assert!(!api.remove_custom("stable.example.com", "v1", "crontabs"));
    assert!(api.v3_group_version("apis/stable.example.com/v1").is_none());
    assert_eq!(api.v3_index().hash(), index.hash());
    assert_eq!(api.v2().hash(), v2.hash());
}

#[test]
fn schemas_for_validation_follow_custom_resources() {
    let api = openapi();
    assert!(api
        .schema_for("stable.example.com", "v1", "CronTab")
        .is_none());
    api.set_custom(crontab(Some(crontab_schema())));
    let schema = api
        .schema_for("stable.example.com", "v1", "CronTab")
        .expect("described");
    assert_eq!(
        schema["properties"]["spec"]["properties"]["replicas"]["type"],
        "integer"
    );
    // metadata inlined: ObjectMeta's fields are right there.
    assert_eq!(
        schema["properties"]["metadata"]["properties"]["name"]["type"],
        "string"
    );

    let mut changed = crontab_schema();
    changed["properties"]["spec"]["properties"]["replicas"] = json!({"type": "string"});
    api.set_custom(crontab(Some(changed)));
    let schema = api
        .schema_for("stable.example.com", "v1", "CronTab")
        .expect("described");
    assert_eq!(
        schema["properties"]["spec"]["properties"]["replicas"]["type"],
        "string"
    );
}

#[test]
fn references_in_a_custom_schema_are_ignored() {
    let api = openapi();
    let mut schema = crontab_schema();
    schema["properties"]["spec"]["properties"]["pod"] =
        json!({"$ref": "#/definitions/io.k8s.api.core.v1.Pod", "type": "object"});
    api.set_custom(crontab(Some(schema)));
    let resolved = api
        .schema_for("stable.example.com", "v1", "CronTab")
        .expect("described");
    assert_eq!(
        resolved["properties"]["spec"]["properties"]["pod"],
        json!({"type": "object"})
    );
}

#[test]
fn a_missing_or_odd_schema_keeps_any_field() {
    let api = openapi();
    for schema in [None, Some(json!("not a schema")), Some(json!([1, 2]))] {
        api.set_custom(crontab(schema));
        let schema = api
            .schema_for("stable.example.com", "v1", "CronTab")
            .expect("described");
        assert_eq!(schema["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(schema["type"], "object");
        assert!(api.v3_group_version("apis/stable.example.com/v1").is_some());
    }
}

/// v2 clients (kubectl's client-side validation) get upstream's structural v2 form: a value
/// that keeps unknown fields lists no fixed properties, or unknown ones would be refused.
#[test]
fn v2_lists_no_fixed_fields_where_unknown_ones_are_kept() {
    let api = openapi();
    api.set_custom(crontab(Some(json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "required": ["spec", "note"],
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "cronSpec": {"type": "string"},
                    "tags": {
                        "type": "array",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "items": {"type": "string"},
                    },
                    "choice": {"type": "string", "anyOf": [{"enum": ["a"]}, {"enum": ["b"]}]},
                    "extra": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"known": {"type": "string"}},
                    },
                },
            },
            "note": {"type": "string", "nullable": true},
        },
    }))));
    let v2 = json(api.v2().bytes());
    let definition = &v2["definitions"]["com.example.stable.v1.CronTab"];
    // The root keeps anything: only the fields every object has remain.
    let mut fields: Vec<&str> = definition["properties"]
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    fields.sort_unstable();
    assert_eq!(fields, ["apiVersion", "kind", "metadata"]);
    assert_eq!(definition["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(definition["required"], json!(["spec", "note"]));

    // Below a root that lists its fields, the same rules apply at each level.
    api.set_custom(crontab(Some(json!({
        "type": "object",
        "required": ["spec", "note"],
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "tags": {
                        "type": "array",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "items": {"type": "string"},
                    },
                    "choice": {"type": "string", "anyOf": [{"enum": ["a"]}, {"enum": ["b"]}]},
                    "extra": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"known": {"type": "string"}},
                    },
                },
            },
            "note": {"type": "string", "nullable": true},
        },
    }))));
    let v2 = json(api.v2().bytes());
    let definition = &v2["definitions"]["com.example.stable.v1.CronTab"];
    let spec = &definition["properties"]["spec"]["properties"];
    assert_eq!(
        spec["tags"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(spec["choice"], json!({"type": "string"}));
    assert_eq!(
        spec["extra"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(definition["properties"]["note"], json!({}));
    assert_eq!(definition["required"], json!(["spec"]));
    // v3 keeps the schema as written.
    let v3 = json(
        api.v3_group_version("apis/stable.example.com/v1")
            .expect("served")
            .bytes(),
    );
    let v3_spec =
        &v3["components"]["schemas"]["com.example.stable.v1.CronTab"]["properties"]["spec"];
    assert_eq!(
        v3_spec["properties"]["tags"]["items"],
        json!({"type": "string"})
    );
}
