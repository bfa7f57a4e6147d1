//! core/v1: the pod graph (PodSpec described once, reused by every template) and the other
//! core kinds with tagged fields.

use super::{Field, PatchSchema, CONDITIONS_STATUS, OBJECT_META};

/// Container and EphemeralContainer (their common fields carry the same tags; resizePolicy is
/// `listType=atomic` upstream, so it is replaced).
static CONTAINER: PatchSchema = PatchSchema {
    name: "Container",
    fields: &[
        Field::merge("ports", "containerPort"),
        Field::merge("env", "name"),
        Field::merge("volumeMounts", "mountPath"),
        Field::merge("volumeDevices", "devicePath"),
    ],
};

static PVC_TEMPLATE: PatchSchema = PatchSchema {
    name: "PersistentVolumeClaimTemplate",
    fields: &[Field::nested("metadata", &OBJECT_META)],
};

static EPHEMERAL_VOLUME: PatchSchema = PatchSchema {
    name: "EphemeralVolumeSource",
    fields: &[Field::nested("volumeClaimTemplate", &PVC_TEMPLATE)],
};

static VOLUME: PatchSchema = PatchSchema {
    name: "Volume",
    fields: &[Field::nested("ephemeral", &EPHEMERAL_VOLUME)],
};

pub(super) static POD_SPEC: PatchSchema = PatchSchema {
    name: "PodSpec",
    fields: &[
        Field {
            ty: Some(&VOLUME),
            ..Field::merge_retain("volumes", "name")
        },
        Field::merge_of("initContainers", "name", &CONTAINER),
        Field::merge_of("containers", "name", &CONTAINER),
        Field::merge_of("ephemeralContainers", "name", &CONTAINER),
        Field::merge("imagePullSecrets", "name"),
        Field::merge("hostAliases", "ip"),
        Field::merge("topologySpreadConstraints", "topologyKey"),
        Field::merge("schedulingGates", "name"),
        Field::merge_retain("resourceClaims", "name"),
    ],
};

static POD_STATUS: PatchSchema = PatchSchema {
    name: "PodStatus",
    fields: &[
        Field::merge("conditions", "type"),
        Field::merge("podIPs", "ip"),
        Field::merge("hostIPs", "ip"),
        Field::merge_retain("resourceClaimStatuses", "name"),
    ],
};

pub(super) static POD: PatchSchema = PatchSchema {
    name: "Pod",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("spec", &POD_SPEC),
        Field::nested("status", &POD_STATUS),
    ],
};

pub(super) static POD_TEMPLATE_SPEC: PatchSchema = PatchSchema {
    name: "PodTemplateSpec",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("spec", &POD_SPEC),
    ],
};

pub(super) static POD_TEMPLATE: PatchSchema = PatchSchema {
    name: "PodTemplate",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("template", &POD_TEMPLATE_SPEC),
    ],
};

/// The `spec` of every kind whose only tagged spec field is a pod `template`.
pub(super) static TEMPLATED_SPEC: PatchSchema = PatchSchema {
    name: "Spec",
    fields: &[Field::nested("template", &POD_TEMPLATE_SPEC)],
};

pub(super) static REPLICATION_CONTROLLER: PatchSchema = PatchSchema {
    name: "ReplicationController",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("spec", &TEMPLATED_SPEC),
        Field::nested("status", &CONDITIONS_STATUS),
    ],
};

static SERVICE_SPEC: PatchSchema = PatchSchema {
    name: "ServiceSpec",
    fields: &[Field::merge("ports", "port")],
};

pub(super) static SERVICE: PatchSchema = PatchSchema {
    name: "Service",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("spec", &SERVICE_SPEC),
        Field::nested("status", &CONDITIONS_STATUS),
    ],
};

pub(super) static SERVICE_ACCOUNT: PatchSchema = PatchSchema {
    name: "ServiceAccount",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::merge("secrets", "name"),
    ],
};

static NODE_SPEC: PatchSchema = PatchSchema {
    name: "NodeSpec",
    fields: &[Field::set("podCIDRs")],
};

static NODE_STATUS: PatchSchema = PatchSchema {
    name: "NodeStatus",
    fields: &[
        Field::merge("conditions", "type"),
        Field::merge("addresses", "type"),
    ],
};

pub(super) static NODE: PatchSchema = PatchSchema {
    name: "Node",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::nested("spec", &NODE_SPEC),
        Field::nested("status", &NODE_STATUS),
    ],
};

pub(super) static COMPONENT_STATUS: PatchSchema = PatchSchema {
    name: "ComponentStatus",
    fields: &[
        Field::nested("metadata", &OBJECT_META),
        Field::merge("conditions", "type"),
    ],
};
