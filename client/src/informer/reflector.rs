//! The Reflector: lists a resource into a DeltaFIFO, then watches from the list's
//! resourceVersion and feeds every change in. A watch that ends or breaks resumes from the last
//! resourceVersion seen; one that is too old (410, the history was compacted) falls back to a
//! relist, whose Replace reports the deletions the watch missed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use registry::options::ListOptions;
use registry::store::{EncodedEvent, EncodedEvents};
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::backoff::Backoff;
use super::delta_fifo::DeltaFifo;
use super::lister_watcher::ListerWatcher;

const GONE: u16 = 410;

#[derive(Clone, Debug)]
pub struct ReflectorConfig {
    /// How often known objects are re-delivered as Sync deltas (None: never).
    pub resync_period: Option<Duration>,
    /// First wait after a failed list or watch; it doubles up to `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// A watch ending sooner than this without delivering anything counts as a failure, so a
    /// stream that keeps closing at once is retried with backoff rather than in a hot loop.
    pub min_watch_duration: Duration,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        Self {
            resync_period: None,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(30),
            min_watch_duration: Duration::from_secs(1),
        }
    }
}

/// Which state the next list asks for (upstream's relistResourceVersion).
#[derive(Clone, Debug, PartialEq, Eq)]
enum ListFrom {
    /// Anything recent: the first list, served by the watch cache.
    Any,
    /// At least what was already seen, so the informer never goes back in time.
    NotOlderThan(String),
    /// The latest state: the resourceVersion last seen is itself too old to list at.
    Latest,
}

impl ListFrom {
    fn options(&self) -> ListOptions {
        ListOptions {
            resource_version: match self {
                Self::Any => Some("0".into()),
                Self::NotOlderThan(rv) => Some(rv.clone()),
                Self::Latest => None,
            },
            ..Default::default()
        }
    }
}

/// Why a watch cycle ended.
enum WatchEnd {
    Stopped,
    /// The resourceVersion is no longer served: list again, no waiting.
    TooOld,
    /// Something else failed: list again after a backoff.
    Failed,
}

enum StreamEnd {
    Stopped,
    /// Closed, or an error that a fresh watch from the same point may fix.
    Closed {
        delivered: bool,
    },
    Failed,
}

pub struct Reflector {
    lister_watcher: Arc<dyn ListerWatcher>,
    fifo: Arc<DeltaFifo>,
    config: ReflectorConfig,
    last_sync_resource_version: Mutex<String>,
}

impl Reflector {
    pub fn new(
        lister_watcher: Arc<dyn ListerWatcher>,
        fifo: Arc<DeltaFifo>,
        config: ReflectorConfig,
    ) -> Self {
        Self {
            lister_watcher,
            fifo,
            config,
            last_sync_resource_version: Mutex::new(String::new()),
        }
    }

