//! The election on a thread of its own. Renewals are timed: a leader whose renewal waits behind
//! a busy runtime's queue past the renew deadline loses the lease although nobody else wants it,
//! and in this server that restarts every controller, the scheduler and the nodes at the worst
//! moment. Run on their own thread and runtime, renewals keep their timing however busy the
//! leader's work keeps the server's runtime; the work itself still runs there.

use std::future::Future;

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{error, warn};

use super::{LeaderElector, StopSignal};

impl LeaderElector {
    /// Runs [`LeaderElector::run`] on a thread of its own until `shutdown` is cancelled; each
    /// term's work (`lead`) is spawned on `work`. The returned task (on the calling runtime)
    /// ends when the election has (released the lease if configured and) stopped. Needs a
    /// tokio runtime.
    pub fn spawn_on_own_thread<F, Fut>(
        self,
        work: Handle,
        shutdown: CancellationToken,
        mut lead: F,
    ) -> std::io::Result<JoinHandle<()>>
    where
        F: FnMut(StopSignal) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let work_runtime = work;
        let (done, finished) = oneshot::channel::<()>();
        let lease = self.lease();
        std::thread::Builder::new()
            .name("leader-election".into())
            .spawn(move || {
                let runtime = match Builder::new_current_thread().enable_all().build() {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        error!(%lease, error = %e, "no runtime for the leader election");
                        return;
                    }
                };
                runtime.block_on(self.run(shutdown.cancelled_owned(), move |stop| {
                    let work = work_runtime.spawn(lead(stop));
                    let lease = lease.clone();
                    async move {
                        if let Err(e) = work.await {
                            warn!(%lease, error = %e, "the leader's work failed");
                        }
                    }
                }));
                let _ = done.send(());
            })?;
        Ok(tokio::spawn(async move {
            let _ = finished.await;
        }))
    }
}
