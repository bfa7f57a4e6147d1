//! The set's current and update revisions (upstream's getStatefulSetRevisions, getPatch and
//! ApplyRevision): a revision holds a strategic merge patch replacing the pod template, so
//! `kubectl rollout undo` can apply it to the set; the revision of the set's template is
//! reused when one with the same data exists (renumbered to the newest for a rollback) and
//! created otherwise.

use std::sync::Arc;

use registry::object;
use serde_json::{json, Value};

use crate::history::{
    equal_revision, find_equal_revisions, new_revision, next_revision, revision_number, History,
};
use client::controller_utils::SyncError;

/// What a revision records of the set: its pod template, replacing the one it is applied to.
pub fn revision_data(set: &Value) -> Value {
    let mut template = set["spec"]["template"].clone();
    if !template.is_object() {
        template = json!({});
    }
    template["$patch"] = json!("replace");
    json!({"spec": {"template": template}})
}

/// The pod template a revision holds.
pub fn revision_template(revision: &Value) -> Value {
    let mut template = revision["data"]["spec"]["template"].clone();
    if let Some(t) = template.as_object_mut() {
        t.remove("$patch");
    }
    template
}

pub struct Revisions {
    pub current: Value,
    pub update: Value,
    pub collision_count: i32,
}

/// Finds or makes the revision of the set's template; the current revision is the one the
/// status names, or the update revision when none is named or it is gone.
pub async fn resolve(
    history: &History,
    set: &Value,
    revisions: &[Arc<Value>],
) -> Result<Revisions, SyncError> {
    let mut collision_count = set["status"]["collisionCount"]
        .as_i64()
        .map_or(0, |c| c.clamp(0, i64::from(i32::MAX)) as i32);
    let candidate = new_revision(
        set,
        &set["spec"]["template"]["metadata"]["labels"],
        revision_data(set),
        next_revision(revisions),
        Some(collision_count),
    );
    let equal = find_equal_revisions(revisions, &candidate);
    let update = match (equal.last(), revisions.last()) {
        (Some(found), Some(latest)) if equal_revision(latest, found) => (**latest).clone(),
        // An older revision's template again (a rollback): it becomes the newest.
        (Some(found), _) => {
            history
                .update_revision(found, revision_number(&candidate))
                .await?
        }
        (None, _) => {
            history
                .create(set, &candidate, &mut collision_count)
                .await?
        }
    };
    let current_name = set["status"]["currentRevision"]
        .as_str()
        .unwrap_or_default();
    let current = revisions
        .iter()
        .find(|r| !current_name.is_empty() && object::name(r) == current_name)
        .map(|r| (**r).clone())
        .unwrap_or_else(|| update.clone());
    Ok(Revisions {
        current,
        update,
        collision_count,
    })
}
