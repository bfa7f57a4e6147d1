//! One watcher of the cache: its backlog from the window (or the initial state), then the live
//! fan-out, filtered by its key range and predicate. A watcher too slow for the fan-out buffer
//! catches up from the window; one the window has left behind gets TooOld and relists.

use std::sync::{Arc, RwLock};

use futures::StreamExt;
use tokio::sync::broadcast;

use super::state::{CacheMessage, CacheState, CachedEvent};
use crate::backend::KeyRange;
use crate::store::events::{added, matches, watch_event_of};
use crate::{KeyValue, Result, StorageError, WatchEvent, WatchOptions, WatchStream};

struct Watcher {
    range: KeyRange,
    opts: WatchOptions,
    state: Arc<RwLock<CacheState>>,
    /// Sequence number of the last change this watcher has looked at.
    position: u64,
    /// Revision of that change, for error messages and bookmarks.
    revision: i64,
}

impl Watcher {
    /// The event this watcher sees for a change, if any; advances its position.
    fn observe(&mut self, change: &CachedEvent) -> Option<WatchEvent> {
        if change.seq <= self.position {
            return None;
        }
        self.position = change.seq;
        self.revision = change.revision();
        if !self.range.contains(&change.kv.key) {
            return None;
        }
        watch_event_of(
            change.kind,
            &change.kv,
            change.prev.as_deref(),
            &change.kv.key,
            &self.opts.predicate,
        )
    }

    fn too_old(&self) -> StorageError {
        let oldest = self
            .state
            .read()
            .map(|s| s.window_start)
            .unwrap_or_default();
        StorageError::TooOld {
            requested: self.revision,
            oldest,
        }
    }

    /// Changes after this watcher's position from the window, and a fresh receiver that
    /// continues exactly where they end (both taken under the lock the feed writes under).
    fn catch_up(&self) -> Result<(Vec<Arc<CachedEvent>>, broadcast::Receiver<CacheMessage>)> {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        let backlog = state.since(self.position).ok_or_else(|| self.too_old())?;
        Ok((backlog, state.subscribe()))
    }
}

/// Sets up a watcher: `range` is over relative keys; the cache is already fresh enough.
pub fn start(
    state: Arc<RwLock<CacheState>>,
    range: KeyRange,
    opts: WatchOptions,
) -> Result<WatchStream> {
    // The initial state is a snapshot of pointers, turned into events as the watcher reads
    // them: a watch of 100,000 objects does not queue 100,000 events up front.
    let mut initial: Vec<Arc<KeyValue>> = Vec::new();
    let mut initial_end = None;
    let (backlog, rx, position, revision) = {
        let s = state.read().unwrap_or_else(|p| p.into_inner());
        if opts.initial_events() {
            initial.extend(s.objects.within(&range).cloned());
            if opts.send_initial_events == Some(true) {
                let mut end = WatchEvent::bookmark(s.revision);
                end.initial_events_end = true;
                initial_end = Some(Ok(end));
            }
            (Vec::new(), s.subscribe(), s.end_position(), s.revision)
        } else {
            // Revision 0 without initial state: from now on.
            let from = if opts.revision == 0 {
                s.revision
            } else {
                opts.revision
            };
            let too_old = || StorageError::TooOld {
                requested: from,
                oldest: s.window_start,
            };
            let position = s.position_of(from).ok_or_else(too_old)?;
            let backlog = s.since(position).ok_or_else(too_old)?;
            (backlog, s.subscribe(), position, from)
        }
    };
    let mut watcher = Watcher {
        range,
        opts,
        state,
        position,
        revision,
    };
    let backlog: Vec<Result<WatchEvent>> = backlog
        .iter()
        .filter_map(|c| watcher.observe(c))
        .map(Ok)
        .collect();
    let predicate = watcher.opts.predicate.clone();
    let first = initial
        .into_iter()
        .filter(move |kv| matches(&predicate, kv))
        .map(|kv| Ok(added(&kv)))
        .chain(initial_end)
        .chain(backlog);
    let live = async_stream::try_stream! {
        let mut rx = rx;
        let mut last_bookmark = watcher.revision;
        loop {
            match rx.recv().await {
                Ok(CacheMessage::Event(change)) => {
                    if let Some(e) = watcher.observe(&change) {
                        yield e;
                    }
                }
                Ok(CacheMessage::Progress(revision)) => {
                    if watcher.opts.bookmarks && revision > last_bookmark && revision >= watcher.revision {
                        last_bookmark = revision;
                        yield WatchEvent::bookmark(revision);
                    }
                }
                Ok(CacheMessage::Reset) => Err(watcher.too_old())?,
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let (backlog, fresh) = watcher.catch_up()?;
                    rx = fresh;
                    for change in backlog {
                        if let Some(e) = watcher.observe(&change) {
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
