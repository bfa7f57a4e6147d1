//! The watch cache (upstream's Cacher), one per resource prefix: a single backend watch keeps
//! an in-memory copy of the resource and a window of recent changes, which serves every
//! watcher and the lists and gets that accept any recent state (`resourceVersion=0`).
//! Writes and reads that need the latest state go to the [`KvStore`].

mod feed;
mod shared;
mod state;
mod watcher;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

pub use self::shared::SharedEncodings;

use self::feed::Feed;
use self::state::CacheState;
use crate::backend::KeyRange;
use crate::interface::{Interface, UpdateFn, UpdateOptions, ValidateDeletion};
use crate::store::events::matches;
use crate::store::PAGE_ITEMS;
use crate::{KeyValue, ListOptions, ListPages, ListResult, Preconditions, ReadRevision, Result};
use crate::{KvStore, StorageError, WatchOptions, WatchStream};

/// How often a reader waiting for freshness asks the feed for progress again.
const PROGRESS_RETRY: Duration = Duration::from_millis(50);

#[derive(Clone, Debug)]
pub struct CacherConfig {
    /// The most changes kept for watchers that start in the past (upstream's watch cache
    /// upper bound): the window holds about the last 75 s of changes, at least 100 (see
    /// `CacheState::make_room`), never more than this.
    pub window: usize,
    /// Messages the fan-out buffers for a slow watcher before it falls back to the window.
    /// The channel reserves its slots up front (about 40 bytes each) for every resource
    /// with a watcher, and the controllers watch them all: 4096 slots were 4.7 MB of an idle
    /// server. A watcher further behind catches up from the window, a copy of pointers.
    pub fanout_buffer: usize,
    /// How often the cache asks the backend for progress, which becomes watchers' bookmarks.
    pub progress_interval: Duration,
    /// How long a read or watch waits for the cache to reach the revision it asked for.
    pub freshness_timeout: Duration,
    /// On a backend whose progress reports may run ahead of the changes (etcd before
    /// 3.4.26), a report is believed only after a read of the prefix shows nothing newer,
    /// and etcd reads every object under it for that. Unless a reader waits for the report,
    /// the check runs at most once per ten progress intervals, and once per this many cached
    /// objects' worth of seconds: at 150,000 pods, once every 30 s rather than every second
    /// (it had taken 60% of etcd).
    pub checked_objects_per_second: usize,
}

impl Default for CacherConfig {
    fn default() -> Self {
        Self {
            window: 10_000,
            fanout_buffer: 256,
            progress_interval: Duration::from_secs(1),
            freshness_timeout: Duration::from_secs(3),
            checked_objects_per_second: 5_000,
        }
    }
}

pub struct Cacher {
    store: KvStore,
    /// The resource's key prefix, relative to the storage prefix, ending in `/`.
    resource_prefix: String,
    state: Arc<RwLock<CacheState>>,
    revision_rx: watch::Receiver<i64>,
    progress_wanted: Arc<Notify>,
    config: CacherConfig,
    feed: JoinHandle<()>,
}

impl Drop for Cacher {
    fn drop(&mut self) {
        self.feed.abort();
    }
}

impl Cacher {
    /// Starts caching everything under `resource_prefix` (e.g. `/pods/`). Must be called
    /// inside a tokio runtime.
    pub fn new(store: KvStore, resource_prefix: &str, config: CacherConfig) -> Self {
        let mut resource_prefix = resource_prefix.to_string();
        if !resource_prefix.ends_with('/') {
            resource_prefix.push('/');
        }
        let state = Arc::new(RwLock::new(CacheState::new(
            config.window.max(1),
            config.fanout_buffer.max(16),
        )));
        let (revision_tx, revision_rx) = watch::channel(0);
        let progress_wanted = Arc::new(Notify::new());
        let feed = Feed {
            progress_wanted: progress_wanted.clone(),
            full_prefix: store.full_key(&resource_prefix),
            store: store.clone(),
            state: state.clone(),
            revision_tx,
            progress_interval: config.progress_interval,
            checked_objects_per_second: config.checked_objects_per_second,
        };
        let feed = tokio::spawn(feed.run());
        Self {
            store,
            resource_prefix,
            state,
            revision_rx,
            progress_wanted,
            config,
            feed,
        }
    }

    pub fn store(&self) -> &KvStore {
        &self.store
    }

    /// The revision the cache has caught up to.
    pub fn revision(&self) -> i64 {
        *self.revision_rx.borrow()
    }

