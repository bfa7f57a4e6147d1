//! persistentVolumeClaimRetentionPolicy (upstream's updateClaimOwnerRefForSetAndPod): which
//! owners a claim names so the garbage collector deletes it with the set (whenDeleted:
//! Delete) or with its scaled-down pod (whenScaled: Delete), and names none to be retained.

use registry::object;
use serde_json::{json, Value};

use super::identity::{in_range, ordinal};

fn policy<'a>(set: &'a Value, when: &str) -> &'a str {
    set["spec"]["persistentVolumeClaimRetentionPolicy"][when]
        .as_str()
        .unwrap_or("Retain")
}

/// A plain (not controller) reference to `owner`, as upstream puts on claims.
fn reference(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": object::name(owner),
        "uid": object::uid(owner),
    })
}

fn with(mut refs: Vec<Value>, owner: &Value, api_version: &str, kind: &str) -> Vec<Value> {
    let uid = object::uid(owner);
    if !uid.is_empty() && !refs.iter().any(|r| r["uid"].as_str() == Some(uid)) {
        refs.push(reference(owner, api_version, kind));
    }
    refs
}

fn without(mut refs: Vec<Value>, owner: &Value) -> Vec<Value> {
    let uid = object::uid(owner);
    refs.retain(|r| uid.is_empty() || r["uid"].as_str() != Some(uid));
    refs
}

/// The owner references a claim of `pod` should have, from its `current` ones: the set's
/// and the pod's added or removed as the policy and the pod's place in the set say; other
/// owners are left alone.
pub fn desired_claim_references(set: &Value, pod: &Value, current: &[Value]) -> Vec<Value> {
    let delete_with_set = policy(set, "whenDeleted") == "Delete";
    let delete_when_scaled = policy(set, "whenScaled") == "Delete";
    let scaled_down = ordinal(pod).is_some_and(|o| !in_range(set, o));
    let refs = current.to_vec();
    let (set_ref, pod_ref) = match (delete_when_scaled, delete_with_set) {
        (false, false) => (false, false),
        (false, true) => (true, false),
        (true, false) => (false, scaled_down),
        // A scaled-down pod's claim goes with the pod, not with the set.
        (true, true) => (!scaled_down, scaled_down),
    };
    let refs = if set_ref {
        with(refs, set, "apps/v1", "StatefulSet")
    } else {
        without(refs, set)
    };
    if pod_ref {
        with(refs, pod, "v1", "Pod")
    } else {
        without(refs, pod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(when_deleted: &str, when_scaled: &str) -> Value {
        json!({"metadata": {"name": "web", "uid": "set-uid"},
               "spec": {"replicas": 2, "persistentVolumeClaimRetentionPolicy":
                        {"whenDeleted": when_deleted, "whenScaled": when_scaled}}})
    }

    fn pod(ordinal: i64) -> Value {
        json!({"metadata": {"name": format!("web-{ordinal}"), "uid": format!("pod-{ordinal}")}})
    }

    fn uids(refs: &[Value]) -> Vec<&str> {
        refs.iter().filter_map(|r| r["uid"].as_str()).collect()
    }

    #[test]
    fn owners_follow_the_policy() {
        let other = json!({"uid": "someone"});
        let both = [
            other.clone(),
            json!({"uid": "set-uid"}),
            json!({"uid": "pod-1"}),
        ];
        let s = set("Retain", "Retain");
        assert_eq!(
            uids(&desired_claim_references(&s, &pod(1), &both)),
            ["someone"]
        );
        let s = set("Delete", "Retain");
        assert_eq!(
            uids(&desired_claim_references(&s, &pod(1), &[])),
            ["set-uid"]
        );
        let s = set("Retain", "Delete");
        assert!(desired_claim_references(&s, &pod(1), &[]).is_empty());
        assert_eq!(uids(&desired_claim_references(&s, &pod(2), &[])), ["pod-2"]);
        let s = set("Delete", "Delete");
        assert_eq!(
            uids(&desired_claim_references(&s, &pod(0), &[])),
            ["set-uid"]
        );
        let scaled = desired_claim_references(&s, &pod(3), &[json!({"uid": "set-uid"})]);
        assert_eq!(uids(&scaled), ["pod-3"]);
        assert_eq!(scaled[0]["kind"], "Pod");
    }
}
