//! Dynamic resource allocation: DeviceClasses, ResourceClaims (their state), templates and
//! ResourceSlices (upstream's printers.go for resource.k8s.io).

use serde_json::Value;

use super::zero_values::text;
use super::{age, name, text_column, TableColumn};

const STATE_DOC: &str = "A summary of the current state (allocated, pending, reserved, etc.).";
const NODE_DOC: &str = "NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable.";
const DRIVER_DOC: &str = "Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the vendor of the driver. It should use only lower case characters. This field is immutable.";
const POOL_DOC: &str = "Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by slashes. This field is immutable.";

/// Name and age only: DeviceClasses and ResourceClaimTemplates.
pub(in crate::catalogue) fn name_age_columns() -> Vec<TableColumn> {
    vec![name(), age()]
}

/// upstream's resourceClaimState: deleted, then pending or allocated (and reserved).
fn claim_state(claim: &Value) -> String {
    let mut states = Vec::new();
    let deleted = claim["metadata"]["deletionTimestamp"].is_string();
    if deleted {
        states.push("deleted");
    }
    if claim["status"]["allocation"].is_null() {
        if !deleted {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if claim["status"]["reservedFor"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
        {
            states.push("reserved");
        }
    }
    states.join(",")
}

pub(in crate::catalogue) fn resourceclaim_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("State", STATE_DOC, |c| Value::String(claim_state(c))),
        age(),
    ]
}

pub(in crate::catalogue) fn resourceslice_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Node", NODE_DOC, |s| {
            Value::String(text(s, &["spec", "nodeName"]).to_string())
        }),
        text_column("Driver", DRIVER_DOC, |s| {
            Value::String(text(s, &["spec", "driver"]).to_string())
        }),
        text_column("Pool", POOL_DOC, |s| {
            Value::String(text(s, &["spec", "pool", "name"]).to_string())
        }),
        age(),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn claim_states_as_upstream_summarises_them() {
        assert_eq!(claim_state(&json!({})), "pending");
        assert_eq!(
            claim_state(&json!({"status": {"allocation": {}, "reservedFor": [{"uid": "1"}]}})),
            "allocated,reserved"
        );
        assert_eq!(
            claim_state(&json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})),
            "deleted"
        );
    }
}
