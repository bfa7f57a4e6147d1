//! Where pods run and what they run with: priority classes, runtime classes, and dynamic
//! resource allocation's device classes, claims, claim templates and published devices.

use super::super::printers;
use super::{resource, strings, CLUSTER, NAMESPACED};
use crate::catalogue::{ResourceInfo, SubresourceInfo};
use crate::strategy::resource as dra;
use crate::strategy::{node, scheduling};

/// Where and before whom pods run: priority classes and runtime classes.
pub(super) fn scheduling() -> Vec<ResourceInfo> {
    vec![
        ResourceInfo {
            short_names: strings(&["pc"]),
            columns: printers::priorityclass_columns(),
            strategy: |_, _| Box::new(scheduling::PriorityClassStrategy),
            ..resource(
                "scheduling.k8s.io",
                "PriorityClass",
                "priorityclasses",
                CLUSTER,
            )
        },
        ResourceInfo {
            columns: printers::runtimeclass_columns(),
            strategy: |_, _| Box::new(node::RuntimeClassStrategy),
            ..resource("node.k8s.io", "RuntimeClass", "runtimeclasses", CLUSTER)
        },
    ]
}

pub(super) fn dynamic_resources() -> Vec<ResourceInfo> {
    const RESOURCE: &str = "resource.k8s.io";
    vec![
        ResourceInfo {
            columns: printers::name_age_columns(),
            has_generation: true,
            strategy: |_, _| Box::new(dra::DeviceClassStrategy),
            ..resource(RESOURCE, "DeviceClass", "deviceclasses", CLUSTER)
        },
        ResourceInfo {
            subresources: vec![SubresourceInfo::status()],
            columns: printers::resourceclaim_columns(),
            strategy: |_, _| Box::new(dra::ResourceClaimStrategy),
            ..resource(RESOURCE, "ResourceClaim", "resourceclaims", NAMESPACED)
        },
        ResourceInfo {
            columns: printers::name_age_columns(),
            strategy: |_, _| Box::new(dra::ResourceClaimTemplateStrategy),
            ..resource(
                RESOURCE,
                "ResourceClaimTemplate",
                "resourceclaimtemplates",
                NAMESPACED,
            )
        },
        ResourceInfo {
            columns: printers::resourceslice_columns(),
            field_selectors: strings(&["spec.driver", "spec.nodeName"]),
            has_generation: true,
            strategy: |_, _| Box::new(dra::ResourceSliceStrategy),
            ..resource(RESOURCE, "ResourceSlice", "resourceslices", CLUSTER)
        },
    ]
}
