//! CSIStorageCapacities: how much a driver can provision for a storage class in a topology
//! segment; what was asked (class and topology) never changes, the answer does.

use serde_json::Value;

use super::immutable;
use crate::error::Cause;
use crate::strategy::Strategy;
use crate::types::parse_quantity;
use crate::validation::names::name_is_dns_subdomain;
use crate::validation::{label_selector, quote};

pub struct CSIStorageCapacityStrategy;

impl Strategy for CSIStorageCapacityStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes: Vec<Cause> = label_selector(obj.get("nodeTopology"), "nodeTopology")
            .into_iter()
            .collect();
        let class = obj["storageClassName"].as_str().unwrap_or_default();
        for m in name_is_dns_subdomain(class, false) {
            causes.push(Cause::invalid("storageClassName", quote(class), &m));
        }
        for field in ["capacity", "maximumVolumeSize"] {
            let Some(text) = obj[field].as_str() else {
                continue;
            };
            if parse_quantity(text).is_some_and(|q| q < 0.0) {
                causes.push(Cause::invalid(
                    field,
                    quote(text),
                    "must be greater than or equal to 0",
                ));
            }
        }
        causes
    }

    /// Upstream checks only what may not change on update.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        if new.get("nodeTopology") != old.get("nodeTopology") {
            causes.push(immutable("nodeTopology", new.get("nodeTopology")));
        }
        let class = |o: &Value| {
            o["storageClassName"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        if class(new) != class(old) {
            causes.push(Cause::invalid(
                "storageClassName",
                quote(&class(new)),
                "field is immutable",
            ));
        }
        causes
    }
}
