//! One sync of a deployment (upstream's syncDeployment and sync.go): claim its ReplicaSets,
//! find (or make) the one of its current template and number revisions, then either only
//! scale (paused, or resized mid-rollout) or roll out by its strategy. Also the pieces every
//! path shares: scaling a ReplicaSet with its event, history cleanup, and status writes.

use std::time::Duration;

use registry::options::{DeleteOptions, ListOptions, WriteOptions};
use registry::types::DeploymentStrategyType;
use registry::{object, RegistryError, Subresource};
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::controller::{selector, DeploymentController};
use super::rollback::rollback_to;
use super::util::conditions::{
    get_condition, new_condition, progress_deadline, set_condition, FAILED_RS_CREATE, FOUND_NEW_RS,
    NEW_RS_CREATED, PAUSED, PROGRESSING, RESUMED, TIMED_OUT,
};
use super::util::hash::{compute_hash, equal_ignore_hash};
use super::util::replicas::{
    is_rolling_update, is_saturated, max_surge, new_rs_new_replicas,
    replicas_annotations_need_update, set_replicas_annotations,
};
use super::util::revision::{max_revision, set_new_rs_annotations};
use super::util::scaling::proportional_sizes;
use super::util::{
    annotation, by_creation, by_revision, is_active, set_spec_replicas, spec_replicas,
    status_count, DESIRED_REPLICAS, POD_TEMPLATE_HASH, REVISION,
};
use client::controller_utils::{claim, claim_candidate, controller_ref, Claimable, SyncError};
use client::events::EventType;
use client::informer::{controller_uid, NAMESPACE_INDEX};

pub(super) type SyncResult = Result<Option<Duration>, SyncError>;

fn write() -> WriteOptions {
    WriteOptions::default()
}

fn min_ready_seconds(obj: &Value) -> i64 {
    obj["spec"]["minReadySeconds"].as_i64().unwrap_or(0)
}

pub(super) fn is_paused(d: &Value) -> bool {
    d["spec"]["paused"].as_bool() == Some(true)
}

impl DeploymentController {
    pub(super) async fn sync_deployment(&self, key: &str) -> SyncResult {
        let Some(cached) = self.deployment_informer.indexer().get(key) else {
            debug!(deployment = key, "deployment has been deleted");
            return Ok(None);
        };
        let mut d = (*cached).clone();
        let Some(sel) = selector(&d).filter(|s| !s.is_empty()) else {
            self.recorder.event(
                &d,
                EventType::Warning,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            );
            if d["status"]["observedGeneration"].as_i64().unwrap_or(0) < object::generation(&d) {
                let mut status = d["status"].clone();
                status["observedGeneration"] = json!(object::generation(&d));
                self.update_status(&mut d, status).await?;
            }
            return Ok(None);
        };
        let rss = self.replica_sets_for(&d, &sel).await?;
        if object::deletion_timestamp(&d).is_some() {
            let (new_rs, old) = self.all_rs_and_sync_revision(&mut d, &rss, false).await?;
            self.sync_deployment_status(&mut d, &all(&old, new_rs.as_ref()), new_rs.as_ref())
                .await?;
            return Ok(None);
        }
        self.check_paused_conditions(&mut d).await?;
        if is_paused(&d) {
            return self.sync(&mut d, &rss).await;
        }
        if rollback_to(&d).is_some() {
            return self.rollback(&mut d, &rss).await;
        }
        if self.is_scaling_event(&mut d, &rss).await? {
            return self.sync(&mut d, &rss).await;
        }
        if DeploymentStrategyType::of(&d) == DeploymentStrategyType::Recreate {
            self.rollout_recreate(&mut d, &rss).await
        } else {
            self.rollout_rolling(&mut d, &rss).await
        }
    }

