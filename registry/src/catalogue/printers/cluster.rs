//! Cluster-level objects: namespaces, nodes, persistent volumes and claims, leases.

use std::collections::BTreeSet;

use serde_json::Value;

use super::format::{access_modes, quantity};
use super::zero_values::{deleting, get, items, object, text};
use super::{age, name, text_column, wide, TableColumn};

const STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

pub(in crate::catalogue) fn namespace_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Status", "The status of the namespace", namespace_phase),
        age(),
    ]
}

pub(in crate::catalogue) fn node_columns() -> Vec<TableColumn> {
    const ADDRESSES_DOC: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";
    vec![
        name(),
        text_column("Status", "The status of the node", node_status),
        text_column("Roles", "The roles of the node", node_roles),
        age(),
        text_column("Version", "Kubelet Version reported by the node.", kubelet_version),
        wide(text_column("Internal-IP", ADDRESSES_DOC, internal_ip)),
        wide(text_column("External-IP", ADDRESSES_DOC, external_ip)),
        wide(text_column("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", os_image)),
        wide(text_column("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", kernel_version)),
        wide(text_column("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).", container_runtime)),
    ]
}

pub(in crate::catalogue) fn pv_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Capacity", "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity", pv_capacity),
        text_column("Access Modes", "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes", pv_access_modes),
        text_column("Reclaim Policy", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming", pv_reclaim_policy),
        text_column("Status", "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase", phase_or_terminating),
        text_column("Claim", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding", pv_claim),
        text_column("StorageClass", "StorageClass of the pv", pv_storage_class),
        text_column("VolumeAttributesClass", "VolumeAttributesClass of the pv", attributes_class),
        text_column("Reason", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.", pv_reason),
        age(),
        wide(text_column("VolumeMode", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.", volume_mode)),
    ]
}

pub(in crate::catalogue) fn pvc_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Status", "phase represents the current phase of PersistentVolumeClaim.", phase_or_terminating),
        text_column("Volume", "volumeName is the binding reference to the PersistentVolume backing this claim.", pvc_volume),
        text_column("Capacity", "capacity represents the actual resources of the underlying volume.", pvc_capacity),
        text_column("Access Modes", "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1", pvc_access_modes),
        text_column("StorageClass", "StorageClass of the pvc", pvc_storage_class),
        text_column("VolumeAttributesClass", "VolumeAttributesClass of the pvc", attributes_class),
        age(),
        wide(text_column("VolumeMode", "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.", volume_mode)),
    ]
}

pub(in crate::catalogue) fn lease_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Holder", "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.", lease_holder),
        age(),
    ]
}

fn string(s: &str) -> Value {
    Value::String(s.to_string())
}

fn or_unknown(s: &str) -> Value {
    string(if s.is_empty() { "<unknown>" } else { s })
}

fn namespace_phase(ns: &Value) -> Value {
    string(text(ns, &["status", "phase"]))
}

