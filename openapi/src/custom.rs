//! Definitions of custom resources, from their CustomResourceDefinitions' schemas, completed
//! as upstream completes them: the standard apiVersion / kind / metadata fields, the
//! group-version-kind tag and a List kind.

use serde_json::{json, Map, Value};

use crate::builtin::{builtin, LIST_META, OBJECT_META};
use crate::gvk::Gvk;
use crate::names::custom_definition;
use crate::refs::definition_ref;
use crate::spec::CustomResource;

const POD: &str = "io.k8s.api.core.v1.Pod";

/// A custom resource's definitions: (kind name, kind schema), (list name, list schema).
pub(crate) fn definitions(custom: &CustomResource) -> [(String, Value); 2] {
    let r = &custom.resource;
    let name = custom_definition(&r.group, &r.version, &r.kind);
    let list_kind = format!("{}List", r.kind);
    let list_name = custom_definition(&r.group, &r.version, &list_kind);

    // A schema that is not an object (or none at all) describes an object keeping anything.
    let mut schema = match custom.schema.as_ref().map(without_refs) {
        Some(Value::Object(map)) => map,
        _ => Map::from_iter([
            ("type".to_string(), json!("object")),
            (
                "x-kubernetes-preserve-unknown-fields".to_string(),
                json!(true),
            ),
        ]),
    };
    schema.entry("type").or_insert_with(|| json!("object"));
    let properties = schema.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(properties) = properties {
        properties.insert("apiVersion".into(), type_meta("apiVersion"));
        properties.insert("kind".into(), type_meta("kind"));
        properties.insert(
            "metadata".into(),
            json!({
                "$ref": definition_ref(OBJECT_META)["$ref"],
                "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
            }),
        );
    }
    schema.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([Gvk::new(&r.group, &r.version, &r.kind).to_value()]),
    );

    let list = json!({
        "description": format!("{list_kind} is a list of {}", r.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": type_meta("apiVersion"),
            "items": {
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", r.plural),
                "type": "array",
                "items": definition_ref(&name),
            },
            "kind": type_meta("kind"),
            "metadata": {
                "$ref": definition_ref(LIST_META)["$ref"],
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        "x-kubernetes-group-version-kind": [Gvk::new(&r.group, &r.version, &list_kind).to_value()],
    });
    [(name, Value::Object(schema)), (list_name, list)]
}

/// The schema with no `$ref` of its own. Structural schemas have none (the apiserver rejects
/// them), and one that slipped through must not pull built-in definitions into a custom
/// resource's schema, where inlining could multiply them.
fn without_refs(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        let value = match (key.as_str(), value) {
            ("$ref", _) => continue,
            ("properties" | "patternProperties" | "definitions", Value::Object(named)) => {
                Value::Object(
                    named
                        .iter()
                        .map(|(name, s)| (name.clone(), without_refs(s)))
                        .collect(),
                )
            }
            ("items" | "additionalProperties" | "not", _) => without_refs(value),
            ("allOf" | "anyOf" | "oneOf", Value::Array(all)) => {
                Value::Array(all.iter().map(without_refs).collect())
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

/// apiVersion and kind read the same on every kind; borrow a built-in's wording.
fn type_meta(field: &str) -> Value {
    builtin()
        .definitions
        .get(POD)
        .and_then(|pod| pod.pointer(&format!("/properties/{field}")))
        .cloned()
        .unwrap_or_else(|| json!({"type": "string"}))
}