    /// The ReplicaSets this deployment controls after adopting matching orphans and releasing
    /// its own that no longer match.
    async fn replica_sets_for(
        &self,
        d: &Value,
        sel: &registry::selector::labels::LabelSelector,
    ) -> Result<Vec<Value>, SyncError> {
        let candidates = self
            .rs_informer
            .indexer()
            .by_index_selected(
                NAMESPACE_INDEX,
                object::namespace(d),
                claim_candidate(object::uid(d), sel),
            )
            .map_err(|e| SyncError::Failed(e.to_string()))?;
        let (namespace, name) = (
            object::namespace(d).to_string(),
            object::name(d).to_string(),
        );
        let deployments = self.deployments.clone();
        let claimable = Claimable {
            owner: d,
            store: &self.replica_sets,
            selector: sel,
            fresh_owner: Box::new(move || {
                let (deployments, namespace, name) =
                    (deployments.clone(), namespace.clone(), name.clone());
                Box::pin(async move {
                    Ok(deployments
                        .get(Some(&namespace), &name, &ListOptions::default())
                        .await?)
                })
            }),
        };
        let claimed = claim(&claimable, candidates).await?;
        Ok(claimed.into_iter().map(|rs| (*rs).clone()).collect())
    }

    /// A sync that only scales (paused, or resized): no new ReplicaSet, no rollout step.
    pub(super) async fn sync(&self, d: &mut Value, rss: &[Value]) -> SyncResult {
        let (new_rs, old) = self.all_rs_and_sync_revision(d, rss, false).await?;
        self.scale(d, new_rs.as_ref(), &old).await?;
        if is_paused(d) && rollback_to(d).is_none() {
            self.cleanup(&old, d).await?;
        }
        self.sync_deployment_status(d, &all(&old, new_rs.as_ref()), new_rs.as_ref())
            .await?;
        Ok(None)
    }

    /// Whether an active ReplicaSet was sized for another replica count than the deployment's.
    async fn is_scaling_event(&self, d: &mut Value, rss: &[Value]) -> Result<bool, SyncError> {
        let (new_rs, old) = self.all_rs_and_sync_revision(d, rss, false).await?;
        let replicas = spec_replicas(d);
        Ok(old
            .iter()
            .chain(new_rs.as_ref())
            .filter(|rs| is_active(rs))
            .any(|rs| {
                annotation(rs, DESIRED_REPLICAS)
                    .and_then(|v| v.parse::<i32>().ok())
                    .is_some_and(|desired| desired != replicas)
            }))
    }

    /// Progressing goes Unknown with DeploymentPaused / DeploymentResumed when pausing or
    /// resuming, so time spent paused never counts toward the progress deadline.
    async fn check_paused_conditions(&self, d: &mut Value) -> Result<(), SyncError> {
        if progress_deadline(d).is_none() {
            return Ok(());
        }
        let reason = get_condition(&d["status"], PROGRESSING).and_then(|c| c["reason"].as_str());
        if reason == Some(TIMED_OUT) {
            return Ok(());
        }
        let paused_recorded = reason == Some(PAUSED);
        let condition = match (is_paused(d), paused_recorded) {
            (true, false) => new_condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused"),
            (false, true) => {
                new_condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed")
            }
            _ => return Ok(()),
        };
        let mut status = d["status"].clone();
        set_condition(&mut status, condition);
        self.update_status(d, status).await
    }

    /// The ReplicaSet of the deployment's template (created if `create`) and the others,
    /// with revisions synced (upstream's getAllReplicaSetsAndSyncRevision).
    pub(super) async fn all_rs_and_sync_revision(
        &self,
        d: &mut Value,
        rss: &[Value],
        create: bool,
    ) -> Result<(Option<Value>, Vec<Value>), SyncError> {
        let mut sorted: Vec<&Value> = rss.iter().collect();
        sorted.sort_by(|a, b| by_creation(a, b));
        let existing = sorted
            .into_iter()
            .find(|rs| equal_ignore_hash(&rs["spec"]["template"], &d["spec"]["template"]));
        let old: Vec<Value> = rss
            .iter()
            .filter(|rs| existing.is_none_or(|e| object::uid(e) != object::uid(rs)))
            .cloned()
            .collect();
        let new_rs = self.new_replica_set(d, existing, &old, create).await?;
        Ok((new_rs, old))
    }

