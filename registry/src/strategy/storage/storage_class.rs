//! StorageClasses (upstream's pkg/registry/storage/storageclass and the v1 defaults): a
//! reclaim policy and a binding mode by default, and what provisions for the class never
//! changes once it exists.

use serde_json::{json, Value};

use crate::error::Cause;
use crate::strategy::{at, default_at, Strategy};

const RECLAIM_POLICIES: [&str; 2] = ["Delete", "Retain"];
const BINDING_MODES: [&str; 2] = ["Immediate", "WaitForFirstConsumer"];

pub struct StorageClassStrategy;

fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    at(obj, &[field]).and_then(Value::as_str).unwrap_or("")
}

impl Strategy for StorageClassStrategy {
    /// Upstream's StorageClass storage sets ReturnDeletedObject.
    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        default_at(obj, &["reclaimPolicy"], json!("Delete"));
        default_at(obj, &["volumeBindingMode"], json!("Immediate"));
    }

    /// Upstream defaults every decoded object, so an update leaving the fields out keeps them.
    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        if text(obj, "provisioner").is_empty() {
            causes.push(Cause::required("provisioner"));
        }
        let policy = text(obj, "reclaimPolicy");
        if !RECLAIM_POLICIES.contains(&policy) {
            causes.push(Cause::not_supported(
                "reclaimPolicy",
                policy,
                &RECLAIM_POLICIES,
            ));
        }
        let mode = text(obj, "volumeBindingMode");
        if !BINDING_MODES.contains(&mode) {
            causes.push(Cause::not_supported(
                "volumeBindingMode",
                mode,
                &BINDING_MODES,
            ));
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        let empty = json!({});
        let params = |obj: &Value| at(obj, &["parameters"]).cloned().unwrap_or(empty.clone());
        if params(new) != params(old) {
            causes.push(Cause::forbidden(
                "parameters",
                "updates to parameters are forbidden.",
            ));
        }
        for field in ["provisioner", "reclaimPolicy"] {
            if text(new, field) != text(old, field) {
                causes.push(Cause::forbidden(
                    field,
                    &format!("updates to {field} are forbidden."),
                ));
            }
        }
        let mode = text(new, "volumeBindingMode");
        if mode != text(old, "volumeBindingMode") {
            causes.push(Cause::invalid(
                "volumeBindingMode",
                format!("\"{mode}\""),
                "field is immutable",
            ));
        }
        causes
    }
}
