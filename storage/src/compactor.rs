//! Scheduled compaction, as kube-apiserver runs it: every interval, compact to the revision
//! seen one interval earlier, so at least one interval of history stays for watchers.

use std::time::Duration;

use tokio::task::JoinHandle;
use tracing::{debug, warn};

use crate::backend::DynBackend;
use crate::StorageError;

pub fn spawn_compactor(backend: DynBackend, interval: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut previous = 0;
        loop {
            ticker.tick().await;
            let current = match backend.current_revision().await {
                Ok(r) => r,
                Err(e) => {
                    warn!(error = %e, "compactor could not read the revision");
                    continue;
                }
            };
            if previous > 0 {
                match backend.compact(previous).await {
                    // Another server sharing the etcd compacted first.
                    Ok(()) | Err(StorageError::TooOld { .. }) => {
                        debug!(revision = previous, "compacted")
                    }
                    Err(e) => warn!(revision = previous, error = %e, "compaction failed"),
                }
            }
            previous = current;
        }
    })
}
