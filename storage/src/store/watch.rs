//! A watch served straight from the backend (no cache): optional initial state, then the
//! backend's changes after the start revision, filtered per the watcher's predicate.

use futures::StreamExt;

use super::events::{added, matches, watch_event_of};
use super::KvStore;
use crate::backend::{RangeRequest, WatchMessage};
use crate::{Result, StorageError, WatchEvent, WatchOptions, WatchStream};

pub async fn watch(store: &KvStore, key: &str, opts: WatchOptions) -> Result<WatchStream> {
    let (_, range) = store.key_range(key, opts.recursive);
    let mut initial = Vec::new();
    let mut from = opts.revision;
    if from == 0 && !opts.initial_events() {
        // From now on, without the current state.
        from = store.backend.current_revision().await?;
    }
    if opts.initial_events() {
        let resp = store
            .backend
            .range(RangeRequest {
                range: Some(range.clone()),
                ..Default::default()
            })
            .await?;
        if resp.revision < opts.revision {
            return Err(StorageError::TooLargeResourceVersion {
                requested: opts.revision,
                current: resp.revision,
            });
        }
        from = resp.revision;
        for kv in resp.kvs {
            let (kv, _) = store.decode(kv)?;
            if matches(&opts.predicate, &kv) {
                initial.push(Ok(added(&store.strip(kv))));
            }
        }
        if opts.send_initial_events == Some(true) {
            let mut end = WatchEvent::bookmark(from);
            end.initial_events_end = true;
            initial.push(Ok(end));
        }
    }
    // Deletions and selector moves are told from the previous value, which only the backend has.
    let backend_watch = store.backend.watch(range, from + 1, true).await?;
    let prefix = store.prefix.clone();
    let predicate = opts.predicate.clone();
    let bookmarks = opts.bookmarks;
    let decoder = store.clone();
    let changes = backend_watch.messages.flat_map(move |msg| {
        let out: Vec<Result<WatchEvent>> = match msg {
            Err(e) => vec![Err(e)],
            Ok(WatchMessage::Progress(rev)) if bookmarks => vec![Ok(WatchEvent::bookmark(rev))],
            Ok(WatchMessage::Progress(_)) => vec![],
            // A value that does not decrypt ends the watch with an error, as upstream's.
            Ok(WatchMessage::Events(events)) => events
                .into_iter()
                .filter_map(|e| match decoder.decode_event(e) {
                    Ok(e) => {
                        let key = e.kv.key.strip_prefix(&prefix).unwrap_or(&e.kv.key);
                        watch_event_of(e.kind, &e.kv, e.prev.as_ref(), key, &predicate).map(Ok)
                    }
                    Err(err) => Some(Err(err)),
                })
                .collect(),
        };
        futures::stream::iter(out)
    });
    // Keep the progress hook alive as long as the stream.
    let progress = backend_watch.progress;
    let changes = changes.map(move |e| {
        let _ = &progress;
        e
    });
    Ok(futures::stream::iter(initial).chain(changes).boxed())
}