    fn check_key(&self, key: &str) -> Result<()> {
        let within =
            key.starts_with(&self.resource_prefix) || format!("{key}/") == self.resource_prefix;
        if within {
            Ok(())
        } else {
            Err(StorageError::Invalid(format!(
                "key {key} is outside the cached prefix {}",
                self.resource_prefix
            )))
        }
    }

    /// Waits until the cache is listed and has seen `revision` (upstream waits up to 3s, then
    /// answers "too large resource version").
    async fn wait_fresh(&self, revision: i64) -> Result<()> {
        let mut rx = self.revision_rx.clone();
        let ready =
            |state: &Arc<RwLock<CacheState>>| state.read().map(|s| s.ready).unwrap_or(false);
        let wait = async {
            loop {
                if ready(&self.state) && *rx.borrow_and_update() >= revision {
                    return Ok(());
                }
                // Ask again while waiting: an answer the feed could not yet trust (see
                // `Feed::follow`) must be followed by another.
                self.progress_wanted.notify_one();
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() {
                        return Err(StorageError::Unavailable("watch cache stopped".into()));
                    },
                    _ = tokio::time::sleep(PROGRESS_RETRY) => {}
                }
            }
        };
        match tokio::time::timeout(self.config.freshness_timeout, wait).await {
            Ok(result) => result,
            Err(_) if !ready(&self.state) => {
                Err(StorageError::Unavailable("watch cache is not ready".into()))
            }
            Err(_) => Err(StorageError::TooLargeResourceVersion {
                requested: revision,
                current: self.revision(),
            }),
        }
    }

    /// The objects under `key` as they are now, and the revision they are at: pointers taken
    /// under the lock, so predicates and copies run after it is released.
    fn snapshot(&self, key: &str, recursive: bool) -> (Vec<Arc<KeyValue>>, i64) {
        let range = self.range(key, recursive);
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        let items = state.objects.within(&range).cloned().collect();
        (items, state.revision)
    }

    /// For a read at the latest revision: the revision the cache must reach to serve it (the
    /// store's current revision, which covers every acknowledged write), when the backend
    /// knows it in-process (the embedded store), as upstream serves consistent lists from its
    /// cache. On etcd such reads stay quorum reads. While the cache lacks an object it could
    /// not read, the backend serves them and reports the failure.
    async fn consistent_revision(&self) -> Option<i64> {
        let backend = self.store.backend();
        if !backend.current_revision_is_local() {
            return None;
        }
        let unreadable = {
            let state = self.state.read().unwrap_or_else(|p| p.into_inner());
            !state.unreadable.is_empty()
        };
        if unreadable {
            return None;
        }
        backend.current_revision().await.ok()
    }

    /// Waits for the cache to reach `min`. False: a read at the latest revision that the cache
    /// could not serve in time, which the store serves instead.
    async fn caught_up(&self, min: i64, revision: ReadRevision) -> Result<bool> {
        match self.wait_fresh(min).await {
            Ok(()) => Ok(true),
            Err(_) if revision == ReadRevision::Latest => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The revision a list served from the cache must reach, or None when the store serves
    /// it: a page after the first, a list at an exact revision, a paged list at a given one,
    /// or one at the latest revision that the cache cannot serve consistently or completely
    /// (a limit asks for pages with continue tokens, which only the store's snapshots give).
    async fn cached_list_revision(&self, opts: &ListOptions) -> Option<i64> {
        if from_cache(opts) {
            return Some(match opts.revision {
                ReadRevision::NotOlderThan(r) => r,
                _ => 0,
            });
        }
        let whole = opts.continue_token.as_deref().is_none_or(str::is_empty) && opts.limit <= 0;
        if opts.revision == ReadRevision::Latest && whole {
            return self.consistent_revision().await;
        }
        None
    }

    fn range(&self, key: &str, recursive: bool) -> KeyRange {
        if recursive {
            let mut prefix = key.to_string();
            if !prefix.ends_with('/') {
                prefix.push('/');
            }
            KeyRange::prefix(&prefix)
        } else {
            KeyRange::key(key)
        }
    }
}

/// Whether the cache answers a list: one that accepts any recent state, not a later page.
fn from_cache(opts: &ListOptions) -> bool {
    opts.continue_token.as_deref().is_none_or(str::is_empty)
        && match opts.revision {
            ReadRevision::Any => true,
            // A paged list at a given revision needs the store's snapshots.
            ReadRevision::NotOlderThan(_) => opts.limit <= 0,
            ReadRevision::Latest | ReadRevision::Exact(_) => false,
        }
}

/// A snapshot handed out in pages of what matches; each page copies only its own pairs.
fn pages(
    snapshot: Vec<Arc<KeyValue>>,
    predicate: Option<crate::Predicate>,
) -> BoxStream<'static, Result<Vec<KeyValue>>> {
    let mut items = snapshot.into_iter();
    futures::stream::iter(std::iter::from_fn(move || loop {
        let page: Vec<KeyValue> = items
            .by_ref()
            .take(PAGE_ITEMS)
            .filter(|kv| matches(&predicate, kv))
            .map(|kv| KeyValue::clone(&kv))
            .collect();
        if !page.is_empty() {
            return Some(Ok(page));
        }
        if items.len() == 0 {
            return None;
        }
    }))
    .boxed()
}

