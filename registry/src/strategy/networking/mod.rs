//! The networking.k8s.io/v1 kinds (upstream's pkg/apis/networking/validation and
//! pkg/registry/networking): Ingress, IngressClass, NetworkPolicy, ServiceCIDR and IPAddress.

mod ingress;
mod ingress_class;
mod ip_address;
mod network_policy;
mod service_cidr;
#[cfg(test)]
mod tests;

pub use ingress::IngressStrategy;
pub use ingress_class::IngressClassStrategy;
pub use ip_address::IPAddressStrategy;
pub use network_policy::NetworkPolicyStrategy;
pub use service_cidr::{default_service_cidr, ServiceCIDRStrategy, DEFAULT_SERVICE_CIDR};

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
