//! Small kinds whose only special behaviour is upstream's defaulting and validation.

use serde_json::{json, Value};

use super::{at, default_at, Strategy};
use crate::error::Cause;

pub struct ServiceStrategy;

/// What upstream's decoder defaults in every Service it reads (create and update alike).
fn service_spec_defaults(obj: &mut Value) {
    default_at(obj, &["spec", "type"], json!("ClusterIP"));
    default_at(obj, &["spec", "sessionAffinity"], json!("None"));
    default_at(obj, &["spec", "internalTrafficPolicy"], json!("Cluster"));
    if let Some(Value::Array(ports)) = obj.get_mut("spec").and_then(|s| s.get_mut("ports")) {
        for p in ports.iter_mut().filter(|p| p.is_object()) {
            default_at(p, &["protocol"], json!("TCP"));
            let port = p.get("port").cloned().unwrap_or(Value::Null);
            default_at(p, &["targetPort"], port);
        }
    }
}

impl Strategy for ServiceStrategy {
    /// Upstream's Service storage sets ReturnDeletedObject: a DELETE answers the Service.
    fn returns_deleted_object(&self) -> bool {
        true
    }

    /// Services are DNS-1035 labels (upstream's ValidateServiceName): their names become DNS
    /// names and environment variables.
    fn name_problems(&self, name: &str) -> Vec<String> {
        crate::validation::names::name_is_dns1035_label(name, false)
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        service_spec_defaults(obj);
        // An ExternalName Service has no address, so no family either.
        if at(obj, &["spec", "type"]).and_then(Value::as_str) != Some("ExternalName") {
            default_at(obj, &["spec", "ipFamilyPolicy"], json!("SingleStack"));
            default_at(obj, &["spec", "ipFamilies"], json!(["IPv4"]));
        }
        default_at(obj, &["status", "loadBalancer"], json!({}));
    }

    /// A port added by an update (or an apply) is defaulted as on create; the address
    /// families stay as the allocation left them.
    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        service_spec_defaults(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let kind = obj
            .get("spec")
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        let supported = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
        if !supported.contains(&kind) {
            causes.push(Cause::not_supported("spec.type", kind, &supported));
        }
        if let Some(Value::Array(ports)) = obj.get("spec").and_then(|s| s.get("ports")) {
            for (i, p) in ports.iter().enumerate() {
                let port = p.get("port").and_then(Value::as_i64);
                if !port.is_some_and(|n| (1..=65535).contains(&n)) {
                    causes.push(Cause::invalid(
                        &format!("spec.ports[{i}].port"),
                        port.unwrap_or(0),
                        "must be between 1 and 65535, inclusive",
                    ));
                }
                let node_port = p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
                if node_port != 0 && matches!(kind, "ClusterIP" | "ExternalName") {
                    causes.push(Cause::forbidden(
                        &format!("spec.ports[{i}].nodePort"),
                        &format!("may not be used when `type` is '{kind}'"),
                    ));
                }
            }
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        // A cluster IP stays the Service's for its life, but for a change to or from
        // ExternalName (which has none).
        let first_ip = |svc: &Value| {
            at(svc, &["spec", "clusterIPs"])
                .and_then(|ips| ips.get(0))
                .or_else(|| at(svc, &["spec", "clusterIP"]))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let external = |svc: &Value| {
            at(svc, &["spec", "type"]).and_then(Value::as_str) == Some("ExternalName")
        };
        let (new_ip, old_ip) = (first_ip(new), first_ip(old));
        if !external(new) && !external(old) && !old_ip.is_empty() && new_ip != old_ip {
            causes.push(Cause::invalid(
                "spec.clusterIPs[0]",
                format!("\"{new_ip}\""),
                "may not change once set",
            ));
        }
        causes
    }
}

/// Nodes: a kubelet registers its Node with capacity, addresses and conditions in one create.
/// ServiceAccounts: generic, but for the deleted account in a DELETE's answer (upstream's
/// storage sets ReturnDeletedObject).
pub struct ServiceAccountStrategy;

impl Strategy for ServiceAccountStrategy {
    fn returns_deleted_object(&self) -> bool {
        true
    }
}

pub struct NodeStrategy;

impl Strategy for NodeStrategy {
    fn keeps_status_on_create(&self) -> bool {
        true
    }
}

pub struct SecretStrategy;

/// Upstream's v1 conversion of a Secret: every `stringData` entry overwrites the `data` entry
/// of its key (base64-encoded), and `stringData` itself is never stored.
fn merge_string_data(obj: &mut Value) {
    use base64::Engine;
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(strings)) = map.remove("stringData") else {
        return;
    };
    if strings.is_empty() {
        return;
    }
    let data = map.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    if let Some(data) = data.as_object_mut() {
        for (key, value) in strings {
            let text = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
            data.insert(key, Value::String(encoded));
        }
    }
}

impl Strategy for SecretStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        merge_string_data(obj);
        default_at(obj, &["type"], json!("Opaque"));
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        merge_string_data(new);
        default_at(new, &["type"], json!("Opaque"));
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        use base64::Engine;
        let mut causes = Vec::new();
        if let Some(Value::Object(data)) = obj.get("data") {
            for (key, value) in data {
                let ok = value
                    .as_str()
                    .is_some_and(|v| base64::engine::general_purpose::STANDARD.decode(v).is_ok());
                if !ok {
                    causes.push(Cause::invalid(
                        &format!("data[{key}]"),
                        "<secret contents redacted>",
                        "must be base64 encoded",
                    ));
                }
            }
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        if new.get("type") != old.get("type") {
            causes.push(Cause::invalid("type", "", "field is immutable"));
        }
        if old.get("immutable") == Some(&Value::Bool(true)) && new.get("data") != old.get("data") {
            causes.push(Cause::forbidden(
                "data",
                "field is immutable when `immutable` is set",
            ));
        }
        causes
    }
}

pub struct VolumeStrategy;

impl Strategy for VolumeStrategy {
    /// Upstream's volume and claim storage set ReturnDeletedObject.
    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        default_at(obj, &["spec", "volumeMode"], json!("Filesystem"));
        if obj.get("kind").and_then(Value::as_str) == Some("PersistentVolume") {
            default_at(
                obj,
                &["spec", "persistentVolumeReclaimPolicy"],
                json!("Retain"),
            );
        }
        default_at(obj, &["status", "phase"], json!("Pending"));
    }
}

/// Kinds upstream lets a PUT create (AllowCreateOnUpdate): leases (leader election creates
/// its Lease so), endpoints, events (limit ranges have their own strategy).
pub struct CreateOnUpdateStrategy;

impl Strategy for CreateOnUpdateStrategy {
    fn allow_create_on_update(&self) -> bool {
        true
    }
}
