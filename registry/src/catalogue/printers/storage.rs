//! storage.k8s.io: storage classes (upstream's printStorageClass) and the CSI kinds.

use serde_json::Value;

use super::zero_values::{get, items, text};
use super::{age, column, integer, name, text_column, Cell, TableColumn, NAME_DOC};

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

/// The documentation of a storage.k8s.io/v1 field, as upstream's column descriptions use it.
fn doc(definition: &str, property: &str) -> String {
    openapi::property_description(&format!("io.k8s.api.storage.v1.{definition}"), property)
        .unwrap_or_else(|| property.to_string())
}

fn flag(obj: &Value, field: &str, unset: bool) -> Value {
    Value::Bool(
        get(obj, &["spec", field])
            .and_then(Value::as_bool)
            .unwrap_or(unset),
    )
}

pub(in crate::catalogue) fn csidriver_columns() -> Vec<TableColumn> {
    let boolean = |name: &str, field: &str, printer: fn(&Value) -> Value| {
        column(
            name,
            "boolean",
            &doc("CSIDriverSpec", field),
            Cell::Printer(printer),
        )
    };
    vec![
        name(),
        boolean("AttachRequired", "attachRequired", |d| {
            flag(d, "attachRequired", true)
        }),
        boolean("PodInfoOnMount", "podInfoOnMount", |d| {
            flag(d, "podInfoOnMount", false)
        }),
        boolean("StorageCapacity", "storageCapacity", |d| {
            flag(d, "storageCapacity", false)
        }),
        text_column(
            "TokenRequests",
            &doc("CSIDriverSpec", "tokenRequests"),
            token_requests,
        ),
        boolean("RequiresRepublish", "requiresRepublish", |d| {
            flag(d, "requiresRepublish", false)
        }),
        text_column(
            "Modes",
            &doc("CSIDriverSpec", "volumeLifecycleModes"),
            lifecycle_modes,
        ),
        age(),
    ]
}

/// The audiences tokens are requested for, `<unset>` when the driver asks for none.
fn token_requests(driver: &Value) -> Value {
    match get(driver, &["spec", "tokenRequests"]).and_then(Value::as_array) {
        None => Value::String("<unset>".into()),
        Some(requests) => Value::String(
            requests
                .iter()
                .map(|r| text(r, &["audience"]))
                .collect::<Vec<_>>()
                .join(","),
        ),
    }
}

fn lifecycle_modes(driver: &Value) -> Value {
    let modes: Vec<&str> = items(driver, &["spec", "volumeLifecycleModes"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    Value::String(if modes.is_empty() {
        "<none>".into()
    } else {
        modes.join(",")
    })
}

pub(in crate::catalogue) fn csinode_columns() -> Vec<TableColumn> {
    vec![
        name(),
        integer(
            "Drivers",
            "Drivers indicates the number of CSI drivers registered on the node",
            |n| Value::from(items(n, &["spec", "drivers"]).len()),
        ),
        age(),
    ]
}

pub(in crate::catalogue) fn volumeattachment_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Attacher", &doc("VolumeAttachmentSpec", "attacher"), |a| {
            Value::String(text(a, &["spec", "attacher"]).to_string())
        }),
        text_column(
            "PV",
            &doc("VolumeAttachmentSource", "persistentVolumeName"),
            |a| Value::String(text(a, &["spec", "source", "persistentVolumeName"]).to_string()),
        ),
        text_column("Node", &doc("VolumeAttachmentSpec", "nodeName"), |a| {
            Value::String(text(a, &["spec", "nodeName"]).to_string())
        }),
        column(
            "Attached",
            "boolean",
            &doc("VolumeAttachmentStatus", "attached"),
            Cell::Printer(|a| {
                Value::Bool(
                    get(a, &["status", "attached"])
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                )
            }),
        ),
        age(),
    ]
}

pub(in crate::catalogue) fn csistoragecapacity_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column(
            "StorageClassName",
            &doc("CSIStorageCapacity", "storageClassName"),
            |c| Value::String(text(c, &["storageClassName"]).to_string()),
        ),
        text_column("Capacity", &doc("CSIStorageCapacity", "capacity"), |c| {
            let capacity = text(c, &["capacity"]);
            Value::String(
                if capacity.is_empty() {
                    "<unset>"
                } else {
                    capacity
                }
                .to_string(),
            )
        }),
        age(),
    ]
}

pub(in crate::catalogue) fn volumeattributesclass_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column(
            "DriverName",
            &doc("VolumeAttributesClass", "driverName"),
            |c| Value::String(text(c, &["driverName"]).to_string()),
        ),
        age(),
    ]
}
