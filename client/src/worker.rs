//! The worker loop every controller runs (client-go's `processNextWorkItem` repeated by N
//! goroutines): take a key, sync it, tell the queue what comes next, mark it done. A key is
//! never synced by two workers at once; failures are retried with the queue's rate limiter.

use std::future::Future;
use std::hash::Hash;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::informer::{wait_for_sync, SharedInformer};
use crate::workqueue::RateLimitingQueue;

/// What the queue does with a key after its sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Nothing more to do: its retry count is forgotten.
    Done,
    /// Look again after a while (expectations, grace periods, minReadySeconds), not a failure.
    After(Duration),
    /// It failed: again after the rate limiter's backoff.
    Retry,
}

impl Next {
    /// Done when the sync succeeded; otherwise `on_error` reports the error (with the context
    /// the caller has) and the key is retried.
    pub fn after_sync<E>(result: Result<(), E>, on_error: impl FnOnce(E)) -> Next {
        match result {
            Ok(()) => Next::Done,
            Err(e) => {
                on_error(e);
                Next::Retry
            }
        }
    }
}

impl<E: std::fmt::Display> From<Result<Option<Duration>, E>> for Next {
    /// Ok(None) is done, Ok(Some(d)) looks again after `d`; an error is retried (the caller
    /// logs it with the context it has).
    fn from(result: Result<Option<Duration>, E>) -> Self {
        match result {
            Ok(None) => Next::Done,
            Ok(Some(after)) => Next::After(after),
            Err(_) => Next::Retry,
        }
    }
}

/// A controller's life once its event handlers are registered: wait until `informers` have
/// synced (upstream's WaitForCacheSync), then run the workers until `stop`. The queue is shut
/// down either way, so handlers still firing add nothing.
pub async fn run_when_synced<K, F, Fut>(
    name: &'static str,
    informers: &[&SharedInformer],
    queue: RateLimitingQueue<K>,
    workers: usize,
    stop: CancellationToken,
    sync: F,
) where
    K: Clone + Eq + Hash + Send + Sync + std::fmt::Debug + 'static,
    F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Next> + Send + 'static,
{
    let synced = tokio::select! {
        synced = wait_for_sync(informers) => synced,
        () = stop.cancelled() => false,
    };
    if synced {
        run_workers(name, queue.clone(), workers, stop, sync).await;
    } else if !stop.is_cancelled() {
        warn!(controller = name, "informers stopped before they synced");
    }
    queue.shut_down();
}

/// Runs `workers` workers over `queue` until `stop` fires, then shuts the queue down and
/// waits for them. A sync in flight when `stop` fires is dropped where it is: every sync must
/// be safe to repeat, since whoever runs next starts it again.
pub async fn run_workers<K, F, Fut>(
    name: &'static str,
    queue: RateLimitingQueue<K>,
    workers: usize,
    stop: CancellationToken,
    sync: F,
) where
    K: Clone + Eq + Hash + Send + Sync + std::fmt::Debug + 'static,
    F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Next> + Send + 'static,
{
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        let queue = queue.clone();
        let stop = stop.clone();
        let sync = sync.clone();
        tasks.spawn(async move {
            while let Some(key) = queue.get().await {
                // Boxed: held inline, a sync's future would size every idle worker's task to
                // it (some are kilobytes; the garbage collector alone runs 192 workers).
                let next = tokio::select! {
                    () = stop.cancelled() => {
                        queue.done(&key);
                        break;
                    }
                    next = Box::pin(sync(key.clone())) => next,
                };
                match next {
                    Next::Done => queue.forget(&key),
                    Next::After(after) => {
                        queue.forget(&key);
                        queue.add_after(key.clone(), after);
                    }
                    Next::Retry => queue.add_rate_limited(key.clone()),
                }
                queue.done(&key);
            }
        });
    }
    stop.cancelled().await;
    queue.shut_down();
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            warn!(controller = name, error = %e, "worker failed");
        }
    }
}
