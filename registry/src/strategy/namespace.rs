//! Namespaces: the `kubernetes` finalizer and phase on create; deletion through Terminating.

use serde_json::{json, Value};

use super::{default_at, Strategy};

pub struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        default_at(obj, &["spec", "finalizers"], json!(["kubernetes"]));
        if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("phase".into(), json!("Active"));
        } else if let Some(map) = obj.as_object_mut() {
            map.insert("status".into(), json!({"phase": "Active"}));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // spec.finalizers changes only through the finalize subresource.
        let finalizers = old.get("spec").and_then(|s| s.get("finalizers")).cloned();
        match (finalizers, new.as_object_mut()) {
            (Some(f), Some(map)) => {
                let spec = map.entry("spec").or_insert_with(|| json!({}));
                if let Some(spec) = spec.as_object_mut() {
                    spec.insert("finalizers".into(), f);
                }
            }
            (None, Some(map)) => {
                if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("finalizers");
                }
            }
            _ => {}
        }
    }

    fn finalizes_through_spec(&self) -> bool {
        true
    }
}
