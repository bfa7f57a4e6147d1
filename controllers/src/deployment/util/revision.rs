//! Revisions: each new template gets the next revision number on its ReplicaSet (and the
//! deployment); a ReplicaSet brought back by a rollback gets a new number and remembers its
//! old ones in revision-history. The deployment's own annotations are copied to the new
//! ReplicaSet, but never the ones that describe a particular ReplicaSet.

use serde_json::{json, Value};

use super::replicas::max_surge;
use super::replicas::set_replicas_annotations;
use super::{
    annotation, revision, set_annotation, spec_replicas, DESIRED_REPLICAS, LAST_APPLIED,
    MAX_REPLICAS, REVISION, REVISION_HISTORY, ROLLBACK_TO,
};

/// Longest revision-history kept (kube-controller-manager's default).
pub const MAX_REVISION_HISTORY_CHARS: usize = 2000;

/// Annotations that belong to one ReplicaSet (or to kubectl), never copied between a
/// deployment and its ReplicaSets.
pub fn skip_copy(key: &str) -> bool {
    [
        LAST_APPLIED,
        REVISION,
        REVISION_HISTORY,
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        ROLLBACK_TO,
    ]
    .contains(&key)
}

pub fn max_revision<'a>(rss: impl IntoIterator<Item = &'a Value>) -> i64 {
    rss.into_iter().map(revision).max().unwrap_or(0)
}

/// The revision before the newest (upstream's LastRevision), 0 if there is none.
pub fn last_revision(rss: &[Value]) -> i64 {
    let (mut max, mut second) = (0, 0);
    for v in rss.iter().map(revision) {
        if v >= max {
            second = max;
            max = v;
        } else if v > second {
            second = v;
        }
    }
    second
}

fn annotations(obj: &Value) -> impl Iterator<Item = (&String, &str)> {
    obj["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k, v)))
}

/// Copies the deployment's annotations onto the ReplicaSet; true if any changed.
pub fn copy_deployment_annotations(d: &Value, rs: &mut Value) -> bool {
    let mut changed = false;
    for (k, v) in annotations(d) {
        if skip_copy(k) || annotation(rs, k) == Some(v) {
            continue;
        }
        set_annotation(rs, k, v);
        changed = true;
    }
    changed
}

/// Gives the new ReplicaSet the deployment's annotations and `new_revision` (if it is higher
/// than what it has, keeping the old number in revision-history within `max_chars`), and a
/// ReplicaSet about to be created its replica annotations; true if anything changed
/// (upstream's SetNewReplicaSetAnnotations).
pub fn set_new_rs_annotations(
    d: &Value,
    rs: &mut Value,
    new_revision: i64,
    exists: bool,
    max_chars: usize,
) -> bool {
    let mut changed = copy_deployment_annotations(d, rs);
    let old = annotation(rs, REVISION).map(str::to_string);
    let old_revision = match old.as_deref() {
        None | Some("") => 0,
        Some(text) => match text.parse::<i64>() {
            Ok(v) => v,
            Err(_) => return changed,
        },
    };
    if old_revision < new_revision {
        set_annotation(rs, REVISION, &new_revision.to_string());
        changed = true;
        if let Some(old) = old.filter(|o| !o.is_empty()) {
            push_history(rs, &old, max_chars);
        }
    }
    if !exists {
        let replicas = spec_replicas(d);
        changed |= set_replicas_annotations(rs, replicas, replicas + max_surge(d));
    }
    changed
}

/// Appends `old` to the revision-history, dropping the oldest entries to stay within
/// `max_chars`.
fn push_history(rs: &mut Value, old: &str, max_chars: usize) {
    let history = annotation(rs, REVISION_HISTORY)
        .unwrap_or_default()
        .to_string();
    if history.is_empty() {
        set_annotation(rs, REVISION_HISTORY, old);
        return;
    }
    let mut entries: Vec<&str> = history.split(',').collect();
    let mut total = history.len() + old.len() + 1;
    let mut start = 0;
    while total > max_chars && start < entries.len() {
        total -= entries[start].len() + 1;
        start += 1;
    }
    if total <= max_chars {
        entries.drain(..start);
        entries.push(old);
        set_annotation(rs, REVISION_HISTORY, &entries.join(","));
    }
}

/// The deployment's annotations after a rollback to `rs`: its own skipped ones kept, the rest
/// taken from the ReplicaSet (upstream's SetDeploymentAnnotationsTo).
pub fn annotations_for_rollback(d: &Value, rs: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for (k, v) in annotations(d) {
        if skip_copy(k) {
            out.insert(k.clone(), json!(v));
        }
    }
    for (k, v) in annotations(rs) {
        if !skip_copy(k) {
            out.insert(k.clone(), json!(v));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_replica_sets_get_the_next_revision_and_size_annotations() {
        let d = json!({"metadata": {"annotations": {"team": "a", LAST_APPLIED: "{}", REVISION: "1"}},
            "spec": {"replicas": 4, "strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}});
        let mut rs = json!({"metadata": {}});
        assert!(set_new_rs_annotations(
            &d,
            &mut rs,
            2,
            false,
            MAX_REVISION_HISTORY_CHARS
        ));
        let a = &rs["metadata"]["annotations"];
        assert_eq!(a["team"], "a");
        assert_eq!(a[REVISION], "2");
        assert_eq!(a[DESIRED_REPLICAS], "4");
        assert_eq!(a[MAX_REPLICAS], "5");
        assert!(a.get(LAST_APPLIED).is_none());
        assert!(a.get(REVISION_HISTORY).is_none());
        assert!(!set_new_rs_annotations(
            &d,
            &mut rs,
            2,
            true,
            MAX_REVISION_HISTORY_CHARS
        ));
    }

    #[test]
    fn a_reused_replica_set_keeps_its_old_revisions() {
        let d = json!({"spec": {"replicas": 1}});
        let mut rs = json!({"metadata": {"annotations": {REVISION: "1"}}});
        assert!(set_new_rs_annotations(
            &d,
            &mut rs,
            3,
            true,
            MAX_REVISION_HISTORY_CHARS
        ));
        assert_eq!(annotation(&rs, REVISION), Some("3"));
        assert_eq!(annotation(&rs, REVISION_HISTORY), Some("1"));
        set_new_rs_annotations(&d, &mut rs, 5, true, MAX_REVISION_HISTORY_CHARS);
        assert_eq!(annotation(&rs, REVISION_HISTORY), Some("1,3"));
        // A lower revision never replaces a higher one.
        assert!(!set_new_rs_annotations(
            &d,
            &mut rs,
            4,
            true,
            MAX_REVISION_HISTORY_CHARS
        ));
        // The history is trimmed from the oldest end.
        set_new_rs_annotations(&d, &mut rs, 6, true, 4);
        assert_eq!(annotation(&rs, REVISION_HISTORY), Some("3,5"));
    }

    #[test]
    fn last_revision_is_the_one_before_the_newest() {
        let rs = |r: &str| json!({"metadata": {"annotations": {REVISION: r}}});
        assert_eq!(last_revision(&[rs("3"), rs("1"), rs("2")]), 2);
        assert_eq!(last_revision(&[rs("1")]), 0);
        assert_eq!(max_revision(&[rs("3"), rs("7")]), 7);
    }
}
