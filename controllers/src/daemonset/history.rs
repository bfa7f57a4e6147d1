//! A DaemonSet's ControllerRevisions (upstream's constructHistory, snapshot and
//! cleanupHistory in daemon/update.go), through the shared `history` module: one revision per
//! template the DaemonSet has had, holding the strategic merge patch that restores it (what
//! `kubectl rollout undo daemonset` applies); the current one is numbered highest and its
//! hash labels the pods made from it.

use std::collections::HashSet;
use std::sync::Arc;

use registry::options::WriteOptions;
use registry::{object, Subresource};
use serde_json::{json, Value};

use super::controller::{selector, DaemonSetController};
use super::placement::CONTROLLER_REVISION_HASH;
use super::status::NodePods;
use crate::history::{
    new_revision, next_revision, revision_number, CONTROLLER_REVISION_HASH_LABEL,
};
use client::controller_utils::SyncError;

/// The patch a revision holds: the whole template, replacing whatever the DaemonSet has.
fn revision_data(ds: &Value) -> Value {
    let mut template = ds["spec"]["template"].clone();
    if let Some(t) = template.as_object_mut() {
        t.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": template}})
}

/// Whether `revision` holds the DaemonSet's current template.
fn matches(ds: &Value, revision: &Value) -> bool {
    use client::controller_utils::hash::normalize;
    normalize(&revision["data"]) == normalize(&revision_data(ds))
}

/// The hash naming a revision's pods: its own label, else the shared history label.
fn revision_hash(revision: &Value) -> Option<&str> {
    let labels = &revision["metadata"]["labels"];
    labels[CONTROLLER_REVISION_HASH]
        .as_str()
        .or_else(|| labels[CONTROLLER_REVISION_HASH_LABEL].as_str())
}

impl DaemonSetController {
    /// The current revision's hash and the old revisions (sorted by revision), making the
    /// current one if the template is new and renumbering it if an undo brought it back.
    pub(super) async fn construct_history(
        &self,
        ds: &mut Value,
    ) -> Result<(String, Vec<Arc<Value>>), SyncError> {
        let sel = selector(ds).unwrap_or_default();
        let revisions = self.history.list(ds, &sel).await?;
        let mut current = Vec::new();
        let mut old = Vec::new();
        for revision in revisions {
            let revision = self.ensure_hash_label(revision).await?;
            if matches(ds, &revision) {
                current.push(revision);
            } else {
                old.push(revision);
            }
        }
        let next = next_revision(&old);
        // Duplicates of the current template (made by a racing sync): the newest stays.
        current.sort_by_key(|r| revision_number(r));
        let keep = current.pop();
        for duplicate in current {
            self.history.delete(&duplicate).await?;
        }
        let current = match keep {
            Some(current) => current,
            None => Arc::new(self.snapshot(ds, next).await?),
        };
        let current = if revision_number(&current) < next {
            Arc::new(self.history.update_revision(&current, next).await?)
        } else {
            current
        };
        let hash = revision_hash(&current).unwrap_or_default().to_string();
        Ok((hash, old))
    }

    /// Creates the revision of the DaemonSet's template; a name collision raises
    /// status.collisionCount, as upstream.
    async fn snapshot(&self, ds: &mut Value, number: i64) -> Result<Value, SyncError> {
        let initial = ds["status"]["collisionCount"].as_i64().unwrap_or(0) as i32;
        let revision = new_revision(
            ds,
            &ds["spec"]["template"]["metadata"]["labels"],
            revision_data(ds),
            number,
            Some(initial),
        );
        let mut count = initial;
        let created = self.history.create(ds, &revision, &mut count).await?;
        if count != initial {
            let mut next = ds.clone();
            next["status"]["collisionCount"] = json!(count);
            let (updated, _) = self
                .ds_store
                .update(
                    Some(object::namespace(ds)),
                    object::name(ds),
                    next,
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await?;
            *ds = updated;
        }
        let created = self.ensure_hash_label(Arc::new(created)).await?;
        Ok((*created).clone())
    }

    /// Gives a revision the `controller-revision-hash` label its pods carry: the hash its
    /// name ends with.
    async fn ensure_hash_label(&self, revision: Arc<Value>) -> Result<Arc<Value>, SyncError> {
        let name = object::name(&revision);
        let Some(hash) = name.rsplit('-').next().filter(|h| !h.is_empty()) else {
            return Ok(revision);
        };
        if revision["metadata"]["labels"][CONTROLLER_REVISION_HASH].as_str() == Some(hash) {
            return Ok(revision);
        }
        let mut next = (*revision).clone();
        if !next["metadata"]["labels"].is_object() {
            next["metadata"]["labels"] = json!({});
        }
        next["metadata"]["labels"][CONTROLLER_REVISION_HASH] = json!(hash);
        let (updated, _) = self
            .revision_store
            .update(
                Some(object::namespace(&revision)),
                name,
                next,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await?;
        Ok(Arc::new(updated))
    }

    /// Deletes the oldest revisions past spec.revisionHistoryLimit that no pod still runs.
    pub(super) async fn cleanup_history(
        &self,
        ds: &Value,
        node_pods: &NodePods,
        old: Vec<Arc<Value>>,
    ) -> Result<(), SyncError> {
        let limit = ds["spec"]["revisionHistoryLimit"]
            .as_i64()
            .unwrap_or(10)
            .max(0) as usize;
        if old.len() <= limit {
            return Ok(());
        }
        let live_hashes: HashSet<&str> = node_pods
            .values()
            .flatten()
            .filter_map(|p| p["metadata"]["labels"][CONTROLLER_REVISION_HASH].as_str())
            .collect();
        let live: HashSet<String> = old
            .iter()
            .filter(|r| revision_hash(r).is_some_and(|h| live_hashes.contains(h)))
            .map(|r| object::name(r).to_string())
            .collect();
        self.history.truncate(&old, &live, limit).await
    }
}
