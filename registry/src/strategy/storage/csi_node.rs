//! CSINodes: the CSI drivers registered on a node (named as the node), each with its node
//! ID and topology keys, fixed once registered but for the attachable volume count.

use serde_json::Value;

use super::{csi_driver_name, immutable};
use crate::error::Cause;
use crate::strategy::Strategy;
use crate::validation::{is_qualified_name, quote};

const NODE_ID_MAX_LENGTH: usize = 192;

pub struct CSINodeStrategy;

fn drivers(obj: &Value) -> &[Value] {
    obj["spec"]["drivers"].as_array().map_or(&[], Vec::as_slice)
}

impl Strategy for CSINodeStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for (i, driver) in drivers(obj).iter().enumerate() {
            let path = format!("spec.drivers[{i}]");
            let name = driver["name"].as_str().unwrap_or_default();
            causes.extend(csi_driver_name(name, &format!("{path}.name")));
            let node_id = driver["nodeID"].as_str().unwrap_or_default();
            if node_id.is_empty() {
                causes.push(Cause::required(&format!("{path}.nodeID")));
            }
            if node_id.len() > NODE_ID_MAX_LENGTH {
                causes.push(Cause::invalid(
                    &format!("{path}.nodeID"),
                    quote(node_id),
                    &format!("must be {NODE_ID_MAX_LENGTH} characters or less"),
                ));
            }
            if let Some(count) = driver["allocatable"]["count"].as_i64() {
                if count < 0 {
                    causes.push(Cause::invalid(
                        &format!("{path}.allocatable.count"),
                        count,
                        "must be greater than or equal to 0",
                    ));
                }
            }
            if names.contains(&name) {
                causes.push(Cause::duplicate(&format!("{path}.name"), quote(name)));
            }
            names.push(name);
            let mut keys: Vec<&str> = Vec::new();
            for key in driver["topologyKeys"].as_array().into_iter().flatten() {
                let key = key.as_str().unwrap_or_default();
                if key.is_empty() {
                    causes.push(Cause::required(&path));
                }
                if keys.contains(&key) {
                    causes.push(Cause::duplicate(&path, quote(key)));
                }
                keys.push(key);
                for m in is_qualified_name(key) {
                    causes.push(Cause::invalid(&path, quote(key), &m));
                }
            }
        }
        causes
    }

    /// A registered driver stays as it registered, but for its allocatable count (upstream's
    /// MutableCSINodeAllocatableCount, on in 1.35).
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        let without_count = |d: &Value| {
            let mut d = d.clone();
            if let Some(map) = d.as_object_mut() {
                map.remove("allocatable");
            }
            d
        };
        for before in drivers(old) {
            for after in drivers(new).iter().filter(|d| d["name"] == before["name"]) {
                let after = without_count(after);
                if after != without_count(before) {
                    causes.push(immutable("spec.drivers", Some(&after)));
                }
            }
        }
        causes
    }
}
