//! Storage classes (storage.k8s.io): upstream's printStorageClass.

use serde_json::Value;

use super::zero_values::{get, text};
use super::{age, column, text_column, Cell, TableColumn, NAME_DOC};

/// The annotation marking the class claims get when they name none (and its beta form,
/// which upstream still honours).
pub const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

pub(in crate::catalogue) fn storageclass_columns() -> Vec<TableColumn> {
    vec![
        TableColumn {
            format: "name".to_string(),
            ..column("Name", "string", NAME_DOC, Cell::Printer(class_name))
        },
        text_column("Provisioner", "provisioner indicates the type of the provisioner.", provisioner),
        text_column("ReclaimPolicy", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.", reclaim_policy),
        text_column("VolumeBindingMode", "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.", binding_mode),
        text_column("AllowVolumeExpansion", "allowVolumeExpansion shows whether the storage class allow volume expand.", expansion),
        age(),
    ]
}

/// Whether `class` is marked the default one (the annotation's value is exactly "true").
pub fn is_default_class(class: &Value) -> bool {
    DEFAULT_CLASS_ANNOTATIONS
        .iter()
        .any(|a| text(class, &["metadata", "annotations", a]) == "true")
}

/// The name, with ` (default)` after the default class's, as kubectl shows it.
fn class_name(class: &Value) -> Value {
    let name = text(class, &["metadata", "name"]);
    Value::String(if is_default_class(class) {
        format!("{name} (default)")
    } else {
        name.to_string()
    })
}

fn provisioner(class: &Value) -> Value {
    Value::String(text(class, &["provisioner"]).to_string())
}

fn or_default(class: &Value, field: &str, default: &str) -> Value {
    let set = text(class, &[field]);
    Value::String(if set.is_empty() { default } else { set }.to_string())
}

fn reclaim_policy(class: &Value) -> Value {
    or_default(class, "reclaimPolicy", "Delete")
}

fn binding_mode(class: &Value) -> Value {
    or_default(class, "volumeBindingMode", "Immediate")
}

fn expansion(class: &Value) -> Value {
    let allowed = get(class, &["allowVolumeExpansion"]).and_then(Value::as_bool);
    Value::String(allowed.unwrap_or(false).to_string())
}
