//! The Node object a kubelet registers: labels, podCIDR, capacity and allocatable,
//! addresses, nodeInfo and the four conditions, as the kubelet's setters in
//! pkg/kubelet/nodestatus fill them.

use std::net::Ipv4Addr;

use serde_json::{json, Value};

use crate::config::NodeConfig;
use crate::network::Ipv4Cidr;

/// The port the kubelet serves on, reported in daemonEndpoints.
const KUBELET_PORT: u16 = 10250;

/// upstream's GOARCH names for the architecture label and nodeInfo.
pub fn architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// Node `index`'s InternalIP: 127.1.0.1 onwards, loopback addresses that never leave the host.
pub fn internal_ip(index: usize) -> Ipv4Addr {
    let n = (index as u32 + 1) & 0xffff;
    Ipv4Addr::new(127, 1, (n >> 8) as u8, (n & 0xff) as u8)
}

fn condition(kind: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message,
        "lastHeartbeatTime": now, "lastTransitionTime": now})
}

/// The Node object of node `index` called `name`.
pub fn node(config: &NodeConfig, index: usize, name: &str, pod_cidr: Ipv4Cidr) -> Value {
    let now = registry::object::now();
    let arch = architecture();
    let resources = json!({"cpu": config.cpu, "memory": config.memory,
        "pods": config.pods.to_string(), "ephemeral-storage": "100Gi",
        "hugepages-1Gi": "0", "hugepages-2Mi": "0"});
    let id = crate::runtime::container::digest(&[name]);
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": arch,
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": arch,
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": pod_cidr.to_string(), "podCIDRs": [pod_cidr.to_string()]},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [
                {"type": "InternalIP", "address": internal_ip(index).to_string()},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
            "nodeInfo": {
                "machineID": &id[..32],
                "systemUUID": &id[32..],
                "bootID": crate::runtime::container::digest(&[name, &now])[..32],
                "kernelVersion": "6.1.0-sim",
                "osImage": "Simulated Linux",
                "containerRuntimeVersion": format!("sim://{}", env!("CARGO_PKG_VERSION")),
                "kubeletVersion": config.kubelet_version,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": arch,
            },
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available", &now),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure", &now),
                condition("PIDPressure", "False", "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available", &now),
                condition("Ready", "True", "KubeletReady",
                    "kubelet is posting ready status", &now),
            ],
        },
    })
}

/// `desired` with heartbeats now and, where a condition's status did not change, the
/// transition time already `stored`.
pub fn refreshed_status(desired: &Value, stored: &Value) -> Value {
    let now = registry::object::now();
    let mut status = desired.clone();
    if let Some(conditions) = status["conditions"].as_array_mut() {
        for c in conditions {
            c["lastHeartbeatTime"] = json!(now);
            let before = stored["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|s| s["type"] == c["type"]));
            c["lastTransitionTime"] = match before {
                Some(b) if b["status"] == c["status"] => b["lastTransitionTime"].clone(),
                _ => json!(now),
            };
        }
    }
    status
}
