//! One watcher of the cache: its backlog from the window (or the initial state), then the live
//! fan-out, filtered by its key range and predicate. A watcher too slow for the fan-out buffer
//! catches up from the window, a few changes at a time; one the window has left behind gets
//! TooOld and relists.
//!
//! What a watcher holds is bounded, however far behind it is: its position, and at most
//! [`CATCH_UP_BATCH`] pointers into the window while it catches up. The fan-out never waits
//! for a watcher (it is a ring every watcher reads from), so, unlike upstream's cacher, whose
//! dispatcher pushes each change into every watcher's own buffer and closes a watcher that
//! keeps it waiting past its budget (`dispatchTimeoutBudget`), a slow watcher is not closed:
//! it costs the others nothing. One the window has left behind ends as upstream's would after
//! its client watched again from its last resourceVersion: 410 Expired.

use std::sync::{Arc, RwLock};

use futures::StreamExt;
use tokio::sync::broadcast;

use super::shared::SharedEncodings;
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
    /// The event this watcher sees for a change, if any; advances its position. The event
    /// carries the change, where what a sender makes of it is kept for the other watchers.
    fn observe(&mut self, change: &Arc<CachedEvent>) -> Option<WatchEvent> {
        if change.seq <= self.position {
            return None;
        }
        self.position = change.seq;
        self.revision = change.revision();
        if !self.range.contains(&change.kv.key) {
            return None;
        }
        let mut event = watch_event_of(
            change.kind,
            &change.kv,
            change.prev.as_deref(),
            &change.kv.key,
            &self.opts.predicate,
        )?;
        event.shared = Some(SharedEncodings::new(change.clone()));
        Some(event)
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

    /// The next changes after this watcher's position from the window, at most
    /// [`CATCH_UP_BATCH`] of them, and once they reach its end a fresh receiver that continues
    /// exactly there (both taken under the lock the feed writes under).
    fn catch_up(&self) -> Result<CatchUp> {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        let (batch, complete) = state
            .since_at_most(self.position, CATCH_UP_BATCH)
            .ok_or_else(|| self.too_old())?;
        let live = complete.then(|| state.subscribe());
        Ok((batch, live))
    }
}

/// The most changes a watcher takes from the window at once while it catches up.
pub(super) const CATCH_UP_BATCH: usize = 64;

/// A batch of changes from the window, and the receiver of the live fan-out once the batch
/// reaches the window's end.
type CatchUp = (
    Vec<Arc<CachedEvent>>,
    Option<broadcast::Receiver<CacheMessage>>,
);

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
    let (rx, position, revision) = {
        let s = state.read().unwrap_or_else(|p| p.into_inner());
        if opts.initial_events() {
            initial.extend(s.objects.within(&range).cloned());
            if opts.send_initial_events == Some(true) {
                let mut end = WatchEvent::bookmark(s.revision);
                end.initial_events_end = true;
                initial_end = Some(Ok(end));
            }
            (Some(s.subscribe()), s.end_position(), s.revision)
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
            // A watch from the past reads the window from its position, a batch at a time,
            // before it joins the fan-out.
            let rx = (position == s.end_position()).then(|| s.subscribe());
            (rx, position, from)
        }
    };
    let watcher = Watcher {
        range,
        opts,
        state,
        position,
        revision,
    };
    let predicate = watcher.opts.predicate.clone();
    let first = initial
        .into_iter()
        .filter(move |kv| matches(&predicate, kv))
        .map(|kv| Ok(added(&kv)))
        .chain(initial_end);
    let live = live(watcher, rx);
    Ok(futures::stream::iter(first).chain(live).boxed())
}

