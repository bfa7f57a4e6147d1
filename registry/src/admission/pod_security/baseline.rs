//! The baseline checks of the Pod Security Standards (upstream's policy/check_*.go of level
//! baseline), each with upstream's reason and detail wording. Each takes the minor version
//! it judges at, the pod's (or template's) metadata and spec; None passes.

use std::collections::BTreeSet;

use serde_json::Value;

use super::checks::{
    containers, containers_phrase, is_set, join_quote, name_of, pluralize, user_namespaced,
    Forbidden,
};
use crate::validation::quote;

const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";
const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// "pod" and/or `container(s) "…"`, joined by " and ", as upstream names who set a bad value.
fn setters(pod: bool, bad_containers: &[String]) -> Vec<String> {
    let mut setters = Vec::new();
    if pod {
        setters.push("pod".to_string());
    }
    if !bad_containers.is_empty() {
        setters.push(containers_phrase(bad_containers));
    }
    setters
}

fn annotations(metadata: &Value) -> impl Iterator<Item = (&String, &str)> {
    metadata["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, v.as_str().unwrap_or_default()))
}

fn app_armor_type_allowed(t: &Value) -> bool {
    t == "RuntimeDefault" || t == "Localhost"
}

/// AppArmor may not be disabled or overridden beyond the runtime default or localhost
/// profiles, by field or by the deprecated annotations.
pub fn app_armor_profile(_: u32, metadata: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_values = BTreeSet::new();
    let profile_type = &spec["securityContext"]["appArmorProfile"];
    let pod = is_set(profile_type) && !app_armor_type_allowed(&profile_type["type"]);
    if pod {
        bad_values.insert(
            profile_type["type"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
    }
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        let profile = &c["securityContext"]["appArmorProfile"];
        if is_set(profile) && !app_armor_type_allowed(&profile["type"]) {
            bad_containers.push(name_of(c));
            bad_values.insert(profile["type"].as_str().unwrap_or_default().to_string());
        }
    }
    let mut who = setters(pod, &bad_containers);
    let mut bad_annotations: Vec<String> = annotations(metadata)
        .filter(|(k, v)| {
            k.starts_with(APPARMOR_ANNOTATION_PREFIX)
                && !(v.is_empty() || *v == "runtime/default" || v.starts_with("localhost/"))
        })
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect();
    let mut values: Vec<String> = bad_values.into_iter().collect();
    if !bad_annotations.is_empty() {
        bad_annotations.sort();
        who.push(pluralize("annotation", "annotations", bad_annotations.len()).to_string());
        values.extend(bad_annotations);
    }
    if who.is_empty() {
        return None;
    }
    Some(Forbidden::new(
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            values.len(),
        ),
        format!(
            "{} must not set AppArmor profile type to {}",
            who.join(" and "),
            join_quote(&values)
        ),
    ))
}

const DEFAULT_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Only the container runtime's default capabilities may be added.
pub fn capabilities(_: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_containers = Vec::new();
    let mut extra = BTreeSet::new();
    for c in containers(spec) {
        let added = c["securityContext"]["capabilities"]["add"].as_array();
        let mut valid = true;
        for cap in added.into_iter().flatten() {
            let cap = cap.as_str().unwrap_or_default();
            if !DEFAULT_CAPABILITIES.contains(&cap) {
                valid = false;
                extra.insert(cap.to_string());
            }
        }
        if !valid {
            bad_containers.push(name_of(c));
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let extra: Vec<String> = extra.into_iter().collect();
    Some(Forbidden::new(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad_containers),
            join_quote(&extra)
        ),
    ))
}

/// The host's network, PID and IPC namespaces may not be shared.
pub fn host_namespaces(_: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    let shared: Vec<&str> = [
        ("hostNetwork", "hostNetwork=true"),
        ("hostPID", "hostPID=true"),
        ("hostIPC", "hostIPC=true"),
    ]
    .into_iter()
    .filter(|(field, _)| spec[*field] == Value::Bool(true))
    .map(|(_, text)| text)
    .collect();
    (!shared.is_empty()).then(|| Forbidden::new("host namespaces", shared.join(", ")))
}

fn volumes(spec: &Value) -> impl Iterator<Item = &Value> {
    spec["volumes"].as_array().into_iter().flatten()
}

/// No hostPath volumes.
pub fn host_path_volumes(_: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    let names: Vec<String> = volumes(spec)
        .filter(|v| is_set(&v["hostPath"]))
        .map(name_of)
        .collect();
    (!names.is_empty()).then(|| {
        Forbidden::new(
            "hostPath volumes",
            format!(
                "{} {}",
                pluralize("volume", "volumes", names.len()),
                join_quote(&names)
            ),
        )
    })
}

/// No container port may be bound on the host.
pub fn host_ports(_: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_containers = Vec::new();
    // Upstream's set of the ports as text: sorted as strings.
    let mut ports = BTreeSet::new();
    for c in containers(spec) {
        let mut valid = true;
        for port in c["ports"].as_array().into_iter().flatten() {
            let host_port = port["hostPort"].as_i64().unwrap_or(0);
            if host_port != 0 {
                valid = false;
                ports.insert(host_port.to_string());
            }
        }
        if !valid {
            bad_containers.push(name_of(c));
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    Some(Forbidden::new(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            pluralize("uses", "use", bad_containers.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    ))
}

/// The hosts a probe or lifecycle handler names (httpGet or tcpSocket).
fn handler_hosts(handler: &Value) -> impl Iterator<Item = String> + '_ {
    ["httpGet", "tcpSocket"]
        .into_iter()
        .filter_map(move |kind| {
            handler[kind]["host"]
                .as_str()
                .filter(|h| !h.is_empty())
                .map(str::to_string)
        })
}

/// Probes and lifecycle handlers may not reach another host (from v1.34).
pub fn host_probes_and_lifecycle(_: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    let mut bad_containers = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    for c in containers(spec) {
        let handlers = [
            &c["livenessProbe"],
            &c["readinessProbe"],
            &c["startupProbe"],
            &c["lifecycle"]["postStart"],
            &c["lifecycle"]["preStop"],
        ];
        for handler in handlers {
            for host in handler_hosts(handler) {
                bad_containers.insert(name_of(c));
                hosts.insert(host);
            }
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let bad_containers: Vec<String> = bad_containers.into_iter().collect();
    let hosts: Vec<String> = hosts.into_iter().collect();
    Some(Forbidden::new(
        "probe or lifecycle host",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            pluralize("uses", "use", bad_containers.len()),
            pluralize(
                "probe or lifecycle host",
                "probe or lifecycle hosts",
                hosts.len()
            ),
            join_quote(&hosts)
        ),
    ))
}

/// No privileged containers.
pub fn privileged(_: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    let bad: Vec<String> = containers(spec)
        .filter(|c| c["securityContext"]["privileged"] == Value::Bool(true))
        .map(name_of)
        .collect();
    (!bad.is_empty()).then(|| {
        Forbidden::new(
            "privileged",
            format!(
                "{} must not set securityContext.privileged=true",
                containers_phrase(&bad)
            ),
        )
    })
}

/// The default /proc masks: upstream's procMount check, shared by the restricted one.
pub fn proc_mount_default_only(spec: &Value) -> Option<Forbidden> {
    let mut bad_containers = Vec::new();
    let mut types = BTreeSet::new();
    for c in containers(spec) {
        let mount = &c["securityContext"]["procMount"];
        if is_set(mount) && mount != "Default" {
            bad_containers.push(name_of(c));
            types.insert(mount.as_str().unwrap_or_default().to_string());
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let types: Vec<String> = types.into_iter().collect();
    Some(Forbidden::new(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad_containers),
            join_quote(&types)
        ),
    ))
}

/// The default /proc masks, any mask in a user namespace from v1.35.
pub fn proc_mount(minor: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    if minor >= 35 && user_namespaced(spec) {
        return None;
    }
    proc_mount_default_only(spec)
}

/// SELinux: only the container types, and neither user nor role.
pub fn se_linux_options(minor: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    let mut allowed = vec!["", "container_t", "container_init_t", "container_kvm_t"];
    if minor >= 31 {
        allowed.push("container_engine_t");
    }
    let mut bad_types = BTreeSet::new();
    let (mut set_user, mut set_role) = (false, false);
    let mut valid = |opts: &Value| {
        let mut ok = true;
        let kind = opts["type"].as_str().unwrap_or_default();
        if !allowed.contains(&kind) {
            ok = false;
            bad_types.insert(kind.to_string());
        }
        if !opts["user"].as_str().unwrap_or_default().is_empty() {
            ok = false;
            set_user = true;
        }
        if !opts["role"].as_str().unwrap_or_default().is_empty() {
            ok = false;
            set_role = true;
        }
        ok
    };
    let pod_opts = &spec["securityContext"]["seLinuxOptions"];
    let pod = is_set(pod_opts) && !valid(pod_opts);
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        let opts = &c["securityContext"]["seLinuxOptions"];
        if is_set(opts) && !valid(opts) {
            bad_containers.push(name_of(c));
        }
    }
    let who = setters(pod, &bad_containers);
    if who.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !bad_types.is_empty() {
        let types: Vec<String> = bad_types.into_iter().collect();
        data.push(format!(
            "{} {}",
            pluralize("type", "types", types.len()),
            join_quote(&types)
        ));
    }
    if set_user {
        data.push("user may not be set".to_string());
    }
    if set_role {
        data.push("role may not be set".to_string());
    }
    Some(Forbidden::new(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            who.join(" and "),
            data.join("; ")
        ),
    ))
}

pub fn seccomp_type_allowed(t: &Value) -> bool {
    t == "RuntimeDefault" || t == "Localhost"
}

/// Before v1.19 seccomp was set by annotations: only the runtime's default or localhost.
fn seccomp_annotations(metadata: &Value, spec: &Value) -> Option<Forbidden> {
    let valid =
        |v: &str| v == "runtime/default" || v == "docker/default" || v.starts_with("localhost/");
    let annotations = &metadata["annotations"];
    let mut bad = BTreeSet::new();
    let mut judge = |key: String| {
        if let Some(value) = annotations.get(&key) {
            let value = value.as_str().unwrap_or_default();
            if !valid(value) {
                bad.insert(format!("{key}={}", quote(value)));
            }
        }
    };
    judge(SECCOMP_POD_ANNOTATION.to_string());
    for c in containers(spec) {
        judge(format!(
            "{SECCOMP_CONTAINER_ANNOTATION_PREFIX}{}",
            name_of(c)
        ));
    }
    if bad.is_empty() {
        return None;
    }
    let bad: Vec<String> = bad.into_iter().collect();
    Some(Forbidden::new(
        "seccompProfile",
        format!(
            "forbidden {} {}",
            pluralize("annotation", "annotations", bad.len()),
            bad.join(", ")
        ),
    ))
}

/// Seccomp may not be turned off (Unconfined): a set profile is the runtime's default or
/// a localhost one.
pub fn seccomp_profile(minor: u32, metadata: &Value, spec: &Value) -> Option<Forbidden> {
    if minor < 19 {
        return seccomp_annotations(metadata, spec);
    }
    let mut bad_values = BTreeSet::new();
    let profile = &spec["securityContext"]["seccompProfile"];
    let pod = is_set(profile) && !seccomp_type_allowed(&profile["type"]);
    if pod {
        bad_values.insert(profile["type"].as_str().unwrap_or_default().to_string());
    }
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        let profile = &c["securityContext"]["seccompProfile"];
        if is_set(profile) && !seccomp_type_allowed(&profile["type"]) {
            bad_containers.push(name_of(c));
            bad_values.insert(profile["type"].as_str().unwrap_or_default().to_string());
        }
    }
    let who = setters(pod, &bad_containers);
    (!who.is_empty()).then(|| seccomp_refusal(&who, bad_values))
}

/// The refusal of explicitly bad seccomp profile types (shared with restricted).
pub fn seccomp_refusal(who: &[String], bad_values: BTreeSet<String>) -> Forbidden {
    let values: Vec<String> = bad_values.into_iter().collect();
    Forbidden::new(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            who.join(" and "),
            join_quote(&values)
        ),
    )
}

