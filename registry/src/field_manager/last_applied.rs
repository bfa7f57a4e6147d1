//! The upgrade from client-side apply (upstream's lastAppliedManager and lastAppliedUpdater):
//! kubectl's server-side apply may take fields from other managers without a conflict when
//! they still hold what kubectl's last client-side apply set (its last-applied annotation),
//! and keeps that annotation in step while it is there. Only the manager `kubectl` does this;
//! any other manager opts out.

use serde_json::Value;
use structured_merge::compare::compare;
use structured_merge::{to_field_set, Conflict, Conflicts};

use super::schema::TypedSchema;
use crate::object;

pub const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

pub enum Upgrade {
    /// Every conflict is a field client-side apply set and nobody changed since: apply by
    /// force.
    Force,
    /// These conflicts stand.
    Refuse(Conflicts),
}

fn annotation(obj: &Value) -> Option<&str> {
    object::meta(obj)?
        .get("annotations")?
        .get(ANNOTATION)?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// Which of `conflicts` the live object's last-applied configuration excuses.
pub fn allowed(typed: &TypedSchema, live: Option<&Value>, conflicts: &Conflicts) -> Upgrade {
    let refuse = || Upgrade::Refuse(conflicts.clone());
    let Some(live) = live else {
        return refuse();
    };
    let Some(Ok(last)) = annotation(live).map(serde_json::from_str::<Value>) else {
        return refuse();
    };
    let mut live_plain = live.clone();
    if let Some(m) = live_plain
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
    {
        m.remove("managedFields");
    }
    let Ok(last_set) = to_field_set(&typed.schema, &typed.root, &last) else {
        return refuse();
    };
    let Ok(comparison) = compare(
        &typed.schema,
        &typed.root,
        &last,
        &live_plain,
        typed.options,
    ) else {
        return refuse();
    };
    let excused = last_set.difference(&comparison.modified);
    let left: Vec<Conflict> = conflicts
        .iter()
        .filter(|c| !excused.has(c.path.elements()))
        .cloned()
        .collect();
    if left.is_empty() {
        Upgrade::Force
    } else {
        Upgrade::Refuse(Conflicts(left))
    }
}

/// Rewrites the last-applied annotation, where the object has one, to the configuration just
/// applied (without the annotation itself), encoded as kubectl encodes it.
pub fn sync_annotation(out: &mut Value, config: &Value) {
    if annotation(out).is_none() {
        return;
    }
    let mut last = config.clone();
    if let Some(meta) = last.get_mut("metadata").and_then(Value::as_object_mut) {
        let now_empty = match meta.get_mut("annotations").and_then(Value::as_object_mut) {
            Some(annotations) => {
                annotations.remove(ANNOTATION);
                annotations.is_empty()
            }
            None => false,
        };
        if now_empty {
            meta.remove("annotations");
        }
    }
    let Ok(mut text) = serde_json::to_string(&last) else {
        return;
    };
    text.push('\n');
    let meta = object::meta_mut(out);
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.insert(ANNOTATION.into(), Value::from(text));
    }
}