#[async_trait]
impl Interface for Cacher {
    async fn create_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<std::time::Duration>,
    ) -> Result<KeyValue> {
        self.store.create_with_ttl(key, value, ttl).await
    }

    async fn get(&self, key: &str, revision: ReadRevision) -> Result<KeyValue> {
        // A get at the latest revision is a read of the store, as upstream's (only lists are
        // served consistently from the cache): one key costs the store little, and waiting
        // for the cache instead ties the read to the cache's feed, which a busy runtime delays
        // (a leader's lease renewal read this way could miss its deadline).
        let min = match revision {
            ReadRevision::Any => 0,
            ReadRevision::NotOlderThan(r) => r,
            ReadRevision::Latest | ReadRevision::Exact(_) => {
                return self.store.get(key, revision).await
            }
        };
        self.check_key(key)?;
        if !self.caught_up(min, revision).await? {
            return self.store.get(key, revision).await;
        }
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        state
            .objects
            .get(key)
            .map(|kv| KeyValue::clone(kv))
            .ok_or_else(|| StorageError::not_found(key))
    }

    fn lists_whole(&self, opts: &ListOptions) -> bool {
        from_cache(opts) || self.store.lists_whole(opts)
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        let Some(min) = self.cached_list_revision(&opts).await else {
            return self.store.get_list(key, opts).await;
        };
        self.check_key(key)?;
        if !self.caught_up(min, opts.revision).await? {
            return self.store.get_list(key, opts).await;
        }
        let (snapshot, revision) = self.snapshot(key, opts.recursive);
        // As upstream, a list served from the cache is complete: limit does not apply.
        let items = snapshot
            .iter()
            .filter(|kv| matches(&opts.predicate, kv))
            .map(|kv| KeyValue::clone(kv))
            .collect();
        Ok(ListResult {
            items,
            revision,
            continue_token: None,
            remaining: None,
        })
    }

    async fn get_list_pages(&self, key: &str, opts: ListOptions) -> Result<ListPages> {
        let Some(min) = self.cached_list_revision(&opts).await else {
            return self.store.get_list_pages(key, opts).await;
        };
        self.check_key(key)?;
        if !self.caught_up(min, opts.revision).await? {
            return self.store.get_list_pages(key, opts).await;
        }
        let (snapshot, revision) = self.snapshot(key, opts.recursive);
        Ok(ListPages {
            revision,
            pages: pages(snapshot, opts.predicate),
        })
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        mut opts: UpdateOptions,
        update: &mut UpdateFn<'_>,
    ) -> Result<KeyValue> {
        // Upstream's cachedExistingObject: the update starts from the cache's copy rather
        // than a read of the store. A copy that proves stale (the compare-and-swap fails, or
        // the decision does not hold) makes the store read and decide again, so this only
        // saves the read: on etcd, a round trip and a range for every lease renewal and
        // status write.
        if opts.cached.is_none() && self.check_key(key).is_ok() {
            let state = self.state.read().unwrap_or_else(|p| p.into_inner());
            opts.cached = state.objects.get(key).map(|kv| KeyValue::clone(kv));
        }
        self.store.guaranteed_update(key, opts, update).await
    }

    async fn delete(
        &self,
        key: &str,
        preconditions: &Preconditions,
        validate: Option<&ValidateDeletion<'_>>,
    ) -> Result<KeyValue> {
        self.store.delete(key, preconditions, validate).await
    }

    async fn delete_cached(
        &self,
        key: &str,
        preconditions: &Preconditions,
        cached: KeyValue,
    ) -> Result<KeyValue> {
        self.store.delete_cached(key, preconditions, cached).await
    }

    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        self.check_key(key)?;
        let min = if opts.send_initial_events == Some(true) || opts.revision > 0 {
            opts.revision
        } else {
            0
        };
        self.wait_fresh(min).await?;
        watcher::start(self.state.clone(), self.range(key, opts.recursive), opts)
    }

    async fn count(&self, key: &str) -> Result<i64> {
        self.store.count(key).await
    }

    async fn current_revision(&self) -> Result<i64> {
        self.store.current_revision().await
    }
}
