//! Upstream's server-side Table columns for the built-in resources, and the cell functions
//! behind the columns that are more than a JSON path.
//!
//! The server always prints upstream's wide form; clients hide priority-1 columns. Cells read
//! user-supplied JSON, so every accessor tolerates missing or mistyped fields.

mod admission;
mod aggregation;
mod autoscaling;
mod certificates;
mod cluster;
mod config;
mod events;
mod flowcontrol;
mod format;
mod network;
mod networking;
mod pods;
mod rbac;
mod resource;
mod scheduling;
mod storage;
mod workloads;
mod zero_values;

pub use format::human_duration;

use serde_json::Value;

use super::{Cell, TableColumn};

pub(in crate::catalogue) use admission::{
    admissionpolicy_columns, admissionpolicybinding_columns, webhookconfiguration_columns,
};
pub(in crate::catalogue) use aggregation::apiservice_columns;
pub(in crate::catalogue) use autoscaling::hpa_columns;
pub(in crate::catalogue) use certificates::csr_columns;
pub(in crate::catalogue) use cluster::{
    componentstatus_columns, lease_columns, namespace_columns, node_columns, pv_columns,
    pvc_columns,
};
pub(in crate::catalogue) use config::{
    configmap_columns, resourcequota_columns, secret_columns, serviceaccount_columns,
};
pub(in crate::catalogue) use events::event_columns;
pub(in crate::catalogue) use flowcontrol::{
    flowschema_columns, flowschema_order, prioritylevelconfiguration_columns,
};
pub(in crate::catalogue) use network::{endpoints_columns, endpointslice_columns, service_columns};
pub(in crate::catalogue) use networking::{
    ingress_columns, ingressclass_columns, ipaddress_columns, networkpolicy_columns,
    servicecidr_columns,
};
pub(in crate::catalogue) use pods::pod_columns;
pub(in crate::catalogue) use rbac::{clusterrolebinding_columns, rolebinding_columns};
pub(in crate::catalogue) use resource::{
    name_age_columns, resourceclaim_columns, resourceslice_columns,
};
pub(in crate::catalogue) use scheduling::{priorityclass_columns, runtimeclass_columns};
pub(in crate::catalogue) use storage::{
    csidriver_columns, csinode_columns, csistoragecapacity_columns, storageclass_columns,
    volumeattachment_columns, volumeattributesclass_columns,
};
pub use storage::{is_default_class, DEFAULT_CLASS_ANNOTATIONS};
pub(in crate::catalogue) use workloads::{
    controllerrevision_columns, cronjob_columns, daemonset_columns, deployment_columns,
    job_columns, pdb_columns, podtemplate_columns, replicaset_columns,
    replicationcontroller_columns, statefulset_columns,
};

/// metav1.ObjectMeta's documentation of `name`, which every NAME column carries.
const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// metav1.ObjectMeta's documentation of `creationTimestamp`, which every AGE column carries.
const CREATED_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

const CONTAINERS_DOC: &str = "Names of each container in the template.";
const IMAGES_DOC: &str = "Images referenced by each container in the template.";

/// Resources upstream serves through the default table convertor (roles, limit ranges,
/// custom resource definitions): the name and the creation time as a date.
pub(in crate::catalogue) fn default_columns() -> Vec<TableColumn> {
    vec![
        name(),
        column(
            "Created At",
            "date",
            CREATED_DOC,
            Cell::Printer(zero_values::created_at),
        ),
    ]
}

/// A custom resource's columns: NAME, then the declared ones; with none declared, AGE as a
/// `date` read from the creation time (upstream's table convertor for custom resources).
pub fn custom_columns(declared: Vec<TableColumn>) -> Vec<TableColumn> {
    let mut out = vec![name()];
    if declared.is_empty() {
        out.push(column(
            "Age",
            "date",
            CREATED_DOC,
            Cell::Path(".metadata.creationTimestamp".into()),
        ));
    }
    out.extend(declared);
    out
}

fn column(name: &str, kind: &str, description: &str, cell: Cell) -> TableColumn {
    TableColumn {
        name: name.to_string(),
        kind: kind.to_string(),
        format: String::new(),
        description: description.to_string(),
        priority: 0,
        cell,
    }
}

fn text_column(name: &str, description: &str, printer: fn(&Value) -> Value) -> TableColumn {
    column(name, "string", description, Cell::Printer(printer))
}

fn integer(name: &str, description: &str, printer: fn(&Value) -> Value) -> TableColumn {
    column(name, "integer", description, Cell::Printer(printer))
}

/// A column shown only with `-o wide`.
fn wide(column: TableColumn) -> TableColumn {
    TableColumn {
        priority: 1,
        ..column
    }
}

fn name() -> TableColumn {
    TableColumn {
        format: "name".to_string(),
        ..column("Name", "string", NAME_DOC, Cell::Name)
    }
}

fn age() -> TableColumn {
    column("Age", "string", CREATED_DOC, Cell::Age)
}

/// A workload's CONTAINERS and IMAGES wide columns, read from its pod template.
fn container_columns(
    containers: fn(&Value) -> Value,
    images: fn(&Value) -> Value,
) -> [TableColumn; 2] {
    [
        wide(text_column("Containers", CONTAINERS_DOC, containers)),
        wide(text_column("Images", IMAGES_DOC, images)),
    ]
}
