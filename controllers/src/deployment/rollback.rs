//! Rollback by annotation (upstream's rollback.go, extensions/v1beta1's rollbackTo kept as
//! `deprecated.deployment.rollback.to`): the deployment takes the template of the ReplicaSet
//! of that revision (0: the one before the newest). `kubectl rollout undo` on apps/v1 patches
//! the template itself instead; either way the next sync finds the old ReplicaSet by its
//! template and reuses it with a new revision.

use registry::options::WriteOptions;
use registry::{object, Subresource};
use serde_json::Value;

use super::controller::DeploymentController;
use super::sync::{all, SyncResult};
use super::util::hash::equal_ignore_hash;
use super::util::revision::{annotations_for_rollback, last_revision};
use super::util::{annotation, revision, POD_TEMPLATE_HASH, ROLLBACK_TO};
use client::events::EventType;

/// The revision asked for, if the annotation is there and a number.
pub(super) fn rollback_to(d: &Value) -> Option<i64> {
    annotation(d, ROLLBACK_TO).and_then(|v| v.parse().ok())
}

impl DeploymentController {
    pub(super) async fn rollback(&self, d: &mut Value, rss: &[Value]) -> SyncResult {
        let (new_rs, old) = self.all_rs_and_sync_revision(d, rss, true).await?;
        let all_rss = all(&old, new_rs.as_ref());
        let mut to = rollback_to(d).unwrap_or(0);
        if to == 0 {
            to = last_revision(&all_rss);
            if to == 0 {
                self.recorder.event(
                    d,
                    EventType::Warning,
                    "DeploymentRollbackRevisionNotFound",
                    "Unable to find last revision.",
                );
                return self.finish_rollback(d, None).await;
            }
        }
        let Some(target) = all_rss.iter().find(|rs| revision(rs) == to) else {
            self.recorder.event(
                d,
                EventType::Warning,
                "DeploymentRollbackRevisionNotFound",
                "Unable to find the revision to rollback to.",
            );
            return self.finish_rollback(d, None).await;
        };
        if equal_ignore_hash(&d["spec"]["template"], &target["spec"]["template"]) {
            let message = format!(
                "The rollback revision contains the same template as current deployment {:?}",
                object::name(d)
            );
            self.recorder.event(
                d,
                EventType::Warning,
                "DeploymentRollbackTemplateUnchanged",
                message,
            );
            return self.finish_rollback(d, None).await;
        }
        let mut template = target["spec"]["template"].clone();
        if let Some(labels) = template["metadata"]["labels"].as_object_mut() {
            labels.remove(POD_TEMPLATE_HASH);
        }
        let annotations = annotations_for_rollback(d, target);
        let message = format!(
            "Rolled back deployment {:?} to revision {to}",
            object::name(d)
        );
        self.finish_rollback(d, Some((template, annotations)))
            .await?;
        self.recorder
            .event(d, EventType::Normal, "DeploymentRollback", message);
        Ok(None)
    }

    /// Clears the request, taking the old template and annotations if there are any.
    async fn finish_rollback(&self, d: &Value, change: Option<(Value, Value)>) -> SyncResult {
        let mut next = d.clone();
        if let Some((template, annotations)) = change {
            next["spec"]["template"] = template;
            next["metadata"]["annotations"] = annotations;
        }
        if let Some(annotations) = next["metadata"]["annotations"].as_object_mut() {
            annotations.remove(ROLLBACK_TO);
        }
        self.deployments
            .update(
                Some(object::namespace(d)),
                object::name(d),
                next,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await?;
        Ok(None)
    }
}
