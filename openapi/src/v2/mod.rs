//! The Swagger 2.0 document of every served group-version, as `/openapi/v2` serves it.

pub(crate) mod protobuf;
mod wire;

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::builtin::{INT_OR_STRING, PATCH, QUANTITY};
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
/// scalars to strings and drops the rest.
fn v2_schema(name: &str, schema: &Value) -> Value {
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
