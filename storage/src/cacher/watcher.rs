//! One watcher of the cache: its backlog from the window (or the initial state), then the live
//! fan-out, filtered by its key range and predicate. A watcher too slow for the fan-out buffer
//! catches up from the window; one the window has left behind gets TooOld and relists.

use std::sync::{Arc, RwLock};

use futures::StreamExt;
use tokio::sync::broadcast;

use super::state::{CacheMessage, CacheState};
use crate::backend::{KeyRange, RawEvent};
use crate::store::events::{added, matches, to_watch_event};
use crate::{Result, StorageError, WatchEvent, WatchOptions, WatchStream};

struct Watcher {
    range: KeyRange,
    opts: WatchOptions,
    state: Arc<RwLock<CacheState>>,
    /// Revision of the last change this watcher has looked at.
    seen: i64,
}

impl Watcher {
    fn convert(&self, event: &RawEvent) -> Option<WatchEvent> {
        if !self.range.contains(&event.kv.key) {
            return None;
        }
        to_watch_event(event, &event.kv.key, &self.opts.predicate)
    }

    fn too_old(&self) -> StorageError {
        let oldest = self
            .state
            .read()
            .map(|s| s.window_start)
            .unwrap_or_default();
        StorageError::TooOld {
            requested: self.seen,
            oldest,
        }
    }

    /// Changes after `seen` from the window, and a fresh receiver that continues exactly
    /// where they end (both taken under the lock the feed writes under).
    fn catch_up(&self) -> Result<(Vec<Arc<RawEvent>>, broadcast::Receiver<CacheMessage>)> {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        let backlog = state.since(self.seen).ok_or_else(|| self.too_old())?;
        Ok((backlog, state.tx.subscribe()))
    }
}

/// Sets up a watcher: `range` is over relative keys; the cache is already fresh enough.
pub fn start(
    state: Arc<RwLock<CacheState>>,
    range: KeyRange,
    opts: WatchOptions,
) -> Result<WatchStream> {
    let mut first: Vec<Result<WatchEvent>> = Vec::new();
    let (backlog, rx, seen) = {
        let s = state.read().unwrap_or_else(|p| p.into_inner());
        if opts.initial_events() {
            let from =
                std::ops::Bound::Included(String::from_utf8_lossy(&range.start).into_owned());
            let to = match &range.end {
                None => {
                    std::ops::Bound::Included(String::from_utf8_lossy(&range.start).into_owned())
                }
                Some(end) => std::ops::Bound::Excluded(String::from_utf8_lossy(end).into_owned()),
            };
            first.extend(
                s.objects
                    .range::<String, _>((from, to))
                    .map(|(_, kv)| kv)
                    .filter(|kv| matches(&opts.predicate, kv))
                    .map(|kv| Ok(added(kv))),
            );
            if opts.send_initial_events == Some(true) {
                let mut end = WatchEvent::bookmark(s.revision);
                end.initial_events_end = true;
                first.push(Ok(end));
            }
            (Vec::new(), s.tx.subscribe(), s.revision)
        } else {
            let backlog = s.since(opts.revision).ok_or(StorageError::TooOld {
                requested: opts.revision,
                oldest: s.window_start,
            })?;
            (backlog, s.tx.subscribe(), opts.revision)
        }
    };
    let mut watcher = Watcher {
        range,
        opts,
        state,
        seen,
    };
    for event in &backlog {
        watcher.seen = event.kv.mod_revision;
        if let Some(e) = watcher.convert(event) {
            first.push(Ok(e));
        }
    }
    let live = async_stream::try_stream! {
        let mut rx = rx;
        let mut last_bookmark = watcher.seen;
        loop {
            match rx.recv().await {
                Ok(CacheMessage::Event(event)) => {
                    if event.kv.mod_revision <= watcher.seen {
                        continue;
                    }
                    watcher.seen = event.kv.mod_revision;
                    if let Some(e) = watcher.convert(&event) {
                        yield e;
                    }
                }
                Ok(CacheMessage::Progress(revision)) => {
                    if watcher.opts.bookmarks && revision > last_bookmark && revision >= watcher.seen {
                        last_bookmark = revision;
                        yield WatchEvent::bookmark(revision);
                    }
                }
                Ok(CacheMessage::Reset) => Err(watcher.too_old())?,
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let (backlog, fresh) = watcher.catch_up()?;
                    rx = fresh;
                    for event in backlog {
                        watcher.seen = event.kv.mod_revision;
                        if let Some(e) = watcher.convert(&event) {
                            yield e;
                        }
                    }
                }
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    };
    Ok(futures::stream::iter(first).chain(live).boxed())
}