fn node_status(node: &Value) -> Value {
    // Only the Ready condition counts; the last one listed wins, as in upstream's map.
    let ready = items(node, &["status", "conditions"])
        .iter()
        .rfind(|c| text(c, &["type"]) == "Ready");
    let mut status = vec![match ready {
        Some(c) if text(c, &["status"]) == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if get(node, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    string(&status.join(","))
}

/// Roles come from `node-role.kubernetes.io/<role>` label keys and `kubernetes.io/role` values.
fn node_roles(node: &Value) -> Value {
    let mut roles = BTreeSet::new();
    for (key, value) in object(node, &["metadata", "labels"]).into_iter().flatten() {
        let value = value.as_str().unwrap_or("");
        if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.insert(role.to_string());
            }
        } else if key == "kubernetes.io/role" && !value.is_empty() {
            roles.insert(value.to_string());
        }
    }
    let joined = roles.into_iter().collect::<Vec<_>>().join(",");
    string(if joined.is_empty() { "<none>" } else { &joined })
}

fn kubelet_version(node: &Value) -> Value {
    string(text(node, &["status", "nodeInfo", "kubeletVersion"]))
}

fn address(node: &Value, kind: &str) -> Value {
    let found = items(node, &["status", "addresses"])
        .iter()
        .find(|a| text(a, &["type"]) == kind)
        .map_or("<none>", |a| text(a, &["address"]));
    string(found)
}

fn internal_ip(node: &Value) -> Value {
    address(node, "InternalIP")
}

fn external_ip(node: &Value) -> Value {
    address(node, "ExternalIP")
}

fn os_image(node: &Value) -> Value {
    or_unknown(text(node, &["status", "nodeInfo", "osImage"]))
}

fn kernel_version(node: &Value) -> Value {
    or_unknown(text(node, &["status", "nodeInfo", "kernelVersion"]))
}

fn container_runtime(node: &Value) -> Value {
    or_unknown(text(
        node,
        &["status", "nodeInfo", "containerRuntimeVersion"],
    ))
}

fn phase_or_terminating(obj: &Value) -> Value {
    if deleting(obj) {
        string("Terminating")
    } else {
        string(text(obj, &["status", "phase"]))
    }
}

fn pv_capacity(pv: &Value) -> Value {
    string(&quantity(get(pv, &["spec", "capacity", "storage"])))
}

fn pv_access_modes(pv: &Value) -> Value {
    string(&access_modes(items(pv, &["spec", "accessModes"])))
}

fn pv_reclaim_policy(pv: &Value) -> Value {
    string(text(pv, &["spec", "persistentVolumeReclaimPolicy"]))
}

fn pv_claim(pv: &Value) -> Value {
    match get(pv, &["spec", "claimRef"]).filter(|r| r.is_object()) {
        Some(r) => string(&format!(
            "{}/{}",
            text(r, &["namespace"]),
            text(r, &["name"])
        )),
        None => string(""),
    }
}

/// The beta annotation, when present, outranks spec.storageClassName.
fn storage_class(obj: &Value) -> &str {
    match get(obj, &["metadata", "annotations", STORAGE_CLASS_ANNOTATION]) {
        Some(class) => class.as_str().unwrap_or(""),
        None => text(obj, &["spec", "storageClassName"]),
    }
}

fn pv_storage_class(pv: &Value) -> Value {
    string(storage_class(pv))
}

fn pvc_storage_class(pvc: &Value) -> Value {
    string(storage_class(pvc))
}

fn attributes_class(obj: &Value) -> Value {
    let class = get(obj, &["spec", "volumeAttributesClassName"]).and_then(Value::as_str);
    string(class.unwrap_or("<unset>"))
}

fn pv_reason(pv: &Value) -> Value {
    string(text(pv, &["status", "reason"]))
}

fn volume_mode(obj: &Value) -> Value {
    let mode = get(obj, &["spec", "volumeMode"]).and_then(Value::as_str);
    string(mode.unwrap_or("<unset>"))
}

fn pvc_volume(pvc: &Value) -> Value {
    string(text(pvc, &["spec", "volumeName"]))
}

/// A claim shows capacity and modes only once bound to a volume.
fn bound(pvc: &Value) -> bool {
    !text(pvc, &["spec", "volumeName"]).is_empty()
}

fn pvc_capacity(pvc: &Value) -> Value {
    if !bound(pvc) {
        return string("");
    }
    string(&quantity(get(pvc, &["status", "capacity", "storage"])))
}

fn pvc_access_modes(pvc: &Value) -> Value {
    if !bound(pvc) {
        return string("");
    }
    string(&access_modes(items(pvc, &["status", "accessModes"])))
}

fn lease_holder(lease: &Value) -> Value {
    string(text(lease, &["spec", "holderIdentity"]))
}

/// Upstream prints component statuses without an age: the condition `Healthy` says it all.
pub(in crate::catalogue) fn componentstatus_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Status", "Status of the component conditions", |c| {
            Value::String(component_condition(c).0)
        }),
        text_column("Message", "Message of the component conditions", |c| {
            Value::String(component_condition(c).1)
        }),
        text_column("Error", "Error of the component conditions", |c| {
            Value::String(component_condition(c).2)
        }),
    ]
}

/// The status, message and error of the `Healthy` condition (`Unknown` without one).
fn component_condition(status: &Value) -> (String, String, String) {
    let healthy = items(status, &["conditions"])
        .iter()
        .find(|c| text(c, &["type"]) == "Healthy");
    match healthy {
        None => ("Unknown".into(), String::new(), String::new()),
        Some(c) => (
            if text(c, &["status"]) == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            }
            .into(),
            text(c, &["message"]).into(),
            text(c, &["error"]).into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn nodes() {
        let node = json!({
            "metadata": {"labels": {"node-role.kubernetes.io/control-plane": "",
                "kubernetes.io/role": "master", "node-role.kubernetes.io/": "x"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}],
                "nodeInfo": {"kubeletVersion": "v1.33.1"}},
        });
        assert_eq!(node_status(&node), "Ready,SchedulingDisabled");
        assert_eq!(node_roles(&node), "control-plane,master");
        assert_eq!(kubelet_version(&node), "v1.33.1");
        assert_eq!(internal_ip(&node), "192.168.1.10");
        assert_eq!(external_ip(&node), "<none>");
        assert_eq!(os_image(&node), "<unknown>");
        assert_eq!(node_status(&json!({})), "Unknown");
        assert_eq!(node_roles(&json!({})), "<none>");
    }

    #[test]
    fn volumes_and_claims() {
        let pv = json!({"spec": {"capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteMany", "ReadWriteOnce"], "storageClassName": "fast",
            "persistentVolumeReclaimPolicy": "Delete",
            "claimRef": {"namespace": "db", "name": "data"}}, "status": {"phase": "Bound"}});
        assert_eq!(pv_capacity(&pv), "10Gi");
        assert_eq!(pv_access_modes(&pv), "RWO,RWX");
        assert_eq!(pv_claim(&pv), "db/data");
        assert_eq!(pv_storage_class(&pv), "fast");
        assert_eq!(attributes_class(&pv), "<unset>");
        assert_eq!(phase_or_terminating(&pv), "Bound");
        let pending = json!({"spec": {"storageClassName": "fast"}, "status": {"phase": "Pending"}});
        assert_eq!(pvc_capacity(&pending), "");
        assert_eq!(pvc_access_modes(&pending), "");
        let bound = json!({"metadata": {"annotations": {STORAGE_CLASS_ANNOTATION: "old"}},
            "spec": {"volumeName": "pv-1", "storageClassName": "fast"},
            "status": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}});
        assert_eq!(pvc_capacity(&bound), "1Gi");
        assert_eq!(pvc_access_modes(&bound), "RWO");
        assert_eq!(pvc_storage_class(&bound), "old");
    }
}