    /// The resourceVersion of the last list or change seen ("" before the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.last_sync_resource_version
            .lock()
            .map(|rv| rv.clone())
            .unwrap_or_default()
    }

    fn set_resource_version(&self, rv: &str) {
        if let Ok(mut last) = self.last_sync_resource_version.lock() {
            rv.clone_into(&mut last);
        }
    }

    fn name(&self) -> String {
        self.lister_watcher.describe()
    }

    /// Lists and watches until `stop` is cancelled.
    pub async fn run(&self, stop: CancellationToken) {
        let mut backoff = Backoff::new(self.config.initial_backoff, self.config.max_backoff);
        let mut resync = self.config.resync_period.map(|period| {
            let mut ticker = tokio::time::interval_at(Instant::now() + period, period);
            ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
            ticker
        });
        let mut from = ListFrom::Any;
        loop {
            let listed = tokio::select! {
                () = stop.cancelled() => return,
                listed = self.list(&from) => listed,
            };
            match listed {
                Ok(()) => {}
                Err(code) => {
                    if code == GONE && from != ListFrom::Latest {
                        info!(resource = %self.name(), "resourceVersion too old to list at; listing the latest state");
                        from = ListFrom::Latest;
                        continue;
                    }
                    if !sleep(&stop, backoff.next_delay()).await {
                        return;
                    }
                    continue;
                }
            }
            match self.watch(&stop, &mut backoff, &mut resync).await {
                WatchEnd::Stopped => return,
                WatchEnd::TooOld => {}
                WatchEnd::Failed => {
                    if !sleep(&stop, backoff.next_delay()).await {
                        return;
                    }
                }
            }
            from = ListFrom::NotOlderThan(self.last_sync_resource_version());
        }
    }

    /// Lists and replaces the FIFO's content; the error is the failure's HTTP code.
    async fn list(&self, from: &ListFrom) -> Result<(), u16> {
        let list = self
            .lister_watcher
            .list(&from.options())
            .await
            .map_err(|e| {
                warn!(resource = %self.name(), error = %e, "list failed");
                e.code()
            })?;
        let rv = list.revision.to_string();
        debug!(resource = %self.name(), resource_version = %rv, items = list.items.len(), "listed");
        if let Err(e) = self.fifo.replace(list.items, &rv) {
            warn!(resource = %self.name(), error = %e, "list has an object without a name");
            return Err(500);
        }
        self.set_resource_version(&rv);
        Ok(())
    }

    /// Watches from the last resourceVersion, again and again, until a relist is needed.
    async fn watch(
        &self,
        stop: &CancellationToken,
        backoff: &mut Backoff,
        resync: &mut Option<Interval>,
    ) -> WatchEnd {
        loop {
            let opts = ListOptions {
                resource_version: Some(self.last_sync_resource_version()),
                allow_watch_bookmarks: true,
                ..Default::default()
            };
            let started = Instant::now();
            let watched = tokio::select! {
                () = stop.cancelled() => return WatchEnd::Stopped,
                watched = self.lister_watcher.watch(&opts) => watched,
            };
            let stream = match watched {
                Ok(stream) => stream,
                Err(e) if e.code() == GONE => {
                    info!(resource = %self.name(), error = %e, "watch too old; relisting");
                    return WatchEnd::TooOld;
                }
                // The backend is away (503) or the cache is behind (504): the same watch
                // will do once it is back.
                Err(e) if matches!(e.code(), 503 | 504) => {
                    warn!(resource = %self.name(), error = %e, "watch failed; retrying");
                    if !sleep(stop, backoff.next_delay()).await {
                        return WatchEnd::Stopped;
                    }
                    continue;
                }
                Err(e) => {
                    warn!(resource = %self.name(), error = %e, "watch failed; relisting");
                    return WatchEnd::Failed;
                }
            };
            match self.follow(stop, stream, resync).await {
                StreamEnd::Stopped => return WatchEnd::Stopped,
                StreamEnd::Failed => return WatchEnd::Failed,
                StreamEnd::Closed { delivered } => {
                    if delivered || started.elapsed() >= self.config.min_watch_duration {
                        backoff.reset();
                    } else if !sleep(stop, backoff.next_delay()).await {
                        return WatchEnd::Stopped;
                    }
                }
            }
        }
    }

    /// Feeds one watch stream's events into the FIFO until it ends.
    async fn follow(
        &self,
        stop: &CancellationToken,
        mut stream: EncodedEvents,
        resync: &mut Option<Interval>,
    ) -> StreamEnd {
        let mut delivered = false;
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => return StreamEnd::Stopped,
                _ = tick(resync) => {
                    if let Err(e) = self.fifo.resync() {
                        warn!(resource = %self.name(), error = %e, "resync failed");
                    }
                    continue;
                }
                event = stream.next() => event,
            };
            let Some(event) = event else {
                debug!(resource = %self.name(), "watch closed; resuming");
                return StreamEnd::Closed { delivered };
            };
            let rv = event.revision();
            let is_bookmark = matches!(event, EncodedEvent::Bookmark { .. });
            let fed = match event {
                EncodedEvent::Added(object) => self.fifo.add(object),
                EncodedEvent::Modified(object) => self.fifo.update(object),
                EncodedEvent::Deleted(object) => self.fifo.delete(object),
                EncodedEvent::Bookmark { .. } => Ok(()),
                EncodedEvent::Error(e) => {
                    if e.code() == GONE {
                        // Resuming from the last resourceVersion tells whether a relist is
                        // needed: if that, too, is gone, the watch call says so.
                        info!(resource = %self.name(), error = %e, "watch expired; resuming");
                        return StreamEnd::Closed { delivered };
                    }
                    warn!(resource = %self.name(), error = %e, "watch error; relisting");
                    return StreamEnd::Failed;
                }
            };
            if let Err(e) = fed {
                warn!(resource = %self.name(), error = %e, "watch event without an object name");
                continue;
            }
            if let Some(rv) = rv {
                self.set_resource_version(&rv.to_string());
            }
            delivered |= !is_bookmark;
        }
    }
}

/// The next resync tick, or never.
async fn tick(resync: &mut Option<Interval>) {
    match resync {
        Some(ticker) => {
            ticker.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Sleeps unless stopped first; false when stopped.
async fn sleep(stop: &CancellationToken, delay: Duration) -> bool {
    tokio::select! {
        () = stop.cancelled() => false,
        () = tokio::time::sleep(delay) => true,
    }
}

#[cfg(test)]
mod tests;
