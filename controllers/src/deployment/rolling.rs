//! The RollingUpdate strategy (upstream's rolling.go): grow the new ReplicaSet as far as
//! maxSurge allows, shrink old ones as far as maxUnavailable allows (unavailable replicas
//! first), one step per sync; each step's write brings the next sync.

use serde_json::Value;

use super::controller::DeploymentController;
use super::sync::{all, SyncResult};
use super::util::conditions::deployment_complete;
use super::util::replicas::new_rs_new_replicas;
use super::util::scaling::{old_scale_down, old_scale_down_room, unhealthy_cleanup};
use super::util::{by_creation, is_active, spec_replicas, total_replicas};
use client::controller_utils::SyncError;

impl DeploymentController {
    pub(super) async fn rollout_rolling(&self, d: &mut Value, rss: &[Value]) -> SyncResult {
        let (new_rs, old) = self.all_rs_and_sync_revision(d, rss, true).await?;
        let new_rs = new_rs.ok_or_else(|| SyncError::Failed("no new replica set".into()))?;
        let all_rss = all(&old, Some(&new_rs));
        if self.reconcile_new_replica_set(&all_rss, &new_rs, d).await? {
            return self.sync_rollout_status(d, &all_rss, Some(&new_rs)).await;
        }
        let active_old: Vec<Value> = old.iter().filter(|rs| is_active(rs)).cloned().collect();
        if self
            .reconcile_old_replica_sets(&all_rss, active_old, &new_rs, d)
            .await?
        {
            return self.sync_rollout_status(d, &all_rss, Some(&new_rs)).await;
        }
        if deployment_complete(d, &d["status"]) {
            self.cleanup(&old, d).await?;
        }
        self.sync_rollout_status(d, &all_rss, Some(&new_rs)).await
    }

    async fn reconcile_new_replica_set(
        &self,
        all_rss: &[Value],
        new_rs: &Value,
        d: &Value,
    ) -> Result<bool, SyncError> {
        let replicas = spec_replicas(d);
        let current = spec_replicas(new_rs);
        if current == replicas {
            return Ok(false);
        }
        let target = if current > replicas {
            replicas
        } else {
            let refs: Vec<&Value> = all_rss.iter().collect();
            new_rs_new_replicas(d, &refs, new_rs).map_err(SyncError::Failed)?
        };
        Ok(self.scale_rs_and_record(new_rs, target, d).await?.0)
    }

    async fn reconcile_old_replica_sets(
        &self,
        all_rss: &[Value],
        mut old: Vec<Value>,
        new_rs: &Value,
        d: &Value,
    ) -> Result<bool, SyncError> {
        if total_replicas(&old) == 0 {
            return Ok(false);
        }
        let room = old_scale_down_room(d, total_replicas(all_rss), new_rs);
        if room <= 0 {
            return Ok(false);
        }
        old.sort_by(by_creation);
        let mut scaled_down = 0;
        for (i, size) in unhealthy_cleanup(&old, room) {
            scaled_down += spec_replicas(&old[i]) - size;
            old[i] = self.scale_rs_and_record(&old[i], size, d).await?.1;
        }
        let plan = old_scale_down(d, old.iter().chain([new_rs]), &old);
        for (i, size) in plan {
            scaled_down += spec_replicas(&old[i]) - size;
            old[i] = self.scale_rs_and_record(&old[i], size, d).await?.1;
        }
        Ok(scaled_down > 0)
    }
}
