//! Whether a ReplicaSet's template is a deployment's (the hash itself is shared with the
//! other workload controllers in `controller_utils::hash`).

use serde_json::Value;

pub use client::controller_utils::hash::compute_hash;
use client::controller_utils::hash::normalize;

use super::POD_TEMPLATE_HASH;

/// Whether two pod templates are the same but for the pod-template-hash label (upstream's
/// EqualIgnoreHash), so a deployment recognises the ReplicaSet of its template.
pub fn equal_ignore_hash(a: &Value, b: &Value) -> bool {
    let strip = |t: &Value| {
        let mut t = t.clone();
        if let Some(labels) = t
            .get_mut("metadata")
            .and_then(|m| m.get_mut("labels"))
            .and_then(Value::as_object_mut)
        {
            labels.remove(POD_TEMPLATE_HASH);
        }
        normalize(&t)
    };
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn equality_ignores_only_the_hash_label() {
        let d = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}});
        let rs = json!({"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}},
                        "spec": {"containers": [{"name": "c"}]}});
        assert!(equal_ignore_hash(&d, &rs));
        let changed = json!({"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"},
                                          "annotations": {"restartedAt": "now"}},
                             "spec": {"containers": [{"name": "c"}]}});
        assert!(!equal_ignore_hash(&d, &changed));
    }
}
