//! Ingresses: a default backend or rules, each path typed and absolute, backends naming a
//! Service port or a resource, hosts DNS names (wildcards allowed); the status holds
//! load-balancer addresses. The spec moves the generation on.

use serde_json::{json, Value};

use super::{items, text};
use crate::error::Cause;
use crate::strategy::{at, default_at, Strategy};
use crate::validation::names::{
    is_dns1123_subdomain, name_is_dns1035_label, name_is_dns_subdomain,
};
use crate::validation::net::{
    is_valid_port_name, is_valid_port_num, is_wildcard_dns1123_subdomain, parses_as_ip,
};
use crate::validation::{path_segment_name, quote};

const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];
const INVALID_PATH_SEQUENCES: &[&str] = &["//", "/./", "/../", "%2f", "%2F"];
const INVALID_PATH_SUFFIXES: &[&str] = &["/..", "/."];

pub struct IngressStrategy;

impl Strategy for IngressStrategy {
    /// Go writes the status struct even when empty, as upstream's answers show.
    fn prepare_for_create(&self, obj: &mut Value) {
        default_at(obj, &["status", "loadBalancer"], json!({}));
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = validate_spec(&obj["spec"]);
        let annotation =
            at(obj, &["metadata", "annotations", INGRESS_CLASS_ANNOTATION]).and_then(Value::as_str);
        let class = at(obj, &["spec", "ingressClassName"]).and_then(Value::as_str);
        if let (Some(annotation), Some(class)) = (annotation, class) {
            if annotation != class {
                causes.push(Cause::invalid(
                    &format!("annotations.{INGRESS_CLASS_ANNOTATION}"),
                    quote(annotation),
                    "must match `ingressClassName` when both are specified",
                ));
            }
        }
        causes
    }

    /// Upstream checks the class annotation on create only.
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        validate_spec(&new["spec"])
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        for (i, ingress) in items(new, &["status", "loadBalancer", "ingress"])
            .iter()
            .enumerate()
        {
            let field = format!("status.loadBalancer.ingress[{i}]");
            let ip = text(ingress, &["ip"]);
            if !ip.is_empty() && !parses_as_ip(ip) {
                causes.push(Cause::invalid(
                    &format!("{field}.ip"),
                    quote(ip),
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ));
            }
            let host = text(ingress, &["hostname"]);
            if !host.is_empty() {
                for m in is_dns1123_subdomain(host) {
                    causes.push(Cause::invalid(
                        &format!("{field}.hostname"),
                        quote(host),
                        &m,
                    ));
                }
                if parses_as_ip(host) {
                    causes.push(Cause::invalid(
                        &format!("{field}.hostname"),
                        quote(host),
                        "must be a DNS name, not an IP address",
                    ));
                }
            }
        }
        causes
    }
}

