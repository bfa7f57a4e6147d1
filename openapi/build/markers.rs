//! The x-kubernetes-* extensions of the built-in kinds, from the markers protos.rs read out
//! of the Kubernetes `.proto` comments.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::protos::Marked;

/// Adds every marker's extension to the definition (or property) it was written on.
pub fn apply(definitions: &mut BTreeMap<String, Value>, markers: &[Marked]) {
    for (definition, field, pairs) in markers {
        // Go structs embedded in a kind are flattened into it (EphemeralContainerCommon's
        // fields are EphemeralContainer's), while the protos keep them as messages.
        let target = match definitions.contains_key(definition) {
            true => definition.as_str(),
            false => definition.strip_suffix("Common").unwrap_or(definition),
        };
        let Some(schema) = definitions.get_mut(target) else {
            continue;
        };
        let target = if field.is_empty() {
            schema.as_object_mut()
        } else {
            schema
                .pointer_mut(&format!("/properties/{field}"))
                .and_then(Value::as_object_mut)
        };
        if let Some(target) = target {
            for (marker, value) in pairs {
                extend(target, marker, value);
            }
        }
    }
}

fn extend(schema: &mut Map<String, Value>, marker: &str, value: &str) {
    match marker {
        "patchStrategy" => {
            schema.insert("x-kubernetes-patch-strategy".into(), json!(value));
        }
        "patchMergeKey" => {
            schema.insert("x-kubernetes-patch-merge-key".into(), json!(value));
        }
        "listType" => {
            schema.insert("x-kubernetes-list-type".into(), json!(value));
        }
        // A map list's keys are written one marker each, in order.
        "listMapKey" => {
            let keys = schema
                .entry("x-kubernetes-list-map-keys")
                .or_insert_with(|| json!([]));
            if let Some(keys) = keys.as_array_mut() {
                keys.push(json!(value));
            }
        }
        // `+default=<JSON>` as upstream's openapi-gen publishes it; `ref(...)` defaults name
        // Go constants and are left out, as they never key a list.
        "default" => {
            if let Ok(value) = serde_json::from_str::<Value>(value) {
                schema.insert("default".into(), value);
            }
        }
        // Upstream reports a struct's atomicity with the same extension as a map's.
        "mapType" | "structType" => {
            schema.insert("x-kubernetes-map-type".into(), json!(value));
        }
        _ => {}
    }
}
