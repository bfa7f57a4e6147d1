//! ControllerRevisions (upstream's pkg/controller/history): the immutable snapshots of a
//! parent's template that StatefulSets and DaemonSets roll between. A revision is named
//! `<parent>-<hash of its data>`, carries the parent's template labels and a revision number,
//! and is controlled by its parent. What is computed without the API lives here; reading and
//! writing revisions through the Store is [`History`].

mod store;

use std::cmp::Ordering;
use std::sync::Arc;

use registry::object;
use serde_json::{json, Map, Value};

pub use store::History;

use client::controller_utils::controller_ref;
use client::controller_utils::hash::{compute_hash, normalize};

/// The label holding the hash of a revision's data.
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// Longest parent name kept in a revision name, so `<prefix>-<hash>` fits in 253 characters.
const MAX_NAME_PREFIX: usize = 223;

/// `<prefix>-<hash>`, the prefix cut to leave room for the hash.
pub fn revision_name(prefix: &str, hash: &str) -> String {
    let cut = prefix
        .char_indices()
        .map(|(i, _)| i)
        .chain([prefix.len()])
        .take_while(|i| *i <= MAX_NAME_PREFIX)
        .last()
        .unwrap_or(0);
    format!("{}-{hash}", &prefix[..cut])
}

/// The hash of a revision's data, with the parent's collision count when it has one.
pub fn hash_revision(revision: &Value, collision_count: Option<i32>) -> String {
    compute_hash(&revision["data"], collision_count.map(|c| c as u32))
}

/// A revision of `parent` holding `data`: the template's labels plus the hash label, a
/// controller reference to the parent, and the name its hash gives.
pub fn new_revision(
    parent: &Value,
    template_labels: &Value,
    data: Value,
    revision: i64,
    collision_count: Option<i32>,
) -> Value {
    let mut labels: Map<String, Value> = template_labels.as_object().cloned().unwrap_or_default();
    let mut cr = json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "namespace": object::namespace(parent),
            "ownerReferences": [controller_ref(parent)],
        },
        "data": data,
        "revision": revision,
    });
    let hash = hash_revision(&cr, collision_count);
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.into(), json!(hash));
    cr["metadata"]["labels"] = Value::Object(labels);
    cr["metadata"]["name"] = json!(revision_name(object::name(parent), &hash));
    // The parent's annotations ride along (StatefulSets' and DaemonSets' newRevision upstream),
    // so `kubectl rollout history` shows each revision's change-cause. Not hashed.
    if let Some(annotations) = parent["metadata"]["annotations"].as_object() {
        cr["metadata"]["annotations"] = Value::Object(annotations.clone());
    }
    cr
}

/// A revision's number (0 when absent).
pub fn revision_number(revision: &Value) -> i64 {
    revision["revision"].as_i64().unwrap_or(0)
}

/// Lowest revision first, then the older, then by name (upstream's byRevision).
pub fn by_revision(a: &Value, b: &Value) -> Ordering {
    let created = |o: &Value| {
        o["metadata"]["creationTimestamp"]
            .as_str()
            .and_then(object::parse_time)
    };
    revision_number(a)
        .cmp(&revision_number(b))
        .then_with(|| created(a).cmp(&created(b)))
        .then_with(|| object::name(a).cmp(object::name(b)))
}

pub fn sort_revisions(revisions: &mut [Arc<Value>]) {
    revisions.sort_by(|a, b| by_revision(a, b));
}

/// Whether two revisions hold the same data: different hash labels say no at once, otherwise
/// the data decide (compared as a typed decode would, empty fields equal to absent ones).
pub fn equal_revision(a: &Value, b: &Value) -> bool {
    if let (Some(x), Some(y)) = (hash_label(a), hash_label(b)) {
        if x != y {
            return false;
        }
    }
    normalize(&a["data"]) == normalize(&b["data"])
}

fn hash_label(revision: &Value) -> Option<&str> {
    revision["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL].as_str()
}

/// The revisions among `revisions` equal to `needle`, in their order.
pub fn find_equal_revisions(revisions: &[Arc<Value>], needle: &Value) -> Vec<Arc<Value>> {
    revisions
        .iter()
        .filter(|r| equal_revision(r, needle))
        .cloned()
        .collect()
}

/// The number the next revision gets: one past the highest.
pub fn next_revision(revisions: &[Arc<Value>]) -> i64 {
    revisions
        .iter()
        .map(|r| revision_number(r))
        .max()
        .map_or(1, |m| m + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
               "metadata": {"name": "web", "namespace": "ns", "uid": "u1"}})
    }

    fn data(image: &str) -> Value {
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
    }

    #[test]
    fn names_cut_long_prefixes() {
        assert_eq!(revision_name("web", "abc"), "web-abc");
        let long = "x".repeat(300);
        let name = revision_name(&long, "h");
        assert_eq!(name.len(), MAX_NAME_PREFIX + 2);
        assert!(name.ends_with("-h"));
    }

    #[test]
    fn a_new_revision_is_labelled_named_and_owned() {
        let cr = new_revision(&parent(), &json!({"app": "web"}), data("nginx"), 3, Some(0));
        let hash = hash_revision(&cr, Some(0));
        assert_eq!(cr["metadata"]["name"], format!("web-{hash}"));
        assert_eq!(cr["metadata"]["labels"]["app"], "web");
        assert_eq!(
            cr["metadata"]["labels"][CONTROLLER_REVISION_HASH_LABEL],
            hash
        );
        assert_eq!(cr["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(cr["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(revision_number(&cr), 3);
        // The collision count moves the hash, so a colliding name gets another try.
        assert_ne!(hash, hash_revision(&cr, Some(1)));
    }

    #[test]
    fn equality_sorting_and_next_number() {
        let a = new_revision(&parent(), &json!({}), data("nginx"), 1, Some(0));
        let b = new_revision(&parent(), &json!({}), data("nginx:2"), 2, Some(0));
        let a_again = new_revision(&parent(), &json!({}), data("nginx"), 5, Some(0));
        assert!(equal_revision(&a, &a_again));
        assert!(!equal_revision(&a, &b));
        let mut revisions = vec![Arc::new(a_again.clone()), Arc::new(b), Arc::new(a.clone())];
        sort_revisions(&mut revisions);
        let numbers: Vec<i64> = revisions.iter().map(|r| revision_number(r)).collect();
        assert_eq!(numbers, [1, 2, 5]);
        assert_eq!(next_revision(&revisions), 6);
        assert_eq!(next_revision(&[]), 1);
        let equal = find_equal_revisions(&revisions, &a);
        assert_eq!(equal.len(), 2);
        assert_eq!(revision_number(&equal[1]), 5);
    }
}