    async fn new_replica_set(
        &self,
        d: &mut Value,
        existing: Option<&Value>,
        old: &[Value],
        create: bool,
    ) -> Result<Option<Value>, SyncError> {
        let new_revision = max_revision(old) + 1;
        let max_chars = self.config.max_revision_history_chars;
        if let Some(existing) = existing {
            let mut rs = existing.clone();
            let annotated = set_new_rs_annotations(d, &mut rs, new_revision, true, max_chars);
            if annotated || min_ready_seconds(&rs) != min_ready_seconds(d) {
                rs["spec"]["minReadySeconds"] = json!(min_ready_seconds(d));
                let (updated, _) = self
                    .replica_sets
                    .update(
                        Some(object::namespace(&rs)),
                        object::name(&rs),
                        rs.clone(),
                        Subresource::Main,
                        &write(),
                    )
                    .await?;
                return Ok(Some(updated));
            }
            let revision = annotation(&rs, REVISION).unwrap_or_default().to_string();
            self.set_revision(d, &revision).await?;
            if progress_deadline(d).is_some() && get_condition(&d["status"], PROGRESSING).is_none()
            {
                let message = format!("Found new replica set {:?}", object::name(&rs));
                let mut status = d["status"].clone();
                set_condition(
                    &mut status,
                    new_condition(PROGRESSING, "True", FOUND_NEW_RS, &message),
                );
                self.update_status(d, status).await?;
            }
            return Ok(Some(rs));
        }
        if !create {
            return Ok(None);
        }
        let collision_count = d["status"]["collisionCount"].as_u64().map(|c| c as u32);
        let rs = self.new_replica_set_object(d, old, new_revision, collision_count)?;
        let name = object::name(&rs).to_string();
        let replicas = spec_replicas(&rs);
        let namespace = object::namespace(d).to_string();
        match self
            .replica_sets
            .create(Some(&namespace), rs, &write())
            .await
        {
            Ok(created) => {
                if replicas > 0 {
                    let message = format!("Scaled up replica set {name} from 0 to {replicas}");
                    self.recorder
                        .event(d, EventType::Normal, "ScalingReplicaSet", message);
                }
                self.set_revision(d, &new_revision.to_string()).await?;
                if progress_deadline(d).is_some() {
                    let message = format!("Created new replica set {name:?}");
                    let mut status = d["status"].clone();
                    set_condition(
                        &mut status,
                        new_condition(PROGRESSING, "True", NEW_RS_CREATED, &message),
                    );
                    self.update_status(d, status).await?;
                }
                Ok(Some(created))
            }
            Err(RegistryError::AlreadyExists { .. }) => {
                let current = self
                    .replica_sets
                    .get(Some(&namespace), &name, &ListOptions::default())
                    .await?;
                // Ours, made by an earlier sync the informer has not shown yet.
                if controller_uid(&current) == Some(object::uid(d))
                    && equal_ignore_hash(&current["spec"]["template"], &d["spec"]["template"])
                {
                    self.set_revision(d, &new_revision.to_string()).await?;
                    return Ok(Some(current));
                }
                // Someone else's ReplicaSet has the name: hash again with a higher count.
                let count = collision_count.unwrap_or(0).saturating_add(1);
                let mut status = d["status"].clone();
                status["collisionCount"] = json!(count);
                self.update_status(d, status).await?;
                warn!(deployment = object::name(d), replica_set = %name, count, "found a hash collision");
                Err(SyncError::Failed(format!(
                    "replica set {name} exists with another template; collisionCount is now {count}"
                )))
            }
            Err(e) => {
                let message = format!(
                    "Failed to create new replica set {name:?}: {}",
                    e.status().message
                );
                if progress_deadline(d).is_some() {
                    let mut status = d["status"].clone();
                    set_condition(
                        &mut status,
                        new_condition(PROGRESSING, "False", FAILED_RS_CREATE, &message),
                    );
                    if let Err(status_error) = self.update_status(d, status).await {
                        debug!(error = %status_error, "could not record the failed creation");
                    }
                }
                self.recorder
                    .event(d, EventType::Warning, FAILED_RS_CREATE, message);
                Err(e.into())
            }
        }
    }

