//! The election loop: campaign until the lease is ours, lead while renewals keep succeeding,
//! then campaign again, until shutdown.

use std::future::Future;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::watch;
use tokio::time::{sleep, timeout, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::config::JITTER_FACTOR;
use super::elector::{Attempt, LeaderElector};
use super::lock::LockError;
use super::{Leadership, StopSignal};

/// Why a term of leadership ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ended {
    Shutdown,
    Lost,
}

/// Clears the leading flag however `run` ends, aborted tasks included, so nobody watching keeps
/// seeing a leader that no longer exists.
struct NotLeadingOnDrop(watch::Sender<Leadership>);

impl Drop for NotLeadingOnDrop {
    fn drop(&mut self) {
        self.0
            .send_if_modified(|s| std::mem::replace(&mut s.leading, false));
    }
}

impl LeaderElector {
    /// Runs until `shutdown` resolves. Each time this candidate acquires the lease it calls
    /// `lead` with a [`StopSignal`] that fires when leadership is lost or shutdown begins, and
    /// waits for the future `lead` returned to finish before it campaigns again or releases
    /// the lease: `lead` must return promptly once stopped. A `lead` future that ends early
    /// does not give the lease up (as upstream, the term lasts until renewal fails).
    pub async fn run<F, Fut>(mut self, shutdown: impl Future<Output = ()>, mut lead: F)
    where
        F: FnMut(StopSignal) -> Fut,
        Fut: Future<Output = ()>,
    {
        let _guard = NotLeadingOnDrop(self.state.clone());
        let shutdown = shutdown.fuse();
        tokio::pin!(shutdown);
        loop {
            info!(lease = %self.lease(), identity = %self.identity(), "campaigning for leadership");
            let acquired = tokio::select! {
                () = &mut shutdown => break,
                acquired = self.acquire() => acquired,
            };
            self.set_leading(true);
            info!(lease = %self.lease(), identity = %self.identity(), "acquired leadership");

            // Cancelled when the term ends, and should this future be dropped mid-term.
            let term = CancellationToken::new();
            let stop = term.clone().drop_guard();
            let work = lead(StopSignal::new(term));
            tokio::pin!(work);
            let mut work_done = false;
            let lease = self.lease();
            let ended = {
                let term = async {
                    tokio::select! {
                        () = &mut shutdown => Ended::Shutdown,
                        () = self.renew(acquired) => Ended::Lost,
                    }
                };
                tokio::pin!(term);
                loop {
                    tokio::select! {
                        ended = &mut term => break ended,
                        () = &mut work, if !work_done => {
                            work_done = true;
                            warn!(%lease, "the leader's work ended while still leading");
                        }
                    }
                }
            };

            self.set_leading(false);
            drop(stop);
            if ended == Ended::Lost {
                warn!(lease = %self.lease(), identity = %self.identity(), "lost leadership");
            }
            if !work_done {
                work.await;
            }
            if ended == Ended::Shutdown {
                info!(lease = %self.lease(), identity = %self.identity(), "stopped leading: shutting down");
                if self.config.release_on_cancel {
                    self.release_within_deadline().await;
                }
                break;
            }
        }
    }

    /// Tries until the lease is ours; returns when the winning try began, the instant the
    /// renew deadline counts from.
    async fn acquire(&mut self) -> Instant {
        loop {
            let started = Instant::now();
            match timeout(self.config.renew_deadline, self.try_acquire_or_renew()).await {
                Ok(Attempt::Held) => return started,
                Ok(Attempt::HeldBy(holder)) => {
                    debug!(lease = %self.lease(), %holder, "lease held by another candidate")
                }
                Ok(Attempt::Failed(e)) => self.log_failure("acquire", &e),
                Err(_) => warn!(lease = %self.lease(), "acquiring the lease timed out"),
            }
            sleep(jittered(self.config.retry_period)).await;
        }
    }

    /// Renews every retry period; returns when leadership is lost: the lease was seen held by
    /// someone else, or no renewal succeeded within the renew deadline. The deadline counts
    /// from when the last successful try began, since others count the lease duration from
    /// when they saw its result, which is later.
    async fn renew(&mut self, mut last_success: Instant) {
        loop {
            sleep(self.config.retry_period).await;
            let deadline = last_success + self.config.renew_deadline;
            let started = Instant::now();
            if started >= deadline {
                warn!(lease = %self.lease(), "could not renew the lease within the renew deadline");
                return;
            }
            match timeout(deadline - started, self.try_acquire_or_renew()).await {
                Ok(Attempt::Held) => last_success = started,
                Ok(Attempt::HeldBy(holder)) => {
                    warn!(lease = %self.lease(), %holder, "the lease was taken by another candidate");
                    return;
                }
                Ok(Attempt::Failed(e)) => self.log_failure("renew", &e),
                Err(_) => {
                    warn!(lease = %self.lease(), "could not renew the lease within the renew deadline");
                    return;
                }
            }
        }
    }

    async fn release_within_deadline(&mut self) {
        match timeout(self.config.renew_deadline, self.release()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) if e.is_lost_race() => {
                debug!(lease = %self.lease(), "the lease changed before release: already taken")
            }
            Ok(Err(e)) => warn!(lease = %self.lease(), error = %e, "could not release the lease"),
            Err(_) => warn!(lease = %self.lease(), "releasing the lease timed out"),
        }
    }

    fn log_failure(&self, what: &str, e: &LockError) {
        if e.is_lost_race() {
            debug!(lease = %self.lease(), error = %e, "{what}: another candidate wrote first");
        } else {
            warn!(lease = %self.lease(), error = %e, "{what}: lease not written");
        }
    }
}

/// A pause between `period` and `(1 + JITTER_FACTOR) * period`.
fn jittered(period: Duration) -> Duration {
    period.mul_f64(1.0 + JITTER_FACTOR * rand::random::<f64>())
}