/// The watcher's changes: from the fan-out while it keeps up (`rx`), from the window while it
/// catches up (no receiver: it holds nothing the fan-out has sent).
fn live(
    mut watcher: Watcher,
    rx: Option<broadcast::Receiver<CacheMessage>>,
) -> impl futures::Stream<Item = Result<WatchEvent>> {
    async_stream::try_stream! {
        let mut rx = rx;
        let mut last_bookmark = watcher.revision;
        loop {
            let Some(receiver) = rx.as_mut() else {
                let (batch, fresh) = watcher.catch_up()?;
                rx = fresh;
                for change in batch {
                    if let Some(e) = watcher.observe(&change) {
                        yield e;
                    }
                }
                continue;
            };
            match receiver.recv().await {
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
                // Fallen behind the fan-out's buffer: on from the window.
                Err(broadcast::error::RecvError::Lagged(_)) => rx = None,
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bytes::Bytes;

    use super::*;
    use crate::backend::{RawEvent, RawEventKind};
    use crate::cacher::state::Objects;

    fn put(key: &str, revision: i64) -> RawEvent {
        RawEvent {
            kind: RawEventKind::Put,
            kv: KeyValue {
                key: key.into(),
                value: Bytes::from(format!("v{revision}")),
                create_revision: revision,
                mod_revision: revision,
                version: 1,
            },
            prev: None,
        }
    }

    /// A cache listed at revision 1, its window of `window` changes, its fan-out of `fanout`.
    fn cache(window: usize, fanout: usize) -> Arc<RwLock<CacheState>> {
        let mut s = CacheState::new(window, fanout);
        s.reset(Objects::default(), 1);
        Arc::new(RwLock::new(s))
    }

    fn after(revision: i64) -> WatchOptions {
        WatchOptions {
            revision,
            recursive: true,
            ..Default::default()
        }
    }

    fn apply(state: &Arc<RwLock<CacheState>>, revisions: std::ops::RangeInclusive<i64>) {
        let mut s = state.write().unwrap_or_else(|p| p.into_inner());
        for r in revisions {
            s.apply(put(&format!("/k{}", r % 7), r));
        }
    }

    /// Thousands of watchers of one change make one encoding of it: every watcher's event
    /// carries the same change, and what the first sender made is what the others send.
    #[tokio::test]
    async fn every_watcher_of_a_change_shares_what_is_made_of_it() {
        let state = cache(100, 16);
        let mut watchers: Vec<_> = (0..3)
            .map(|_| start(state.clone(), KeyRange::prefix("/"), after(1)).expect("watch"))
            .collect();
        apply(&state, 2..=2);
        let made = AtomicUsize::new(0);
        let mut sent = Vec::new();
        for w in &mut watchers {
            let event = w.next().await.expect("an event").expect("no error");
            let shared = event.shared.expect("a change of the cache");
            sent.push(shared.get_or_make(7, || {
                made.fetch_add(1, Ordering::Relaxed);
                Bytes::from_static(b"frame")
            }));
        }
        assert_eq!(
            made.load(Ordering::Relaxed),
            1,
            "made once for three watchers"
        );
        assert!(
            sent.iter().all(|b| b.as_ptr() == sent[0].as_ptr()),
            "one allocation"
        );
        // An initial state is the watcher's own: nothing to share.
        let mut initial = start(state.clone(), KeyRange::prefix("/"), after(0)).expect("watch");
        let added = initial.next().await.expect("an event").expect("no error");
        assert_eq!(added.kind, crate::EventKind::Added);
        assert!(added.shared.is_none());
    }

    /// A watcher far behind the fan-out takes the window a bounded batch at a time (never a
    /// copy of all it missed), and receives every change, in order.
    #[tokio::test]
    async fn a_watcher_behind_the_fan_out_catches_up_in_bounded_batches() {
        let state = cache(1000, 16);
        let mut stream = start(state.clone(), KeyRange::prefix("/"), after(1)).expect("watch");
        apply(&state, 2..=301);
        let position = state.read().expect("state").position_of(1);
        let mut watcher = Watcher {
            range: KeyRange::prefix("/"),
            opts: after(1),
            state: state.clone(),
            position: position.expect("in window"),
            revision: 1,
        };
        let mut batches = Vec::new();
        loop {
            let (batch, live) = watcher.catch_up().expect("in window");
            batches.push(batch.len());
            for change in &batch {
                watcher.observe(change);
            }
            if live.is_some() {
                break;
            }
        }
        assert_eq!(batches, [64, 64, 64, 64, 44]);
        let mut revisions = Vec::new();
        for _ in 2..=301 {
            let event = stream.next().await.expect("an event").expect("no error");
            revisions.push(event.revision);
        }
        assert_eq!(revisions, (2..=301).collect::<Vec<_>>());
        // Caught up, it is back on the fan-out.
        apply(&state, 302..=302);
        let next = stream.next().await.expect("an event").expect("no error");
        assert_eq!(next.revision, 302);
    }
}
