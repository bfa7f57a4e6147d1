//! One sync of one set (upstream's syncStatefulSet and UpdateStatefulSet): claim its pods and
//! revisions, resolve the current and update revisions, move the pods one step, write the
//! status they give, and drop revisions past the history limit.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use registry::options::{ListOptions, WriteOptions};
use registry::{object, RegistryError, Subresource};
use serde_json::Value;
use tracing::{debug, warn};

use super::controller::{selector, StatefulSetController};
use super::identity::{is_member_of, pod_revision};
use super::revisions::resolve;
use super::status::{min_ready_seconds, SetStatus};
use crate::history::sort_revisions;
use client::controller_utils::{claim, pod_candidates_where, Claimable, SyncError};

impl StatefulSetController {
    /// Syncs the set `key`; Ok(Some(d)) asks to look again after `d`.
    pub(super) async fn sync(&self, key: &str) -> Result<Option<Duration>, SyncError> {
        let Some(set) = self.set_informer.indexer().get(key) else {
            debug!(key, "statefulset has been deleted");
            return Ok(None);
        };
        let Some(selector) = selector(&set).filter(|s| !s.is_empty()) else {
            // Validation refuses these; retrying cannot help.
            warn!(key, "statefulset has an invalid or empty selector");
            return Ok(None);
        };
        if object::deletion_timestamp(&set).is_some() {
            // Left to the garbage collector, as DaemonSets are: a revision or pod made now
            // would only be one more dependent for it to delete, whose deletion would bring
            // us back to make it again.
            return Ok(None);
        }
        let namespace = object::namespace(&set);
        let name = object::name(&set);
        let uid = object::uid(&set);
        // Pods it controls, and orphans whose names make them its members.
        let candidates: Vec<Arc<Value>> =
            pod_candidates_where(self.pod_informer.indexer(), &set, |p| {
                match p.controller_uid() {
                    Some(owner) => owner == uid,
                    None => is_member_of(&set, p.name()),
                }
            })
            .map_err(|e| SyncError::Failed(e.to_string()))?;
        let claimable = Claimable {
            owner: &set,
            store: &self.pod_control.pods,
            selector: &selector,
            fresh_owner: Box::new(|| {
                Box::pin(async move {
                    Ok(self
                        .sets
                        .get(Some(namespace), name, &ListOptions::default())
                        .await?)
                })
            }),
        };
        let pods = claim(&claimable, candidates).await?;
        let mut revisions = self.history.list(&set, &selector).await?;
        let revs = resolve(&self.history, &set, &revisions).await?;
        let mut status = self.update_set(&set, &revs, &pods).await?;
        status.complete_rolling_update(&set);
        if status.differs_from(&set) {
            self.write_status(&set, &status).await?;
        }

        if !revisions
            .iter()
            .any(|r| object::name(r) == object::name(&revs.update))
        {
            revisions.push(Arc::new(revs.update.clone()));
            sort_revisions(&mut revisions);
        }
        let mut live: HashSet<String> = pods.iter().map(|p| pod_revision(p).to_string()).collect();
        live.insert(object::name(&revs.current).to_string());
        live.insert(object::name(&revs.update).to_string());
        let limit = set["spec"]["revisionHistoryLimit"]
            .as_i64()
            .unwrap_or(10)
            .max(0) as usize;
        self.history.truncate(&revisions, &live, limit).await?;

        let min_ready = min_ready_seconds(&set);
        if min_ready > 0 && status.ready_replicas != status.available_replicas {
            return Ok(Some(Duration::from_secs(min_ready as u64)));
        }
        Ok(None)
    }

    /// Writes `status` through the status subresource, once more on a fresh read if the set
    /// changed since the informer saw it.
    async fn write_status(&self, set: &Value, status: &SetStatus) -> Result<(), SyncError> {
        let namespace = object::namespace(set);
        let name = object::name(set);
        let mut current = set.clone();
        for attempt in 0..2 {
            current["status"] = status.apply(&current);
            match self
                .sets
                .update(
                    Some(namespace),
                    name,
                    current.clone(),
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await
            {
                Ok(_) | Err(RegistryError::NotFound { .. }) => return Ok(()),
                Err(RegistryError::Conflict { .. }) if attempt == 0 => {
                    current = self
                        .sets
                        .get(Some(namespace), name, &ListOptions::default())
                        .await?;
                    if object::uid(&current) != object::uid(set) {
                        return Ok(());
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
