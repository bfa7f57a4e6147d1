//! What a CustomResourceDefinition serves: one catalogue entry per served version, named by
//! the names the definition had accepted, with its subresources and Table columns.

use serde_json::Value;

use super::definition::{Definition, Names, Version};
use registry::catalogue::{
    custom_columns, Cell, GcPolicy, ResourceInfo, ScaleSubresource, SubresourceInfo, TableColumn,
};

/// The verbs of every custom resource, in the order upstream's discovery lists them for
/// custom resources (not the built-ins' order).
const VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// A served version: its catalogue entry and its schema.
pub struct ServedVersion {
    pub info: ResourceInfo,
    pub schema: Option<Value>,
}

/// The served versions of a definition, by the names it had accepted (spec names until the
/// naming controller accepted some).
pub fn served_versions(crd: &Definition) -> Vec<ServedVersion> {
    let names = if crd.status.accepted_names.kind.is_empty() {
        &crd.spec.names
    } else {
        &crd.status.accepted_names
    };
    crd.spec
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| ServedVersion {
            info: info(crd, names, v),
            schema: v.schema.as_ref().and_then(|s| s.open_api_v3_schema.clone()),
        })
        .collect()
}

fn info(crd: &Definition, names: &Names, version: &Version) -> ResourceInfo {
    let list_kind = if names.list_kind.is_empty() {
        format!("{}List", names.kind)
    } else {
        names.list_kind.clone()
    };
    ResourceInfo {
        group: crd.spec.group.clone(),
        version: version.name.clone(),
        kind: names.kind.clone(),
        list_kind,
        plural: names.plural.clone(),
        singular: if names.singular.is_empty() {
            names.kind.to_lowercase()
        } else {
            names.singular.clone()
        },
        short_names: names.short_names.clone(),
        categories: names.categories.clone(),
        namespaced: crd.namespaced(),
        verbs: VERBS.iter().map(|v| v.to_string()).collect(),
        create_only: false,
        computed: false,
        subresources: subresources_of(version),
        default_gc_policy: GcPolicy::DeleteDependents,
        columns: columns(version),
        field_selectors: Vec::new(),
        has_generation: true,
        storage_path: format!("/{}/{}", crd.spec.group, names.plural),
        // Custom resources get their Strategy when installed (`install_with`).
        strategy: registry::strategy::generic,
        store_hooks: Vec::new(),
        row_order: None,
    }
}

/// The version's status and scale subresources, as it declares them.
fn subresources_of(version: &Version) -> Vec<SubresourceInfo> {
    let declared = version.subresources.as_ref();
    let status = declared
        .and_then(|s| s.status.as_ref())
        .map(|_| SubresourceInfo::status());
    let scale = declared.and_then(|s| s.scale.as_ref()).map(|s| {
        SubresourceInfo::scale(ScaleSubresource {
            spec_replicas_path: s.spec_replicas_path.clone(),
            status_replicas_path: s.status_replicas_path.clone(),
            label_selector_path: s.label_selector_path.clone(),
        })
    });
    status.into_iter().chain(scale).collect()
}

/// The declared printer columns, after NAME (and AGE when none are declared).
fn columns(version: &Version) -> Vec<TableColumn> {
    custom_columns(
        version
            .additional_printer_columns
            .iter()
            .map(|c| TableColumn {
                name: c.name.clone(),
                kind: c.kind.clone(),
                format: c.format.clone(),
                description: c.description.clone(),
                priority: c.priority,
                cell: Cell::Path(c.json_path.clone()),
            })
            .collect(),
    )
}
