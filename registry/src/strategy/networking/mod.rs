//! The networking.k8s.io/v1 kinds (upstream's pkg/apis/networking/validation and
//! pkg/registry/networking): Ingress, IngressClass and NetworkPolicy.

mod ingress;
mod ingress_class;
mod network_policy;
#[cfg(test)]
mod tests;

pub use ingress::IngressStrategy;
pub use ingress_class::IngressClassStrategy;
pub use network_policy::NetworkPolicyStrategy;

use serde_json::Value;

use crate::strategy::at;

/// The string at `path`, or "" when absent or not a string.
fn text<'a>(obj: &'a Value, path: &[&str]) -> &'a str {
    at(obj, path).and_then(Value::as_str).unwrap_or_default()
}

/// The array at `path`, empty when absent or not an array.
fn items<'a>(obj: &'a Value, path: &[&str]) -> &'a [Value] {
    at(obj, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}
