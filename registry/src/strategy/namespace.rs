//! Namespaces: the `kubernetes` finalizer and phase on create; deletion in two phases (upstream's
//! namespace REST): the first delete marks the namespace Terminating, and it goes once the
//! namespace controller has emptied `spec.finalizers` through `finalize`.

use serde_json::{json, Value};

use super::{default_at, Strategy};
use crate::object;
use crate::store::DeletePlan;

pub struct NamespaceStrategy;

/// Upstream's immutable label naming the namespace (`kubernetes.io/metadata.name`), set on
/// every create and update, so selectors can pick namespaces by name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

fn name_label(obj: &mut Value) {
    let name = crate::object::name(obj).to_string();
    if name.is_empty() {
        return;
    }
    let meta = crate::object::meta_mut(obj);
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels[NAME_LABEL] = json!(name);
}

impl Strategy for NamespaceStrategy {
    /// Namespaces are DNS labels.
    fn name_problems(&self, name: &str) -> Vec<String> {
        crate::validation::names::is_dns1123_label(name)
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        name_label(obj);
        default_at(obj, &["spec", "finalizers"], json!(["kubernetes"]));
        if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("phase".into(), json!("Active"));
        } else if let Some(map) = obj.as_object_mut() {
            map.insert("status".into(), json!({"phase": "Active"}));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        name_label(new);
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

    fn plan_delete(&self, obj: &Value, gc_finalizers: Option<&[String]>) -> Option<DeletePlan> {
        if object::deletion_timestamp(obj).is_some() {
            // Terminating: nothing to do until the controller has finalized it; then the
            // generic plan removes it (or waits for metadata finalizers).
            return self.finalizing(obj).then_some(DeletePlan::AlreadyDeleting);
        }
        let mut terminating = obj.clone();
        object::meta_mut(&mut terminating).insert("deletionTimestamp".into(), json!(object::now()));
        if let Some(map) = terminating.as_object_mut() {
            let status = map.entry("status").or_insert_with(|| json!({}));
            if let Some(status) = status.as_object_mut() {
                status.insert("phase".into(), json!("Terminating"));
            }
        }
        if let Some(finalizers) = gc_finalizers {
            object::set_finalizers(&mut terminating, finalizers);
        }
        Some(DeletePlan::Mark {
            object: terminating,
            then_remove: false,
        })
    }

    fn finalizing(&self, obj: &Value) -> bool {
        obj.get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
    }
}
