//! OpenAPI 3.0 documents: one per group-version, as `/openapi/v3/apis/<group>/<version>`
//! serves them, and the index of them at `/openapi/v3`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use crate::operations::{Body, In, Operation, Param, PathItem, Payload, PATCH_TYPES};
use crate::refs::{definition_ref, to_v3, Lookup};
use crate::render::{parts, TITLE};

const PREFIX: &str = "#/components/schemas/";

/// The document of one group-version: its resources' paths and every schema they use.
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
        |_, schema| to_v3(&schema, PREFIX),
    );
    json!({
        "openapi": "3.0.0",
        "info": {"title": TITLE, "version": info_version},
        "paths": rendered,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header",
                },
            },
        },
    })
}

/// `{"paths": {"apis/apps/v1": {"serverRelativeURL": "/openapi/v3/apis/apps/v1?hash=..."}}}`
pub(crate) fn index(hashes: &BTreeMap<String, String>) -> Value {
    let paths: Map<String, Value> = hashes
        .iter()
        .map(|(path, hash)| {
            let url = format!("/openapi/v3/{path}?hash={hash}");
            (path.clone(), json!({ "serverRelativeURL": url }))
        })
        .collect();
    json!({ "paths": paths })
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
    let mut out = json!({
        "tags": [tag],
        "description": op.description,
        "operationId": op.id,
        "responses": responses(op),
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": op.gvk.to_value(),
    });
    if !op.params.is_empty() {
        let params: Vec<Value> = op.params.iter().map(|p| parameter(p)).collect();
        out["parameters"] = json!(params);
    }
    if let Some(body) = &op.body {
        out["requestBody"] = request_body(body);
    }
    out
}

fn parameter(param: &Param) -> Value {
    let mut out = json!({
        "name": param.name,
        "in": match param.location { In::Path => "path", In::Query => "query" },
        "description": param.description,
        "schema": {"type": param.kind, "uniqueItems": true},
    });
    if param.location == In::Path {
        out["required"] = json!(true);
    }
    out
}

fn request_body(body: &Body) -> Value {
    let content: Map<String, Value> = match body {
        Body::Object(name) => {
            Map::from_iter([("*/*".to_string(), json!({"schema": reference(name)}))])
        }
        Body::Patch { strategic } => PATCH_TYPES
            .iter()
            .filter(|t| *strategic || !t.contains("strategic"))
            .map(|t| {
                let schema = reference(crate::builtin::PATCH);
                (t.to_string(), json!({ "schema": schema }))
            })
            .collect(),
    };
    json!({"content": content, "required": true})
}

fn responses(op: &Operation) -> Value {
    let mut out = Map::new();
    for response in &op.responses {
        let schema = match &response.payload {
            Payload::Nothing => None,
            Payload::Object(name) => Some(reference(name)),
            Payload::Text => Some(json!({"type": "string"})),
        };
        let mut rendered = json!({"description": response.description});
        if let Some(schema) = schema {
            let content: Map<String, Value> = op
                .produces
                .iter()
                .map(|t| (t.to_string(), json!({"schema": schema})))
                .collect();
            rendered["content"] = Value::Object(content);
        }
        out.insert(response.code.to_string(), rendered);
    }
    Value::Object(out)
}

fn reference(name: &str) -> Value {
    to_v3(&definition_ref(name), PREFIX)
}
