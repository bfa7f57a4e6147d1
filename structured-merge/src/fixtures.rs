//! A small Deployment-like schema shared by the walkers' tests.

use crate::from_openapi::from_document;
use crate::schema::{Schema, TypeRef};
use serde_json::json;

pub(crate) const ROOT: &str = "test.Deployment";

pub(crate) fn root() -> TypeRef {
    TypeRef::named(ROOT)
}

pub(crate) fn schema() -> Schema {
    let doc = json!({"definitions": {
        "test.Deployment": {"type": "object", "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "#/definitions/test.ObjectMeta"},
            "spec": {"$ref": "#/definitions/test.Spec"}
        }},
        "test.ObjectMeta": {"type": "object", "properties": {
            "name": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-patch-strategy": "merge"}
        }},
        "test.Spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "selector": {"$ref": "#/definitions/test.Selector", "x-kubernetes-map-type": "atomic"},
            "containers": {"type": "array", "items": {"$ref": "#/definitions/test.Container"},
                "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
            "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "port": {"x-kubernetes-int-or-string": true}
        }},
        "test.Selector": {"type": "object", "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}
        }},
        "test.Container": {"type": "object", "properties": {
            "name": {"type": "string"},
            "image": {"type": "string"},
            "args": {"type": "array", "items": {"type": "string"}},
            "ports": {"type": "array", "items": {"$ref": "#/definitions/test.Port"},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["containerPort", "protocol"]}
        }},
        "test.Port": {"type": "object", "properties": {
            "containerPort": {"type": "integer"},
            "protocol": {"type": "string", "default": "TCP"},
            "name": {"type": "string"}
        }}
    }});
    match from_document(&doc) {
        Ok(schema) => schema,
        Err(e) => panic!("fixture schema: {e}"),
    }
}
