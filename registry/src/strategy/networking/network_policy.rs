//! NetworkPolicies: a pod selector, ingress and egress rules of ports (numbered, ranged or
//! named) and peers (pods, namespaces or one IP block), and the policy types they cover,
//! defaulted from the rules given.

use serde_json::{json, Value};

use super::{items, text};
use crate::error::Cause;
use crate::strategy::Strategy;
use crate::validation::net::{
    cidr_strictly_within, is_valid_port_name, is_valid_port_num, legacy_cidr, parse_cidr,
};
use crate::validation::{label_selector, quote};

const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];
const POLICY_TYPES: &[&str] = &["Ingress", "Egress"];

pub struct NetworkPolicyStrategy;

impl Strategy for NetworkPolicyStrategy {
    /// SetDefaults_NetworkPolicyPort and SetDefaults_NetworkPolicy: ports are TCP, and a
    /// policy without types covers ingress, and egress when it has egress rules.
    fn prepare_for_create(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        for direction in ["ingress", "egress"] {
            for rule in spec
                .get_mut(direction)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                for port in rule
                    .get_mut("ports")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_object_mut)
                {
                    port.entry("protocol").or_insert_with(|| json!("TCP"));
                }
            }
        }
        let typed = spec
            .get("policyTypes")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty());
        if !typed {
            let egress = spec
                .get("egress")
                .and_then(Value::as_array)
                .is_some_and(|e| !e.is_empty());
            let types = if egress {
                json!(["Ingress", "Egress"])
            } else {
                json!(["Ingress"])
            };
            spec.insert("policyTypes".into(), types);
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_spec(&obj["spec"], &[])
    }

    /// CIDRs the stored policy already has stay acceptable (upstream's legacy CIDR rule).
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut existing = Vec::new();
        for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
            for rule in items(old, &["spec", direction]) {
                for peer in items(rule, &[peers]) {
                    existing.push(text(peer, &["ipBlock", "cidr"]));
                    existing.extend(
                        items(peer, &["ipBlock", "except"])
                            .iter()
                            .filter_map(Value::as_str),
                    );
                }
            }
        }
        validate_spec(&new["spec"], &existing)
    }
}

fn validate_spec(spec: &Value, existing: &[&str]) -> Vec<Cause> {
    let mut causes: Vec<Cause> = label_selector(spec.get("podSelector"), "spec.podSelector")
        .into_iter()
        .collect();
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in items(spec, &[direction]).iter().enumerate() {
            let field = format!("spec.{direction}[{i}]");
            for (j, port) in items(rule, &["ports"]).iter().enumerate() {
                causes.extend(validate_port(port, &format!("{field}.ports[{j}]")));
            }
            for (j, peer) in items(rule, &[peers]).iter().enumerate() {
                causes.extend(validate_peer(
                    peer,
                    &format!("{field}.{peers}[{j}]"),
                    existing,
                ));
            }
        }
    }
    let types = items(spec, &["policyTypes"]);
    if types.len() > POLICY_TYPES.len() {
        let list: Vec<String> = types
            .iter()
            .map(|t| quote(t.as_str().unwrap_or_default()))
            .collect();
        causes.push(Cause::invalid(
            "spec.policyTypes",
            format!("&[]networking.PolicyType{{{}}}", list.join(", ")),
            "may not specify more than two policyTypes",
        ));
        return causes;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or_default();
        if !POLICY_TYPES.contains(&t) {
            causes.push(Cause::not_supported(
                &format!("spec.policyTypes[{i}]"),
                t,
                POLICY_TYPES,
            ));
        }
    }
    causes
}

fn validate_port(port: &Value, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(protocol) = port.get("protocol").and_then(Value::as_str) {
        if !PROTOCOLS.contains(&protocol) {
            causes.push(Cause::not_supported(
                &format!("{field}.protocol"),
                protocol,
                PROTOCOLS,
            ));
        }
    }
    let end = port.get("endPort").and_then(Value::as_i64);
    match port.get("port") {
        Some(Value::Number(n)) => {
            let number = n.as_i64().unwrap_or(0);
            for m in is_valid_port_num(number) {
                causes.push(Cause::invalid(&format!("{field}.port"), number, &m));
            }
            if let Some(end) = end {
                if end < number {
                    causes.push(Cause::invalid(
                        &format!("{field}.endPort"),
                        end,
                        "must be greater than or equal to `port`",
                    ));
                }
                for m in is_valid_port_num(end) {
                    causes.push(Cause::invalid(&format!("{field}.endPort"), end, &m));
                }
            }
        }
        Some(Value::String(name)) => {
            if let Some(end) = end {
                causes.push(Cause::invalid(
                    &format!("{field}.endPort"),
                    end,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for m in is_valid_port_name(name) {
                causes.push(Cause::invalid(&format!("{field}.port"), quote(name), &m));
            }
        }
        _ => {
            if let Some(end) = end {
                causes.push(Cause::invalid(
                    &format!("{field}.endPort"),
                    end,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
    causes
}

fn validate_peer(peer: &Value, field: &str, existing: &[&str]) -> Vec<Cause> {
    let mut causes = Vec::new();
    let set = |key: &str| peer.get(key).filter(|v| !v.is_null());
    let mut peers = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if let Some(selector) = set(key) {
            peers += 1;
            causes.extend(label_selector(Some(selector), &format!("{field}.{key}")));
        }
    }
    if let Some(block) = set("ipBlock") {
        peers += 1;
        causes.extend(validate_ip_block(
            block,
            &format!("{field}.ipBlock"),
            existing,
        ));
        if peers > 1 {
            causes.push(Cause::forbidden(
                field,
                "may not specify both ipBlock and another peer",
            ));
        }
    }
    if peers == 0 {
        causes.push(Cause::required_because(field, "must specify a peer"));
    }
    causes
}

fn validate_ip_block(block: &Value, field: &str, existing: &[&str]) -> Vec<Cause> {
    let cidr = text(block, &["cidr"]);
    if cidr.is_empty() {
        return vec![Cause::required(&format!("{field}.cidr"))];
    }
    let mut causes: Vec<Cause> = legacy_cidr(&format!("{field}.cidr"), cidr, existing)
        .into_iter()
        .collect();
    let Some(outer) = parse_cidr(cidr) else {
        return causes;
    };
    for (i, except) in items(block, &["except"]).iter().enumerate() {
        let except = except.as_str().unwrap_or_default();
        let path = format!("{field}.except[{i}]");
        if let Some(cause) = legacy_cidr(&path, except, existing) {
            causes.push(cause);
            continue;
        }
        if !parse_cidr(except).is_some_and(|inner| cidr_strictly_within(outer, inner)) {
            causes.push(Cause::invalid(
                &path,
                quote(except),
                "must be a strict subset of `cidr`",
            ));
        }
    }
    causes
}