    /// The ReplicaSet for the deployment's current template: named and labelled with the
    /// template's hash, sized as far as the strategy allows now.
    fn new_replica_set_object(
        &self,
        d: &Value,
        old: &[Value],
        revision: i64,
        collision_count: Option<u32>,
    ) -> Result<Value, SyncError> {
        let hash = compute_hash(&d["spec"]["template"], collision_count);
        let mut template = d["spec"]["template"].clone();
        if !template["metadata"].is_object() {
            template["metadata"] = json!({});
        }
        if !template["metadata"]["labels"].is_object() {
            template["metadata"]["labels"] = json!({});
        }
        template["metadata"]["labels"][POD_TEMPLATE_HASH] = json!(hash);
        let mut selector = d["spec"]["selector"].clone();
        if !selector["matchLabels"].is_object() {
            selector["matchLabels"] = json!({});
        }
        selector["matchLabels"][POD_TEMPLATE_HASH] = json!(hash);
        let mut rs = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": format!("{}-{hash}", object::name(d)),
                "namespace": object::namespace(d),
                "labels": template["metadata"]["labels"],
                "ownerReferences": [controller_ref(d)],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": min_ready_seconds(d),
                "selector": selector,
                "template": template,
            },
        });
        let all: Vec<&Value> = old.iter().chain([&rs]).collect();
        let replicas = new_rs_new_replicas(d, &all, &rs).map_err(SyncError::Failed)?;
        set_spec_replicas(&mut rs, replicas);
        set_new_rs_annotations(
            d,
            &mut rs,
            revision,
            false,
            self.config.max_revision_history_chars,
        );
        Ok(rs)
    }

    /// Sizes the ReplicaSets for the deployment's replica count (upstream's scale): the one
    /// active ReplicaSet takes all; a saturated new one leaves the old ones nothing; otherwise
    /// a rolling deployment spreads the change in proportion.
    async fn scale(
        &self,
        d: &Value,
        new_rs: Option<&Value>,
        old: &[Value],
    ) -> Result<(), SyncError> {
        let replicas = spec_replicas(d);
        if let Some(rs) = active_or_latest(new_rs, old) {
            if spec_replicas(rs) != replicas {
                self.scale_rs_and_record(rs, replicas, d).await?;
            }
            return Ok(());
        }
        if is_saturated(d, new_rs) {
            for rs in old.iter().filter(|rs| is_active(rs)) {
                self.scale_rs_and_record(rs, 0, d).await?;
            }
            return Ok(());
        }
        if is_rolling_update(d) {
            let active: Vec<Value> = old
                .iter()
                .chain(new_rs)
                .filter(|rs| is_active(rs))
                .cloned()
                .collect();
            let (direction, sizes) = proportional_sizes(d, &active);
            let operation = match direction {
                std::cmp::Ordering::Greater => "up",
                std::cmp::Ordering::Less => "down",
                std::cmp::Ordering::Equal => "",
            };
            for (i, size) in sizes {
                self.scale_rs(&active[i], size, d, operation).await?;
            }
        }
        Ok(())
    }

    /// Scales `rs` to `size` with an event; (whether it was scaled, the ReplicaSet now).
    pub(super) async fn scale_rs_and_record(
        &self,
        rs: &Value,
        size: i32,
        d: &Value,
    ) -> Result<(bool, Value), SyncError> {
        let current = spec_replicas(rs);
        if current == size {
            return Ok((false, rs.clone()));
        }
        let operation = if current < size { "up" } else { "down" };
        self.scale_rs(rs, size, d, operation).await
    }

    /// Writes `rs` at `size` with the deployment's replica annotations (compare-and-swap on
    /// the version read, so a stale view fails rather than overshoots).
    async fn scale_rs(
        &self,
        rs: &Value,
        size: i32,
        d: &Value,
        operation: &str,
    ) -> Result<(bool, Value), SyncError> {
        let current = spec_replicas(rs);
        let resized = current != size;
        let desired = spec_replicas(d);
        let max = desired + max_surge(d);
        if !resized && !replicas_annotations_need_update(rs, desired, max) {
            return Ok((false, rs.clone()));
        }
        let mut next = rs.clone();
        set_spec_replicas(&mut next, size);
        set_replicas_annotations(&mut next, desired, max);
        let (updated, _) = self
            .replica_sets
            .update(
                Some(object::namespace(rs)),
                object::name(rs),
                next,
                Subresource::Main,
                &write(),
            )
            .await?;
        if resized {
            let message = format!(
                "Scaled {operation} replica set {} from {current} to {size}",
                object::name(rs)
            );
            self.recorder
                .event(d, EventType::Normal, "ScalingReplicaSet", message);
        }
        Ok((resized, updated))
    }

    /// Deletes the oldest empty ReplicaSets past revisionHistoryLimit.
    pub(super) async fn cleanup(&self, old: &[Value], d: &Value) -> Result<(), SyncError> {
        let Some(limit) = d["spec"]["revisionHistoryLimit"].as_i64() else {
            return Ok(());
        };
        let mut cleanable: Vec<&Value> = old
            .iter()
            .filter(|rs| object::deletion_timestamp(rs).is_none())
            .collect();
        let excess = cleanable.len() as i64 - limit;
        if excess <= 0 {
            return Ok(());
        }
        cleanable.sort_by(|a, b| by_revision(a, b));
        for rs in cleanable.into_iter().take(excess as usize) {
            let observed = rs["status"]["observedGeneration"].as_i64().unwrap_or(0);
            if status_count(rs, "replicas") != 0
                || spec_replicas(rs) != 0
                || object::generation(rs) > observed
            {
                continue;
            }
            debug!(
                replica_set = object::name(rs),
                "deleting old replica set past the history limit"
            );
            match self
                .replica_sets
                .delete(
                    Some(object::namespace(rs)),
                    object::name(rs),
                    DeleteOptions::default(),
                )
                .await
            {
                Ok(_) | Err(RegistryError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Writes `status` as the deployment's status; `d` becomes what was stored.
    pub(super) async fn update_status(
        &self,
        d: &mut Value,
        status: Value,
    ) -> Result<(), SyncError> {
        d["status"] = status;
        let (updated, _) = self
            .deployments
            .update(
                Some(object::namespace(d)),
                object::name(d),
                d.clone(),
                Subresource::Status,
                &write(),
            )
            .await?;
        *d = updated;
        Ok(())
    }

    /// Sets the deployment's revision annotation, through the status subresource as upstream
    /// (it lets annotations through and does not move the generation).
    async fn set_revision(&self, d: &mut Value, revision: &str) -> Result<(), SyncError> {
        if annotation(d, REVISION) == Some(revision) {
            return Ok(());
        }
        let mut next = d.clone();
        object::meta_mut(&mut next)
            .entry("annotations")
            .or_insert_with(|| json!({}));
        next["metadata"]["annotations"][REVISION] = json!(revision);
        let (updated, _) = self
            .deployments
            .update(
                Some(object::namespace(d)),
                object::name(d),
                next,
                Subresource::Status,
                &write(),
            )
            .await?;
        *d = updated;
        Ok(())
    }
}

/// Old ReplicaSets and the new one together.
pub(super) fn all(old: &[Value], new_rs: Option<&Value>) -> Vec<Value> {
    old.iter().chain(new_rs).cloned().collect()
}

/// The only active ReplicaSet, or with none active the newest (upstream's
/// FindActiveOrLatest); None when several are active.
fn active_or_latest<'a>(new_rs: Option<&'a Value>, old: &'a [Value]) -> Option<&'a Value> {
    let active: Vec<&Value> = old
        .iter()
        .chain(new_rs)
        .filter(|rs| is_active(rs))
        .collect();
    match active.as_slice() {
        [] => new_rs.or_else(|| old.iter().max_by(|a, b| by_creation(a, b))),
        [only] => Some(only),
        _ => None,
    }
}
