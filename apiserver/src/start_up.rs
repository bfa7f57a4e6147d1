//! When start-up is over: the server serves, and the controllers it runs have listed what they
//! watch (every informer synced, the garbage collector's graph built). What only start-up
//! needed can go then; the binary pages out the code that ran for it (see its `code_pages`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use client::informer::InformerFactory;
use tokio::sync::watch;
use tracing::debug;

use crate::controllers::Controllers;

/// How long start-up may take before it is taken as over anyway (a server that is not the
/// controllers' leader never sees them start).
const AT_MOST: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);

fn over() -> &'static watch::Sender<bool> {
    static OVER: OnceLock<watch::Sender<bool>> = OnceLock::new();
    OVER.get_or_init(|| watch::channel(false).0)
}

/// Resolves once this process's start-up is over.
pub async fn complete() {
    let mut over = over().subscribe();
    // The sender lives in a static: waiting cannot fail.
    let _ = over.wait_for(|over| *over).await;
}

/// Marks start-up over once the controllers have synced (at most [`AT_MOST`] from now).
pub(crate) async fn finish(
    informers: Arc<InformerFactory>,
    controllers: Arc<Controllers>,
    controllers_enabled: bool,
) {
    finish_within(informers, controllers, controllers_enabled, AT_MOST).await;
}

async fn finish_within(
    informers: Arc<InformerFactory>,
    controllers: Arc<Controllers>,
    controllers_enabled: bool,
    at_most: Duration,
) {
    let deadline = tokio::time::Instant::now() + at_most;
    while controllers_enabled && tokio::time::Instant::now() < deadline {
        let gc_synced = controllers
            .garbage_collector()
            .is_some_and(|gc| gc.is_synced());
        if gc_synced && informers.all_synced() {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    debug!("start-up over");
    over().send_replace(true);
}

#[cfg(test)]
mod tests {
    use client::informer::InformerConfig;
    use test_support::TestBackend;

    use super::*;

    /// One test: the signal is the process's. Controllers that never report a synced garbage
    /// collector (a server that does not lead) keep start-up open until the bound, not beyond.
    #[tokio::test]
    async fn start_up_ends_when_the_controllers_sync_or_at_the_bound() {
        let backend = TestBackend::embedded().await;
        let registry = crate::testing::registry(&backend).await;
        let informers = InformerFactory::new(registry, InformerConfig::default());
        let waiting = tokio::spawn(complete());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "over before it began");
        let started = tokio::time::Instant::now();
        finish_within(
            informers,
            Arc::new(Controllers::default()),
            true,
            Duration::from_millis(300),
        )
        .await;
        assert!(started.elapsed() >= Duration::from_millis(300));
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("start-up reported over")
            .expect("the waiter");
        // Later waiters return at once.
        tokio::time::timeout(Duration::from_millis(100), complete())
            .await
            .expect("still over");
    }
}
