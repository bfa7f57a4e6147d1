//! The Swagger 2.0 document of every served group-version, as `/openapi/v2` serves it.

pub(crate) mod protobuf;
mod wire;

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::builtin::{builtin, INT_OR_STRING, PATCH, QUANTITY};
use crate::operations::{Body, In, Operation, Param, PathItem, Payload, PATCH_TYPES};
use crate::refs::{definition_ref, Lookup};
use crate::render::{parts, TITLE};

pub(crate) fn document(
    paths: &[PathItem],
    definitions: &impl Lookup,
    group_versions: &BTreeSet<(String, String)>,
    info_version: &str,
) -> Value {
    let (rendered, schemas) = parts(
        paths,
        definitions,
        group_versions,
        path_item,
        |name, schema| v2_schema(name, &schema),
    );
    json!({
        "swagger": "2.0",
        "info": {"title": TITLE, "version": info_version},
        "paths": rendered,
        "definitions": schemas,
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
            },
        },
        "security": [{"BearerToken": []}],
    })
}

/// Swagger 2.0 has no oneOf, anyOf, not or nullable: upstream's v2 narrows the two-typed
/// scalars to strings and drops the rest. Custom resources' schemas go through their own
/// conversion ([`structural`]).
fn v2_schema(name: &str, schema: &Value) -> Value {
    if !builtin().definitions.contains_key(name) {
        return custom_root(schema);
    }
    if name == QUANTITY || name == INT_OR_STRING {
        let mut out = json!({"type": "string"});
        if let Some(description) = schema.get("description") {
            out["description"] = description.clone();
        }
        if name == INT_OR_STRING {
            out["format"] = json!("int-or-string");
        }
        return out;
    }
    narrow(schema)
}

fn narrow(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        let value = match key.as_str() {
            "oneOf" | "anyOf" | "not" | "nullable" => continue,
            // Maps from names to schemas: the names are data, the values schemas.
            "properties" | "patternProperties" => match value {
                Value::Object(fields) => Value::Object(
                    fields
                        .iter()
                        .map(|(field, s)| (field.clone(), narrow(s)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" | "additionalProperties" => narrow(value),
            "allOf" => match value {
                Value::Array(all) => Value::Array(all.iter().map(narrow).collect()),
                other => other.clone(),
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

/// A custom resource's (or its list's) v2 schema: [`structural`], with the root's apiVersion,
/// kind and metadata kept, as upstream adds them back after the conversion.
fn custom_root(schema: &Value) -> Value {
    let mut out = structural(schema);
    let Some(fields) = schema.get("properties").and_then(Value::as_object) else {
        return out;
    };
    if let Value::Object(root) = &mut out {
        let properties = root.entry("properties").or_insert_with(|| json!({}));
        for field in ["apiVersion", "kind", "metadata"] {
            if let (Some(kept), Value::Object(properties)) = (fields.get(field), &mut *properties) {
                properties.insert(field.into(), kept.clone());
            }
        }
    }
    out
}

/// A custom resource's schema as upstream's apiextensions gives v2 clients (its
/// ToStructuralOpenAPIV2): no allOf, oneOf, anyOf or not; a nullable or
/// unknown-fields-keeping value has no properties or items, as kubectl's client-side
/// validation would refuse what they leave out (a nullable one has no type either); an array
/// left without items has no type; nullable fields are not required.
fn structural(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        let value = match (key.as_str(), value) {
            ("allOf" | "oneOf" | "anyOf" | "not" | "nullable", _) => continue,
            ("properties", Value::Object(fields)) => Value::Object(
                fields
                    .iter()
                    .map(|(field, s)| (field.clone(), structural(s)))
                    .collect(),
            ),
            ("items" | "additionalProperties", Value::Object(_)) => structural(value),
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    let flag = |name: &str| map.get(name).and_then(Value::as_bool) == Some(true);
    if flag("nullable") {
        for key in ["type", "items", "properties"] {
            out.remove(key);
        }
    }
    if flag("x-kubernetes-preserve-unknown-fields") {
        out.remove("items");
        out.remove("properties");
    }
    if !out.contains_key("items") && out.get("type") == Some(&json!("array")) {
        out.remove("type");
    }
    let nullable: Vec<&String> = match out.get("properties").and(map.get("properties")) {
        Some(Value::Object(fields)) => fields
            .iter()
            .filter(|(_, s)| s.get("nullable").and_then(Value::as_bool) == Some(true))
            .map(|(field, _)| field)
            .collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|field| !nullable.iter().any(|n| field.as_str() == Some(n.as_str())));
    }
    Value::Object(out)
}

fn path_item(item: &PathItem) -> Value {
    let mut out = Map::new();
    for op in &item.operations {
        out.insert(op.method.key().to_string(), operation(op, &item.tag));
    }
    let params: Vec<Value> = item.params.iter().map(|p| parameter(p)).collect();
    out.insert("parameters".into(), json!(params));
    Value::Object(out)
}

fn operation(op: &Operation, tag: &str) -> Value {
    let mut params: Vec<Value> = Vec::new();
    let consumes: Vec<&str> = match &op.body {
        Some(Body::Object(name)) => {
            params.push(body_param(name));
            vec!["*/*"]
        }
        Some(Body::Patch { strategic }) => {
            params.push(body_param(PATCH));
            PATCH_TYPES
                .iter()
                .copied()
                .filter(|t| *strategic || !t.contains("strategic"))
                .collect()
        }
        None => vec!["*/*"],
    };
    params.extend(op.params.iter().map(|p| parameter(p)));
    let mut out = json!({
        "tags": [tag],
        "description": op.description,
        "operationId": op.id,
        "consumes": consumes,
        "produces": op.produces,
        "schemes": ["https"],
        "responses": responses(op),
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": op.gvk.to_value(),
    });
    if !params.is_empty() {
        out["parameters"] = json!(params);
    }
    out
}

fn body_param(name: &str) -> Value {
    json!({"name": "body", "in": "body", "required": true, "schema": definition_ref(name)})
}

fn parameter(param: &Param) -> Value {
    let mut out = json!({
        "name": param.name,
        "in": match param.location { In::Path => "path", In::Query => "query" },
        "description": param.description,
        "type": param.kind,
        "uniqueItems": true,
    });
    if param.location == In::Path {
        out["required"] = json!(true);
    }
    out
}

fn responses(op: &Operation) -> Value {
    let mut out = Map::new();
    for response in &op.responses {
        let mut rendered = json!({"description": response.description});
        match &response.payload {
            Payload::Nothing => {}
            Payload::Object(name) => rendered["schema"] = definition_ref(name),
            Payload::Text => rendered["schema"] = json!({"type": "string"}),
        }
        out.insert(response.code.to_string(), rendered);
    }
    Value::Object(out)
}
