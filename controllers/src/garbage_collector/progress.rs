//! Counters of what the collector did, and a periodic log line while it has work, so a large
//! cascade can be followed (and a stuck one noticed) without debug logging.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::info;

use super::GarbageCollector;

#[derive(Default)]
pub struct Progress {
    pub deleted: AtomicU64,
    pub references_removed: AtomicU64,
    pub orphaned: AtomicU64,
    pub finalizers_removed: AtomicU64,
    pub failures: AtomicU64,
}

/// What the collector has done since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Deletes issued for garbage.
    pub deleted: u64,
    /// Dependents whose references to absent or waiting owners were dropped.
    pub references_removed: u64,
    /// Dependents orphaned by an owner's orphaning deletion.
    pub orphaned: u64,
    /// `orphan` / `foregroundDeletion` finalizers removed.
    pub finalizers_removed: u64,
    /// Attempts that failed and were queued for retry.
    pub failures: u64,
    /// Nodes in the dependency graph (including virtual ones).
    pub graph_nodes: usize,
    pub attempt_to_delete_queued: usize,
    pub attempt_to_orphan_queued: usize,
}

impl Progress {
    fn load(&self) -> [u64; 5] {
        [
            &self.deleted,
            &self.references_removed,
            &self.orphaned,
            &self.finalizers_removed,
            &self.failures,
        ]
        .map(|c| c.load(Ordering::Relaxed))
    }
}

impl GarbageCollector {
    pub fn stats(&self) -> GcStats {
        let [deleted, references_removed, orphaned, finalizers_removed, failures] =
            self.progress.load();
        GcStats {
            deleted,
            references_removed,
            orphaned,
            finalizers_removed,
            failures,
            graph_nodes: self.builder.read().len(),
            attempt_to_delete_queued: self.builder.attempt_to_delete.len(),
            attempt_to_orphan_queued: self.builder.attempt_to_orphan.len(),
        }
    }

    /// Logs the counters every `interval` while something changed or work is queued.
    pub(super) async fn report_progress(self: Arc<Self>, stop: CancellationToken) {
        let mut last = self.stats();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(self.config.progress_interval) => {}
            }
            let now = self.stats();
            let busy = now.attempt_to_delete_queued + now.attempt_to_orphan_queued > 0;
            let changed = GcStats {
                graph_nodes: last.graph_nodes,
                ..now
            } != last;
            if busy || changed {
                info!(
                    deleted = now.deleted - last.deleted,
                    references_removed = now.references_removed - last.references_removed,
                    orphaned = now.orphaned - last.orphaned,
                    finalizers_removed = now.finalizers_removed - last.finalizers_removed,
                    failures = now.failures - last.failures,
                    queued_deletes = now.attempt_to_delete_queued,
                    queued_orphans = now.attempt_to_orphan_queued,
                    graph_nodes = now.graph_nodes,
                    interval = ?self.config.progress_interval,
                    "garbage collector progress"
                );
            }
            last = now;
        }
    }
}

/// Default for [`super::GcConfig::progress_interval`].
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(5);