fn validate_spec(spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let rules = items(spec, &["rules"]);
    let default_backend = spec.get("defaultBackend").filter(|b| !b.is_null());
    if rules.is_empty() && default_backend.is_none() {
        // Upstream prints the Go value of the rules: a nil or an empty slice.
        let rules_value = match spec.get("rules") {
            Some(Value::Array(_)) => "[]networking.IngressRule{}",
            _ => "[]networking.IngressRule(nil)",
        };
        causes.push(Cause::invalid(
            "spec",
            rules_value,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(backend) = default_backend {
        causes.extend(validate_backend(backend, "spec.defaultBackend"));
    }
    for (i, rule) in rules.iter().enumerate() {
        let field = format!("spec.rules[{i}]");
        let host = text(rule, &["host"]);
        if !host.is_empty() {
            if parses_as_ip(host) {
                causes.push(Cause::invalid(
                    &format!("{field}.host"),
                    quote(host),
                    "must be a DNS name, not an IP address",
                ));
            }
            let problems = if host.contains('*') {
                is_wildcard_dns1123_subdomain(host)
            } else {
                is_dns1123_subdomain(host)
            };
            for m in problems {
                causes.push(Cause::invalid(&format!("{field}.host"), quote(host), &m));
            }
        }
        if let Some(http) = rule.get("http").filter(|h| !h.is_null()) {
            let paths = items(http, &["paths"]);
            if paths.is_empty() {
                causes.push(Cause::required(&format!("{field}.http.paths")));
            }
            for (j, path) in paths.iter().enumerate() {
                causes.extend(validate_path(path, &format!("{field}.http.paths[{j}]")));
            }
        }
    }
    for (i, tls) in items(spec, &["tls"]).iter().enumerate() {
        for (j, host) in items(tls, &["hosts"]).iter().enumerate() {
            let host = host.as_str().unwrap_or_default();
            let problems = if host.contains('*') {
                is_wildcard_dns1123_subdomain(host)
            } else {
                is_dns1123_subdomain(host)
            };
            for m in problems {
                causes.push(Cause::invalid(
                    &format!("spec.tls[{i}].hosts[{j}]"),
                    quote(host),
                    &m,
                ));
            }
        }
        let secret = text(tls, &["secretName"]);
        if !secret.is_empty() {
            for m in name_is_dns_subdomain(secret, false) {
                causes.push(Cause::invalid(
                    &format!("spec.tls[{i}].secretName"),
                    quote(secret),
                    &m,
                ));
            }
        }
    }
    if let Some(class) = spec.get("ingressClassName").and_then(Value::as_str) {
        for m in name_is_dns_subdomain(class, false) {
            causes.push(Cause::invalid("spec.ingressClassName", quote(class), &m));
        }
    }
    causes
}

fn validate_path(path: &Value, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(path_type) = path.get("pathType").and_then(Value::as_str) else {
        return vec![Cause::required_because(
            &format!("{field}.pathType"),
            "pathType must be specified",
        )];
    };
    let value = text(path, &["path"]);
    let absolute = |causes: &mut Vec<Cause>| {
        if !value.starts_with('/') {
            causes.push(Cause::invalid(
                &format!("{field}.path"),
                quote(value),
                "must be an absolute path",
            ));
        }
    };
    match path_type {
        "Exact" | "Prefix" => {
            absolute(&mut causes);
            for seq in INVALID_PATH_SEQUENCES.iter().filter(|s| value.contains(*s)) {
                causes.push(Cause::invalid(
                    &format!("{field}.path"),
                    quote(value),
                    &format!("must not contain '{seq}'"),
                ));
            }
            for suffix in INVALID_PATH_SUFFIXES.iter().filter(|s| value.ends_with(*s)) {
                causes.push(Cause::invalid(
                    &format!("{field}.path"),
                    quote(value),
                    &format!("cannot end with '{suffix}'"),
                ));
            }
        }
        "ImplementationSpecific" if !value.is_empty() => absolute(&mut causes),
        "ImplementationSpecific" => {}
        other => causes.push(Cause::not_supported(
            &format!("{field}.pathType"),
            other,
            PATH_TYPES,
        )),
    }
    causes.extend(validate_backend(
        &path["backend"],
        &format!("{field}.backend"),
    ));
    causes
}

/// An IngressBackend: a Service (by name, and port by name or number) or a resource.
fn validate_backend(backend: &Value, field: &str) -> Vec<Cause> {
    let set = |key: &str| backend.get(key).filter(|v| !v.is_null());
    match (set("service"), set("resource")) {
        (Some(_), Some(_)) => vec![Cause::invalid(
            field,
            "\"\"",
            "cannot set both resource and service backends",
        )],
        (None, Some(resource)) => typed_reference(resource, &format!("{field}.resource")),
        (Some(service), None) => {
            let mut causes = Vec::new();
            let name = text(service, &["name"]);
            if name.is_empty() {
                causes.push(Cause::required(&format!("{field}.service.name")));
            } else {
                for m in name_is_dns1035_label(name, false) {
                    causes.push(Cause::invalid(
                        &format!("{field}.service.name"),
                        quote(name),
                        &m,
                    ));
                }
            }
            let port_name = text(service, &["port", "name"]);
            let number = at(service, &["port", "number"])
                .and_then(Value::as_i64)
                .unwrap_or(0);
            match (port_name.is_empty(), number == 0) {
                (false, false) => causes.push(Cause::invalid(
                    field,
                    "\"\"",
                    "cannot set both port name & port number",
                )),
                (false, true) => {
                    for m in is_valid_port_name(port_name) {
                        causes.push(Cause::invalid(
                            &format!("{field}.service.port.name"),
                            quote(port_name),
                            &m,
                        ));
                    }
                }
                (true, false) => {
                    for m in is_valid_port_num(number) {
                        causes.push(Cause::invalid(
                            &format!("{field}.service.port.number"),
                            number,
                            &m,
                        ));
                    }
                }
                (true, true) => causes.push(Cause::required_because(
                    field,
                    "port name or number is required",
                )),
            }
            causes
        }
        (None, None) => vec![Cause::invalid(
            field,
            "\"\"",
            "resource or service backend is required",
        )],
    }
}

/// A TypedLocalObjectReference: an optional API group, a kind and a name that can be path
/// segments.
pub(super) fn typed_reference(reference: &Value, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(group) = reference.get("apiGroup").and_then(Value::as_str) {
        for m in is_dns1123_subdomain(group) {
            causes.push(Cause::invalid(
                &format!("{field}.apiGroup"),
                quote(group),
                &m,
            ));
        }
    }
    for key in ["kind", "name"] {
        let value = text(reference, &[key]);
        if value.is_empty() {
            causes.push(Cause::required(&format!("{field}.{key}")));
        }
        for m in path_segment_name(value, false) {
            causes.push(Cause::invalid(&format!("{field}.{key}"), quote(value), &m));
        }
    }
    causes
}
