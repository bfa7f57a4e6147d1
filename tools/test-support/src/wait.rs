//! Waiting for what happens in the background (a controller's work, a leader's election) to
//! become visible, failing the test when it does not in time.

use std::time::Duration;

/// Polls `done` until it holds; returns how long that took, for tests that bound it. Panics
/// after `limit`.
pub async fn eventually(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    // tokio's clock, so that it follows a test's paused time.
    let start = tokio::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        // Often: the durations measured are a few hundred milliseconds.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    start.elapsed()
}

/// [`eventually`] for tests without a runtime, whose checks are requests to a server.
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
