//! Validation of status writes (upstream's Validate*StatusUpdate): counts are never negative,
//! the parts never exceed the whole, and collisionCount never goes down.

use serde_json::Value;

use super::template::{int_at, nonnegative};
use crate::error::Cause;
use crate::strategy::at;

/// `status.<field>` for each of `fields` must be non-negative.
pub(super) fn nonnegative_counts(obj: &Value, fields: &[&str]) -> Vec<Cause> {
    let mut causes = Vec::new();
    for field in fields {
        nonnegative(obj, &["status", field], &mut causes);
    }
    causes
}

/// `status.<part>` may not exceed `status.<whole>`.
pub(super) fn at_most(obj: &Value, part: &str, whole: &str, causes: &mut Vec<Cause>) {
    let value = int_at(obj, &["status", part]);
    if value > int_at(obj, &["status", whole]) {
        causes.push(Cause::invalid(
            &format!("status.{part}"),
            value,
            &format!("cannot be greater than status.{whole}"),
        ));
    }
}

/// collisionCount only grows (it feeds the hash of new revisions' names).
pub(super) fn collision_count_kept(new: &Value, old: &Value, causes: &mut Vec<Cause>) {
    let count = |obj: &Value| at(obj, &["status", "collisionCount"]).and_then(Value::as_i64);
    if let Some(before) = count(old) {
        let now = count(new);
        if now.is_none_or(|n| n < before) {
            causes.push(Cause::invalid(
                "status.collisionCount",
                now.unwrap_or(0),
                "cannot be decremented",
            ));
        }
    }
}

/// Deployments and ReplicaSets alike: replicas, ready and available.
pub(super) fn replica_counts(new: &Value, extra: &[&str]) -> Vec<Cause> {
    let mut fields = vec![
        "observedGeneration",
        "replicas",
        "readyReplicas",
        "availableReplicas",
    ];
    fields.extend_from_slice(extra);
    let mut causes = nonnegative_counts(new, &fields);
    for part in extra
        .iter()
        .chain(["readyReplicas", "availableReplicas"].iter())
    {
        if !matches!(*part, "unavailableReplicas" | "collisionCount") {
            at_most(new, part, "replicas", &mut causes);
        }
    }
    let available = int_at(new, &["status", "availableReplicas"]);
    if available > int_at(new, &["status", "readyReplicas"]) {
        causes.push(Cause::invalid(
            "status.availableReplicas",
            available,
            "cannot be greater than readyReplicas",
        ));
    }
    causes
}
