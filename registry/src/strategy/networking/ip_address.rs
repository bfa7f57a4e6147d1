//! IPAddresses: an address taken from a ServiceCIDR, named by the address itself in
//! canonical form, and the object (a Service) that holds it, which never changes.

use serde_json::Value;

use super::text;
use crate::error::Cause;
use crate::strategy::Strategy;
use crate::validation::names::is_dns1123_subdomain;
use crate::validation::net::strict_ip_problem;
use crate::validation::{path_segment_name, quote};

pub struct IPAddressStrategy;

impl Strategy for IPAddressStrategy {
    /// The name is the address (ValidateIPAddressName).
    fn name_problems(&self, name: &str) -> Vec<String> {
        strict_ip_problem(name).into_iter().collect()
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let Some(parent) = obj["spec"].get("parentRef").filter(|p| !p.is_null()) else {
            return vec![Cause::required("spec.parentRef")];
        };
        let mut causes = Vec::new();
        let group = text(parent, &["group"]);
        if !group.is_empty() {
            for m in is_dns1123_subdomain(group) {
                causes.push(Cause::invalid("spec.parentRef.group", quote(group), &m));
            }
        }
        for field in ["resource", "name"] {
            let value = text(parent, &[field]);
            if value.is_empty() {
                causes.push(Cause::required(&format!("spec.parentRef.{field}")));
            }
            for m in path_segment_name(value, false)
                .into_iter()
                .filter(|_| !value.is_empty())
            {
                causes.push(Cause::invalid(
                    &format!("spec.parentRef.{field}"),
                    quote(value),
                    &m,
                ));
            }
        }
        let namespace = text(parent, &["namespace"]);
        for m in path_segment_name(namespace, false)
            .into_iter()
            .filter(|_| !namespace.is_empty())
        {
            causes.push(Cause::invalid(
                "spec.parentRef.namespace",
                quote(namespace),
                &m,
            ));
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let parent = |o: &Value| o["spec"].get("parentRef").cloned().unwrap_or(Value::Null);
        if parent(new) != parent(old) {
            return vec![Cause::invalid(
                "spec.parentRef",
                parent(new).to_string(),
                "field is immutable",
            )];
        }
        Vec::new()
    }
}
