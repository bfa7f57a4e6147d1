//! Object keys as client-go's MetaNamespaceKeyFunc makes them: `namespace/name`, or `name` for
//! cluster-scoped objects.

use serde_json::Value;
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("object has no metadata.name to key it by")]
pub struct KeyError;

/// The key of an object.
pub fn object_key(obj: &Value) -> Result<String, KeyError> {
    let meta = &obj["metadata"];
    let name = meta["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or(KeyError)?;
    Ok(match meta["namespace"].as_str().filter(|n| !n.is_empty()) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    })
}

/// The namespace (if any) and name a key was made from.
pub fn split_key(key: &str) -> (Option<&str>, &str) {
    match key.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, key),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_of_namespaced_and_cluster_objects() {
        let pod = json!({"metadata": {"namespace": "ns", "name": "web"}});
        assert_eq!(object_key(&pod), Ok("ns/web".to_string()));
        let node = json!({"metadata": {"name": "n1", "namespace": ""}});
        assert_eq!(object_key(&node), Ok("n1".to_string()));
        assert_eq!(object_key(&json!({"metadata": {}})), Err(KeyError));
        assert_eq!(split_key("ns/web"), (Some("ns"), "web"));
        assert_eq!(split_key("n1"), (None, "n1"));
    }
}
