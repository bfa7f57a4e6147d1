//! The Recreate strategy (upstream's recreate.go): scale every old ReplicaSet to zero, wait
//! until none of their pods runs (counted from the pods informer, not only their status), then
//! create or scale up the new one at full size.

use std::collections::HashMap;
use std::sync::Arc;

use registry::object;
use registry::types::PodPhase;
use serde_json::Value;

use super::controller::DeploymentController;
use super::sync::{all, SyncResult};
use super::util::conditions::deployment_complete;
use super::util::{is_active, spec_replicas, total_status};

impl DeploymentController {
    pub(super) async fn rollout_recreate(&self, d: &mut Value, rss: &[Value]) -> SyncResult {
        // No new ReplicaSet yet: nothing new may start before the old pods are gone.
        let (mut new_rs, mut old) = self.all_rs_and_sync_revision(d, rss, false).await?;
        let mut all_rss = all(&old, new_rs.as_ref());
        let mut scaled_down = false;
        for rs in old.iter_mut().filter(|rs| is_active(rs)) {
            let (scaled, updated) = self.scale_rs_and_record(rs, 0, d).await?;
            if scaled {
                *rs = updated;
                scaled_down = true;
            }
        }
        if scaled_down {
            return self.sync_rollout_status(d, &all_rss, new_rs.as_ref()).await;
        }
        if old_pods_running(new_rs.as_ref(), &old, &self.pod_map(d, rss)) {
            return self.sync_rollout_status(d, &all_rss, new_rs.as_ref()).await;
        }
        if new_rs.is_none() {
            (new_rs, old) = self.all_rs_and_sync_revision(d, rss, true).await?;
            all_rss = all(&old, new_rs.as_ref());
        }
        if let Some(rs) = &new_rs {
            self.scale_rs_and_record(rs, spec_replicas(d), d).await?;
        }
        if deployment_complete(d, &d["status"]) {
            self.cleanup(&old, d).await?;
        }
        self.sync_rollout_status(d, &all_rss, new_rs.as_ref()).await
    }
}

/// Whether old ReplicaSets still report pods, or any of their pods has not finished.
fn old_pods_running(
    new_rs: Option<&Value>,
    old: &[Value],
    pods: &HashMap<String, Vec<Arc<Value>>>,
) -> bool {
    if total_status(old, "replicas") > 0 {
        return true;
    }
    pods.iter()
        .filter(|(uid, _)| new_rs.is_none_or(|rs| object::uid(rs) != uid.as_str()))
        .flat_map(|(_, pods)| pods)
        .any(|pod| !PodPhase::terminal(pod))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn finished_pods_of_old_replica_sets_do_not_hold_the_new_one_back() {
        let new = json!({"metadata": {"uid": "new"}});
        let old = vec![json!({"metadata": {"uid": "old"}, "status": {"replicas": 0}})];
        let pod = |phase: &str| Arc::new(json!({"status": {"phase": phase}}));
        let mut pods = HashMap::new();
        pods.insert("new".to_string(), vec![pod("Running")]);
        pods.insert("old".to_string(), vec![pod("Succeeded"), pod("Failed")]);
        assert!(!old_pods_running(Some(&new), &old, &pods));
        pods.insert("old".to_string(), vec![pod("Pending")]);
        assert!(old_pods_running(Some(&new), &old, &pods));
        let reporting = vec![json!({"metadata": {"uid": "old"}, "status": {"replicas": 1}})];
        assert!(old_pods_running(Some(&new), &reporting, &HashMap::new()));
    }
}
