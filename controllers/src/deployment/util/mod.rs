//! What the deployment controller computes without touching the API (upstream's
//! pkg/controller/deployment/util): the pod-template hash, revisions and their annotations,
//! conditions, and the replica arithmetic of rolling updates and proportional scaling.

pub mod conditions;
pub mod hash;
pub mod replicas;
pub mod revision;
pub mod scaling;

use std::cmp::Ordering;

use registry::object;
use serde_json::{json, Value};

/// The label a deployment adds to its ReplicaSets' selectors and templates.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
pub const REVISION: &str = "deployment.kubernetes.io/revision";
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// extensions/v1beta1's rollbackTo, kept as an annotation by upstream's conversion.
pub const ROLLBACK_TO: &str = "deprecated.deployment.rollback.to";
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn int_at(obj: &Value, path: &[&str]) -> Option<i32> {
    let mut cur = obj;
    for key in path {
        cur = cur.get(key)?;
    }
    cur.as_i64()
        .map(|v| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
}

/// `spec.replicas` of a deployment or ReplicaSet (apps/v1 defaults it to 1).
pub fn spec_replicas(obj: &Value) -> i32 {
    int_at(obj, &["spec", "replicas"]).unwrap_or(1)
}

/// A count in `status` (absent is zero, as upstream omits zero counts).
pub fn status_count(obj: &Value, field: &str) -> i32 {
    int_at(obj, &["status", field]).unwrap_or(0)
}

pub fn set_spec_replicas(obj: &mut Value, replicas: i32) {
    obj["spec"]["replicas"] = json!(replicas);
}

pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj["metadata"]["annotations"][key].as_str()
}

pub fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    let meta = object::meta_mut(obj);
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[key] = json!(value);
}

/// The revision of a ReplicaSet or deployment (0 when absent or malformed).
pub fn revision(obj: &Value) -> i64 {
    annotation(obj, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

pub fn is_active(rs: &Value) -> bool {
    spec_replicas(rs) > 0
}

/// Oldest first; ties by name (upstream's ReplicaSetsByCreationTimestamp).
pub fn by_creation(a: &Value, b: &Value) -> Ordering {
    let created = |o: &Value| {
        o["metadata"]["creationTimestamp"]
            .as_str()
            .and_then(object::parse_time)
    };
    created(a)
        .cmp(&created(b))
        .then_with(|| object::name(a).cmp(object::name(b)))
}

/// Largest first; among equals the newer first (scaling up favours the newest).
pub fn by_size_newer(a: &Value, b: &Value) -> Ordering {
    spec_replicas(b)
        .cmp(&spec_replicas(a))
        .then_with(|| by_creation(b, a))
}

/// Largest first; among equals the older first (scaling down takes from the oldest).
pub fn by_size_older(a: &Value, b: &Value) -> Ordering {
    spec_replicas(b)
        .cmp(&spec_replicas(a))
        .then_with(|| by_creation(a, b))
}

/// Lowest revision first; ties by age.
pub fn by_revision(a: &Value, b: &Value) -> Ordering {
    revision(a)
        .cmp(&revision(b))
        .then_with(|| by_creation(a, b))
}

/// Sum of `spec.replicas`.
pub fn total_replicas<'a>(rss: impl IntoIterator<Item = &'a Value>) -> i32 {
    rss.into_iter().map(spec_replicas).sum()
}

/// Sum of a status count.
pub fn total_status<'a>(rss: impl IntoIterator<Item = &'a Value>, field: &str) -> i32 {
    rss.into_iter().map(|rs| status_count(rs, field)).sum()
}
