//! What a Service's spec says about the addresses and ports it needs (upstream's helpers in
//! pkg/registry/core/service/storage: needsClusterIP, needsNodePort, patchAllocatedValues,
//! dropTypeDependentFields).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::strategy::at;

pub const HEADLESS: &str = "None";

pub fn service_type(svc: &Value) -> &str {
    at(svc, &["spec", "type"])
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
}

/// Every type but ExternalName has a cluster IP (or is headless).
pub fn needs_cluster_ip(svc: &Value) -> bool {
    service_type(svc) != "ExternalName"
}

/// NodePort Services, and LoadBalancers unless allocateLoadBalancerNodePorts is false.
pub fn needs_node_ports(svc: &Value) -> bool {
    match service_type(svc) {
        "NodePort" => true,
        "LoadBalancer" => {
            at(svc, &["spec", "allocateLoadBalancerNodePorts"]).and_then(Value::as_bool)
                != Some(false)
        }
        _ => false,
    }
}

/// The first cluster IP asked for: spec.clusterIPs[0], else spec.clusterIP; "" when none.
pub fn cluster_ip(svc: &Value) -> &str {
    at(svc, &["spec", "clusterIPs"])
        .and_then(|ips| ips.get(0))
        .and_then(Value::as_str)
        .or_else(|| at(svc, &["spec", "clusterIP"]).and_then(Value::as_str))
        .unwrap_or("")
}

/// Sets spec.clusterIP and spec.clusterIPs together, as upstream keeps them in sync.
pub fn set_cluster_ip(svc: &mut Value, ip: &str) {
    if let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("clusterIP".into(), json!(ip));
        spec.insert("clusterIPs".into(), json!([ip]));
    }
}

fn clear_cluster_ip(svc: &mut Value) {
    if let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            spec.remove(field);
        }
    }
}

/// A cluster IP that came from the range (not headless, not empty).
pub fn allocated_ip(svc: &Value) -> Option<&str> {
    Some(cluster_ip(svc)).filter(|ip| !ip.is_empty() && *ip != HEADLESS)
}

pub fn ports(svc: &Value) -> &[Value] {
    at(svc, &["spec", "ports"])
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

pub fn ports_mut(svc: &mut Value) -> Option<&mut Vec<Value>> {
    svc.get_mut("spec")?.get_mut("ports")?.as_array_mut()
}

pub fn node_port(port: &Value) -> Option<i64> {
    port.get("nodePort")
        .and_then(Value::as_i64)
        .filter(|n| *n != 0)
}

/// The node ports a Service holds.
pub fn node_ports(svc: &Value) -> BTreeSet<i64> {
    ports(svc).iter().filter_map(node_port).collect()
}

fn same_port(a: &Value, b: &Value) -> bool {
    a.get("port") == b.get("port")
        && a.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
            == b.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
}

/// An update that leaves out what was allocated keeps it (upstream's patchAllocatedValues):
/// a PUT of a manifest without clusterIP or nodePort must not change or drop them.
pub fn patch_allocated_values(new: &mut Value, old: &Value) {
    if needs_cluster_ip(new) && needs_cluster_ip(old) && cluster_ip(new).is_empty() {
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            for field in ["clusterIP", "clusterIPs"] {
                if let Some(v) = at(old, &["spec", field]) {
                    spec.insert(field.into(), v.clone());
                }
            }
        }
    }
    if needs_node_ports(new) && needs_node_ports(old) {
        let old_ports = ports(old).to_vec();
        for port in ports_mut(new).into_iter().flatten() {
            if node_port(port).is_some() {
                continue;
            }
            let kept = old_ports
                .iter()
                .find(|o| same_port(o, port))
                .and_then(node_port);
            if let (Some(n), Some(map)) = (kept, port.as_object_mut()) {
                map.insert("nodePort".into(), json!(n));
            }
        }
    }
}

/// A type change drops what the new type has no use for, when the request left it as it was
/// (upstream's dropTypeDependentFields): to ExternalName, the cluster IP; away from
/// NodePort / LoadBalancer, the node ports.
pub fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    if !needs_cluster_ip(new) && needs_cluster_ip(old) && cluster_ip(new) == cluster_ip(old) {
        clear_cluster_ip(new);
    }
    if !needs_node_ports(new) && needs_node_ports(old) && node_ports(new) == node_ports(old) {
        for port in ports_mut(new).into_iter().flatten() {
            if let Some(map) = port.as_object_mut() {
                map.remove("nodePort");
            }
        }
    }
}
