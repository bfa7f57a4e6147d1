//! The status conditions of a deleting namespace (upstream's namespace condition updater).
//! Each of the five types is True, with a reason and a message naming the problem, while the
//! problem exists, and False with its "all is well" reason and message otherwise. Clients and
//! people read these strings (`kubectl describe namespace`), so they are upstream's exactly.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

pub const DISCOVERY_FAILURE: &str = "NamespaceDeletionDiscoveryFailure";
pub const GROUP_VERSION_PARSING_FAILURE: &str = "NamespaceDeletionGroupVersionParsingFailure";
pub const CONTENT_FAILURE: &str = "NamespaceDeletionContentFailure";
pub const CONTENT_REMAINING: &str = "NamespaceContentRemaining";
pub const FINALIZERS_REMAINING: &str = "NamespaceFinalizersRemaining";

/// The types this controller owns, in the order they are added to the status, with the
/// reason and message of their False state.
const OWNED: [(&str, &str, &str); 5] = [
    (
        DISCOVERY_FAILURE,
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        GROUP_VERSION_PARSING_FAILURE,
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        CONTENT_FAILURE,
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        CONTENT_REMAINING,
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        FINALIZERS_REMAINING,
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

/// One NamespaceCondition, without its transition time (that is decided when it is applied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub kind: &'static str,
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

fn problem(kind: &'static str, reason: &'static str, message: String) -> Condition {
    Condition {
        kind,
        status: "True",
        reason,
        message,
    }
}

fn all_well(kind: &'static str) -> Condition {
    let (kind, reason, message) = OWNED
        .iter()
        .find(|(k, _, _)| *k == kind)
        .copied()
        .unwrap_or((kind, "", ""));
    Condition {
        kind,
        status: "False",
        reason,
        message: message.to_string(),
    }
}

/// Resources whose content could not be deleted, one error message each.
pub fn content_failure(errors: &[String]) -> Option<Condition> {
    if errors.is_empty() {
        return None;
    }
    let mut messages = errors.to_vec();
    messages.sort();
    Some(problem(
        CONTENT_FAILURE,
        "ContentDeletionFailed",
        format!(
            "Failed to delete all resource types, {} remaining: {}",
            errors.len(),
            messages.join(", ")
        ),
    ))
}

/// Objects left, by `<resource>.<group>` (`pods.` for core resources, as upstream prints it).
pub fn content_remaining(by_resource: &BTreeMap<String, usize>) -> Option<Condition> {
    let parts = counted(by_resource, |resource, n| {
        format!("{resource} has {n} resource instances")
    })?;
    Some(problem(
        CONTENT_REMAINING,
        "SomeResourcesRemain",
        format!("Some resources are remaining: {parts}"),
    ))
}

/// Objects left, by the finalizers that hold them.
pub fn finalizers_remaining(by_finalizer: &BTreeMap<String, usize>) -> Option<Condition> {
    let parts = counted(by_finalizer, |finalizer, n| {
        format!("{finalizer} in {n} resource instances")
    })?;
    Some(problem(
        FINALIZERS_REMAINING,
        "SomeFinalizersRemain",
        format!("Some content in the namespace has finalizers remaining: {parts}"),
    ))
}

/// The non-zero counts as sorted phrases, so the message (and so the status) only changes when
/// the counts do.
fn counted(
    counts: &BTreeMap<String, usize>,
    phrase: impl Fn(&str, usize) -> String,
) -> Option<String> {
    let mut parts: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(name, n)| phrase(name, *n))
        .collect();
    if parts.is_empty() {
        return None;
    }
    parts.sort();
    Some(parts.join(", "))
}

/// Brings the owned conditions of `namespace`'s status to `problems` (owned types not among
/// them become False). Other conditions are left alone; an existing condition keeps its
/// transition time unless its status flips. Says whether anything changed.
pub fn apply(namespace: &mut Value, problems: &[Condition], now: &str) -> bool {
    let Some(conditions) = conditions_mut(namespace) else {
        return false;
    };
    let mut changed = false;
    for (kind, _, _) in OWNED {
        let wanted = problems
            .iter()
            .find(|c| c.kind == kind)
            .cloned()
            .unwrap_or_else(|| all_well(kind));
        let existing = conditions
            .iter_mut()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(kind));
        let Some(old) = existing.and_then(Value::as_object_mut) else {
            conditions.push(json!({
                "type": kind,
                "status": wanted.status,
                "lastTransitionTime": now,
                "reason": wanted.reason,
                "message": wanted.message,
            }));
            changed = true;
            continue;
        };
        let field = |old: &Map<String, Value>, name: &str| {
            old.get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let flipped = field(old, "status") != wanted.status;
        if !flipped
            && field(old, "reason") == wanted.reason
            && field(old, "message") == wanted.message
        {
            continue;
        }
        if flipped {
            old.insert("lastTransitionTime".into(), json!(now));
        }
        old.insert("status".into(), json!(wanted.status));
        old.insert("reason".into(), json!(wanted.reason));
        old.insert("message".into(), json!(wanted.message));
        changed = true;
    }
    changed
}

/// `status.conditions`, made an array if absent; None if the namespace is not an object.
fn conditions_mut(namespace: &mut Value) -> Option<&mut Vec<Value>> {
    let status = namespace
        .as_object_mut()?
        .entry("status")
        .or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status
        .as_object_mut()?
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    conditions.as_array_mut()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
        pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    }

    fn condition<'a>(ns: &'a Value, kind: &str) -> &'a Value {
        ns["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == kind))
            .unwrap_or(&Value::Null)
    }

    #[test]
    fn messages_are_upstreams_and_sorted() {
        let remaining = content_remaining(&counts(&[
            ("pods.", 2),
            ("configmaps.", 1),
            ("deployments.apps", 0),
        ]));
        assert_eq!(
            remaining.map(|c| (c.status, c.reason, c.message)),
            Some((
                "True",
                "SomeResourcesRemain",
                "Some resources are remaining: configmaps. has 1 resource instances, pods. has 2 resource instances".to_string()
            ))
        );
        let held = finalizers_remaining(&counts(&[("example.com/hold", 1)]));
        assert_eq!(
            held.map(|c| (c.reason, c.message)),
            Some((
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances".to_string()
            ))
        );
        let failed = content_failure(&["b went wrong".into(), "a went wrong".into()]);
        assert_eq!(
            failed.map(|c| (c.reason, c.message)),
            Some((
                "ContentDeletionFailed",
                "Failed to delete all resource types, 2 remaining: a went wrong, b went wrong"
                    .to_string()
            ))
        );
        assert_eq!(content_remaining(&counts(&[("pods.", 0)])), None);
        assert_eq!(finalizers_remaining(&BTreeMap::new()), None);
        assert_eq!(content_failure(&[]), None);
    }

    #[test]
    fn apply_adds_all_owned_types_as_false_then_only_changes_what_differs() {
        let mut ns = json!({"metadata": {"name": "ns"}, "status": {"phase": "Terminating",
            "conditions": [{"type": "Other", "status": "True"}]}});
        assert!(apply(&mut ns, &[], "2024-01-01T00:00:00Z"));
        let conditions = ns["status"]["conditions"].as_array().cloned();
        assert_eq!(conditions.map(|c| c.len()), Some(6));
        assert_eq!(condition(&ns, "Other")["status"], "True");
        let finalizers = condition(&ns, FINALIZERS_REMAINING);
        assert_eq!(finalizers["status"], "False");
        assert_eq!(finalizers["reason"], "ContentHasNoFinalizers");
        assert_eq!(
            condition(&ns, GROUP_VERSION_PARSING_FAILURE)["reason"],
            "ParsedGroupVersions"
        );
        // The same again changes nothing.
        assert!(!apply(&mut ns, &[], "2024-01-01T00:00:09Z"));

        // A problem flips its condition and stamps the time.
        let remaining = content_remaining(&counts(&[("pods.", 2)]))
            .into_iter()
            .collect::<Vec<_>>();
        assert!(apply(&mut ns, &remaining, "2024-01-01T00:00:10Z"));
        let c = condition(&ns, CONTENT_REMAINING);
        assert_eq!(
            (&c["status"], &c["reason"], &c["lastTransitionTime"]),
            (
                &json!("True"),
                &json!("SomeResourcesRemain"),
                &json!("2024-01-01T00:00:10Z")
            )
        );
        // A new message with the same status keeps the transition time.
        let fewer = content_remaining(&counts(&[("pods.", 1)]))
            .into_iter()
            .collect::<Vec<_>>();
        assert!(apply(&mut ns, &fewer, "2024-01-01T00:00:20Z"));
        let c = condition(&ns, CONTENT_REMAINING);
        assert_eq!(
            c["message"],
            "Some resources are remaining: pods. has 1 resource instances"
        );
        assert_eq!(c["lastTransitionTime"], "2024-01-01T00:00:10Z");
        // Gone: back to False, with a new time.
        assert!(apply(&mut ns, &[], "2024-01-01T00:00:30Z"));
        let c = condition(&ns, CONTENT_REMAINING);
        assert_eq!(
            (&c["status"], &c["reason"], &c["lastTransitionTime"]),
            (
                &json!("False"),
                &json!("ContentRemoved"),
                &json!("2024-01-01T00:00:30Z")
            )
        );
    }

    #[test]
    fn apply_repairs_a_malformed_status() {
        let mut ns = json!({"metadata": {"name": "ns"}, "status": "odd"});
        assert!(apply(&mut ns, &[], "2024-01-01T00:00:00Z"));
        assert_eq!(ns["status"]["conditions"].as_array().map(Vec::len), Some(5));
        assert!(!apply(&mut json!("not an object"), &[], "now"));
    }
}
