//! ServiceCIDRs: the ranges Service cluster IPs come from (one or two CIDRs, one per family);
//! a CIDR never changes, though a single-stack range may gain its second family. The
//! `kubernetes` one is the server's `--service-cluster-ip-range`, created at start.

use serde_json::{json, Value};

use super::items;
use crate::error::Cause;
use crate::strategy::Strategy;
use crate::validation::net::{strict_cidr, strict_cidr_problem};
use crate::validation::quote;

/// The ServiceCIDR kube-apiserver keeps for its own range.
pub const DEFAULT_SERVICE_CIDR: &str = "kubernetes";

pub struct ServiceCIDRStrategy;

fn cidrs(obj: &Value) -> Vec<&str> {
    items(obj, &["spec", "cidrs"])
        .iter()
        .map(|c| c.as_str().unwrap_or_default())
        .collect()
}

fn go_cidrs(list: &[&str]) -> String {
    let quoted: Vec<String> = list.iter().map(|c| quote(c)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn validate_cidrs(list: &[&str]) -> Vec<Cause> {
    const FIELD: &str = "spec.cidrs";
    if list.is_empty() {
        return vec![Cause::required_because(FIELD, "at least one CIDR required")];
    }
    if list.len() > 2 {
        return vec![Cause::invalid(
            FIELD,
            format!("networking.ServiceCIDRSpec{{CIDRs:{}}}", go_cidrs(list)),
            "may only hold up to 2 values",
        )];
    }
    let mut causes = Vec::new();
    for (i, cidr) in list.iter().enumerate() {
        if let Some(problem) = strict_cidr_problem(cidr) {
            causes.push(Cause::invalid(
                &format!("{FIELD}[{i}]"),
                quote(cidr),
                &problem,
            ));
        }
    }
    if let [a, b] = list {
        let family = |c: &str| strict_cidr(c).map(|(ip, _)| ip.is_ipv4());
        if let (Some(x), Some(y)) = (family(a), family(b)) {
            if x == y {
                causes.push(Cause::invalid(
                    FIELD,
                    go_cidrs(list),
                    "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
                ));
            }
        }
    }
    causes
}

impl Strategy for ServiceCIDRStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_cidrs(&cidrs(obj))
    }

    /// The CIDRs stay; one may be added to a single-stack range (upstream's issue 131261).
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let (new, old) = (cidrs(new), cidrs(old));
        let immutable = |i: usize, value: &str| {
            Cause::invalid(
                &format!("spec.cidrs[{i}]"),
                quote(value),
                "field is immutable",
            )
        };
        match (old.len(), new.len()) {
            (a, b) if a == b => old
                .iter()
                .zip(&new)
                .enumerate()
                .filter(|(_, (o, n))| o != n)
                .map(|(i, (_, n))| immutable(i, n))
                .collect(),
            (1, 2) => {
                let mut causes = Vec::new();
                if new[0] != old[0] {
                    causes.push(immutable(0, new[0]));
                }
                causes.extend(validate_cidrs(&new));
                causes
            }
            _ => vec![Cause::invalid(
                "spec.cidrs",
                go_cidrs(&new),
                "field is immutable",
            )],
        }
    }

    /// Status writes carry conditions only.
    fn validate_status_update(&self, _new: &Value, _old: &Value) -> Vec<Cause> {
        Vec::new()
    }
}

/// The server's own ServiceCIDR for `range`, with the status that says it is ready.
pub fn default_service_cidr(range: &str, now: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": DEFAULT_SERVICE_CIDR},
        "spec": {"cidrs": [range]},
        "status": {"conditions": [{
            "type": "Ready",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "",
            "message": "Kubernetes default Service CIDR is ready",
        }]},
    })
}
