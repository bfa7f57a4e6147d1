//! What the workload controllers read of the pods they count, rank and adopt, as a compact
//! typed [`View`]: the informer keeps one per pod and revision, so a sync over thousands of
//! unchanged pods walks pointers instead of decoding each pod's JSON again.
//!
//! Some 200 bytes a pod: its labels and controller are the indexer's shared record, its key
//! the indexer's own string.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use registry::object;
use registry::projection::Projection;
use registry::types::PodPhase;
use serde_json::Value;

use super::pods::{available, pod_ready_since};
use crate::informer::{object_key, split_key, Labels, Marks, View};

/// The annotation users set to steer a ReplicaSet's scale-down (lower goes first).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// A pod as the ReplicaSet controller reads it.
#[derive(Debug)]
pub struct PodView {
    key: Arc<str>,
    marks: Arc<Marks>,
    uid: Box<str>,
    revision: i64,
    node_name: Option<Box<str>>,
    created: Option<DateTime<Utc>>,
    ready_since: Option<Option<DateTime<Utc>>>,
    max_restarts: i64,
    deletion_cost: i32,
    phase: Option<PodPhase>,
    deleting: bool,
}

const ALL: Projection = Projection::All;

impl View for PodView {
    // Labels and owners come from the indexer's record; the spec but its node is skipped.
    const FIELDS: Projection = Projection::Only(&[
        (
            "metadata",
            Projection::Only(&[
                ("uid", ALL),
                ("creationTimestamp", ALL),
                ("deletionTimestamp", ALL),
                ("annotations", Projection::Only(&[(POD_DELETION_COST, ALL)])),
            ]),
        ),
        ("spec", Projection::Only(&[("nodeName", ALL)])),
        (
            "status",
            Projection::Only(&[
                ("phase", ALL),
                ("conditions", ALL),
                ("containerStatuses", ALL),
            ]),
        ),
    ]);

    fn build(key: &Arc<str>, marks: &Arc<Marks>, revision: i64, pod: &Value) -> Self {
        let meta = &pod["metadata"];
        Self {
            key: key.clone(),
            marks: marks.clone(),
            uid: object::uid(pod).into(),
            revision,
            node_name: pod["spec"]["nodeName"]
                .as_str()
                .filter(|n| !n.is_empty())
                .map(Box::from),
            created: meta["creationTimestamp"]
                .as_str()
                .and_then(object::parse_time),
            ready_since: pod_ready_since(pod),
            max_restarts: pod["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["restartCount"].as_i64())
                .max()
                .unwrap_or(0),
            // A malformed cost counts as 0, as upstream's helper treats it after logging.
            deletion_cost: meta["annotations"][POD_DELETION_COST]
                .as_str()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0),
            phase: PodPhase::of(pod),
            deleting: object::deletion_timestamp(pod).is_some(),
        }
    }
}

impl PodView {
    /// The view of a whole pod the informer does not hold (a patch's answer, a test's pod).
    pub fn of(pod: &Value) -> Self {
        let key: Arc<str> = Arc::from(object_key(pod).unwrap_or_default());
        let revision = object::resource_version(pod).parse().unwrap_or(0);
        Self::build(&key, &Arc::new(Marks::of(pod)), revision, pod)
    }

    /// `namespace/name`, the pod's key in the informer.
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn namespace(&self) -> &str {
        split_key(&self.key).0.unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        split_key(&self.key).1
    }

    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// The resourceVersion the view was read at.
    pub fn revision(&self) -> i64 {
        self.revision
    }

    pub fn labels(&self) -> &Labels {
        self.marks.labels()
    }

    pub fn controller_uid(&self) -> Option<&str> {
        self.marks.controller_uid()
    }

    /// `spec.nodeName`, empty while unscheduled.
    pub fn node_name(&self) -> &str {
        self.node_name.as_deref().unwrap_or_default()
    }

    pub fn phase(&self) -> Option<PodPhase> {
        self.phase
    }

    pub fn created(&self) -> Option<DateTime<Utc>> {
        self.created
    }

    /// The highest restart count of its containers.
    pub fn max_restarts(&self) -> i64 {
        self.max_restarts
    }

    /// The `controller.kubernetes.io/pod-deletion-cost` annotation, 0 when absent or malformed.
    pub fn deletion_cost(&self) -> i32 {
        self.deletion_cost
    }

    /// Has a deletionTimestamp.
    pub fn is_deleting(&self) -> bool {
        self.deleting
    }

    /// As [`super::is_pod_active`].
    pub fn is_active(&self) -> bool {
        !self.phase.is_some_and(PodPhase::is_terminal) && !self.deleting
    }

    /// As [`super::pod_ready_since`].
    pub fn ready_since(&self) -> Option<Option<DateTime<Utc>>> {
        self.ready_since
    }

    pub fn is_ready(&self) -> bool {
        self.ready_since.is_some()
    }

    /// As [`super::is_pod_available`].
    pub fn is_available(&self, min_ready_seconds: i64, now: DateTime<Utc>) -> bool {
        available(self.ready_since, min_ready_seconds, now)
    }
}

#[cfg(test)]
mod tests;
