//! Reading `metadata.managedFields` (server-side apply's field ownership) as kubectl shows it.

use serde_json::Value;

use super::{Kubectl, Server};

/// The object `kubectl get <args> -o json --show-managed-fields` prints (kubectl strips
/// managedFields from its output without the flag).
pub fn with_managed_fields(s: &Server, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--show-managed-fields");
    s.json(&all)
}

/// The object's managedFields entries (empty when it has none).
pub fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The entry of `manager` with `operation` (`Apply` or `Update`) for the main resource (no
/// subresource), if any.
pub fn entry(obj: &Value, manager: &str, operation: &str) -> Option<Value> {
    entries(obj).into_iter().find(|e| {
        e["manager"] == manager
            && e["operation"] == operation
            && e.get("subresource").is_none_or(|s| s.is_null() || s == "")
    })
}

/// The names of the managers that have an entry (any operation), in order.
pub fn managers(obj: &Value) -> Vec<String> {
    entries(obj)
        .iter()
        .filter_map(|e| e["manager"].as_str().map(str::to_string))
        .collect()
}

/// Whether the entry's FieldsV1 holds the path, each step a FieldsV1 key (`f:spec`,
/// `k:{"name":"web"}`, `.`).
pub fn owns(entry: &Value, path: &[&str]) -> bool {
    let mut node = &entry["fieldsV1"];
    for step in path {
        match node.get(*step) {
            Some(next) => node = next,
            None => return false,
        }
    }
    true
}

/// The FieldsV1 node at the path in the entry (`Null` when it is absent).
pub fn fields_at<'a>(entry: &'a Value, path: &[&str]) -> &'a Value {
    let mut node = &entry["fieldsV1"];
    for step in path {
        node = &node[*step];
    }
    node
}

/// The managers whose entries own the path, as `manager/operation`.
pub fn owners(obj: &Value, path: &[&str]) -> Vec<String> {
    entries(obj)
        .iter()
        .filter(|e| owns(e, path))
        .map(|e| {
            format!(
                "{}/{}",
                e["manager"].as_str().unwrap_or_default(),
                e["operation"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// Every entry is well formed as upstream writes them: manager, operation, apiVersion,
/// fieldsType FieldsV1 and a fieldsV1 object, and a time in UTC when it has one (upstream
/// leaves it out of an entry whose write changed nothing, such as kubectl-last-applied's).
pub fn assert_well_formed(obj: &Value) {
    let entries = entries(obj);
    assert!(!entries.is_empty(), "no managedFields: {obj}");
    for e in &entries {
        assert!(e["manager"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
        assert!(
            matches!(e["operation"].as_str(), Some("Apply" | "Update")),
            "{e}"
        );
        assert!(
            e["apiVersion"].as_str().is_some_and(|v| !v.is_empty()),
            "{e}"
        );
        assert!(
            e.get("time")
                .is_none_or(|t| t.as_str().is_some_and(|t| t.ends_with('Z'))),
            "{e}"
        );
        assert_eq!(e["fieldsType"], "FieldsV1", "{e}");
        assert!(e["fieldsV1"].is_object(), "{e}");
    }
}

/// The entry records when its manager last changed the object (RFC 3339, UTC).
pub fn assert_timed(entry: &Value) {
    let time = entry["time"].as_str().unwrap_or_default();
    assert!(
        time.len() == 20 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
        "{entry}"
    );
}
