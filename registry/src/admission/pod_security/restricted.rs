//! The restricted checks of the Pod Security Standards (upstream's policy/check_*.go of level
//! restricted), each with upstream's reason and detail wording. Several let Windows pods
//! pass from v1.25 (the settings they require are Linux-only) and pods in a user namespace
//! pass from v1.35 (root there is not root on the host).

use std::collections::BTreeSet;

use serde_json::Value;

use super::baseline::{
    proc_mount_default_only, seccomp_refusal, seccomp_setters, seccomp_type_allowed,
};
use super::checks::{
    containers, containers_phrase, is_set, join_quote, name_of, pluralize, user_namespaced,
    windows, Forbidden,
};

/// Containers must set allowPrivilegeEscalation=false.
pub fn allow_privilege_escalation(minor: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    if minor >= 25 && windows(spec) {
        return None;
    }
    let bad: Vec<String> = containers(spec)
        .filter(|c| c["securityContext"]["allowPrivilegeEscalation"] != Value::Bool(false))
        .map(name_of)
        .collect();
    (!bad.is_empty()).then(|| {
        Forbidden::new(
            "allowPrivilegeEscalation != false",
            format!(
                "{} must set securityContext.allowPrivilegeEscalation=false",
                containers_phrase(&bad)
            ),
        )
    })
}

/// Containers must drop ALL capabilities and may add back only NET_BIND_SERVICE.
pub fn capabilities(minor: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    if minor >= 25 && windows(spec) {
        return None;
    }
    let mut missing_drop_all = Vec::new();
    let mut adding = Vec::new();
    let mut forbidden = BTreeSet::new();
    for c in containers(spec) {
        let caps = &c["securityContext"]["capabilities"];
        if !is_set(caps) {
            missing_drop_all.push(name_of(c));
            continue;
        }
        let list = |field: &str| -> Vec<String> {
            caps[field]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect()
        };
        if !list("drop").iter().any(|cap| cap == "ALL") {
            missing_drop_all.push(name_of(c));
        }
        let extra: Vec<String> = list("add")
            .into_iter()
            .filter(|cap| cap != "NET_BIND_SERVICE")
            .collect();
        if !extra.is_empty() {
            adding.push(name_of(c));
            forbidden.extend(extra);
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding.is_empty() {
        let forbidden: Vec<String> = forbidden.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding),
            join_quote(&forbidden)
        ));
    }
    (!details.is_empty()).then(|| Forbidden::new("unrestricted capabilities", details.join("; ")))
}

/// The default /proc masks, even in a user namespace (from v1.35, replacing baseline's).
pub fn proc_mount(_: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    proc_mount_default_only(spec)
}

/// The volume sources a restricted pod may use.
const ALLOWED_VOLUMES: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The sources upstream names when refusing, in the order it looks for them.
const NAMED_VOLUMES: [&str; 21] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

/// Only the inline volume sources that carry no host or network access.
pub fn volumes(_: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_volumes = Vec::new();
    let mut bad_types = BTreeSet::new();
    for volume in spec["volumes"].as_array().into_iter().flatten() {
        if ALLOWED_VOLUMES.iter().any(|s| is_set(&volume[*s])) {
            continue;
        }
        bad_volumes.push(name_of(volume));
        let kind = NAMED_VOLUMES
            .iter()
            .find(|s| is_set(&volume[**s]))
            .copied()
            .unwrap_or("unknown");
        bad_types.insert(kind);
    }
    if bad_volumes.is_empty() {
        return None;
    }
    let bad_types: Vec<&str> = bad_types.into_iter().collect();
    Some(Forbidden::new(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad_volumes.len()),
            join_quote(&bad_volumes),
            pluralize("uses", "use", bad_volumes.len()),
            pluralize(
                "restricted volume type",
                "restricted volume types",
                bad_types.len()
            ),
            join_quote(&bad_types)
        ),
    ))
}

/// The pod, or every container, must set runAsNonRoot=true, and none may set it false.
pub fn run_as_non_root(minor: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    if minor >= 35 && user_namespaced(spec) {
        return None;
    }
    let pod_value = &spec["securityContext"]["runAsNonRoot"];
    let pod_false = *pod_value == Value::Bool(false);
    let pod_true = *pod_value == Value::Bool(true);
    let mut explicit = Vec::new();
    let mut implicit = Vec::new();
    for c in containers(spec) {
        let value = &c["securityContext"]["runAsNonRoot"];
        if is_set(value) {
            if *value == Value::Bool(false) {
                explicit.push(name_of(c));
            }
        } else if !pod_true {
            implicit.push(name_of(c));
        }
    }
    let mut who = Vec::new();
    if pod_false {
        who.push("pod".to_string());
    }
    if !explicit.is_empty() {
        who.push(containers_phrase(&explicit));
    }
    if !who.is_empty() {
        return Some(Forbidden::new(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                who.join(" and ")
            ),
        ));
    }
    (!implicit.is_empty()).then(|| {
        Forbidden::new(
            "runAsNonRoot != true",
            format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                containers_phrase(&implicit)
            ),
        )
    })
}

/// Neither the pod nor a container may set runAsUser=0 (from v1.23).
pub fn run_as_user(minor: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    if minor >= 35 && user_namespaced(spec) {
        return None;
    }
    let root = |sc: &Value| sc["runAsUser"].as_i64() == Some(0);
    let mut who = Vec::new();
    if root(&spec["securityContext"]) {
        who.push("pod".to_string());
    }
    let bad: Vec<String> = containers(spec)
        .filter(|c| root(&c["securityContext"]))
        .map(name_of)
        .collect();
    if !bad.is_empty() {
        who.push(containers_phrase(&bad));
    }
    (!who.is_empty()).then(|| {
        Forbidden::new(
            "runAsUser=0",
            format!("{} must not set runAsUser=0", who.join(" and ")),
        )
    })
}

/// A seccomp profile must be set, on the pod or every container, to the runtime's default
/// or a localhost one (from v1.19, replacing baseline's).
pub fn seccomp_profile(minor: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    if minor >= 25 && windows(spec) {
        return None;
    }
    let mut bad_values = BTreeSet::new();
    let profile = &spec["securityContext"]["seccompProfile"];
    let mut pod_bad = false;
    let mut pod_set = false;
    if is_set(profile) {
        if seccomp_type_allowed(&profile["type"]) {
            pod_set = true;
        } else {
            pod_bad = true;
            bad_values.insert(profile["type"].as_str().unwrap_or_default().to_string());
        }
    }
    let mut explicit = Vec::new();
    let mut implicit = Vec::new();
    for c in containers(spec) {
        let profile = &c["securityContext"]["seccompProfile"];
        if is_set(profile) {
            if !seccomp_type_allowed(&profile["type"]) {
                explicit.push(name_of(c));
                bad_values.insert(profile["type"].as_str().unwrap_or_default().to_string());
            }
        } else if !pod_set {
            implicit.push(name_of(c));
        }
    }
    let who = seccomp_setters(pod_bad, &explicit);
    if !who.is_empty() {
        return Some(seccomp_refusal(&who, bad_values));
    }
    (!implicit.is_empty()).then(|| {
        Forbidden::new(
            "seccompProfile",
            format!(
                "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                containers_phrase(&implicit)
            ),
        )
    })
}