pub fn seccomp_setters(pod: bool, bad_containers: &[String]) -> Vec<String> {
    setters(pod, bad_containers)
}

/// The sysctls safe to set, growing with the version.
fn sysctl_allowed(minor: u32, name: &str) -> bool {
    const V1_0: [&str; 5] = [
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
    ];
    const V1_29: [&str; 4] = [
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    ];
    V1_0.contains(&name)
        || (minor >= 27 && name == "net.ipv4.ip_local_reserved_ports")
        || (minor >= 29 && V1_29.contains(&name))
        || (minor >= 32 && (name == "net.ipv4.tcp_rmem" || name == "net.ipv4.tcp_wmem"))
}

/// Only the safe, namespaced sysctls.
pub fn sysctls(minor: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    let bad: Vec<&str> = spec["securityContext"]["sysctls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["name"].as_str().unwrap_or_default())
        .filter(|name| !sysctl_allowed(minor, name))
        .collect();
    (!bad.is_empty()).then(|| Forbidden::new("forbidden sysctls", bad.join(", ")))
}

/// No Windows host processes.
pub fn windows_host_process(_: u32, _: &Value, spec: &Value) -> Option<Forbidden> {
    let host_process = |sc: &Value| sc["windowsOptions"]["hostProcess"] == Value::Bool(true);
    let bad: Vec<String> = containers(spec)
        .filter(|c| host_process(&c["securityContext"]))
        .map(name_of)
        .collect();
    let who = setters(host_process(&spec["securityContext"]), &bad);
    (!who.is_empty()).then(|| {
        Forbidden::new(
            "hostProcess",
            format!(
                "{} must not set securityContext.windowsOptions.hostProcess=true",
                who.join(" and ")
            ),
        )
    })
}
