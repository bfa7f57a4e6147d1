//! The cache's one backend watch (upstream's cacher reflector): list, then watch from the list
//! revision; resume after a broken stream, relist when the resume point was compacted.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::{watch, Notify};
use tracing::{debug, error, info, warn};

use super::state::{CacheState, Objects};
use crate::backend::{KeyRange, RangeRequest, RawEvent, RawEventKind, WatchMessage};
use crate::{KeyValue, KvStore, Result, StorageError};

/// Page size of the initial list, so a large resource never needs one huge response.
const LIST_PAGE: usize = 10_000;

/// The wait before listing or watching again after a failure: doubling from the first to the
/// last, and back to the first once a stream delivers again, so one outage long ago does not
/// slow the resume after the next one.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);

    pub(crate) fn new() -> Self {
        Self { next: Self::FIRST }
    }

    /// The wait now; the next one is twice as long, up to the last.
    pub(crate) fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        wait
    }

    pub(crate) fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

/// How long a stream whose backend has answered progress requests before may leave one
/// unanswered before it counts as broken: a member cut off by a partition or stalled sends no
/// error, and the connection's keep-alive would notice only after ~15 s.
fn stall_limit(progress_interval: Duration) -> Duration {
    (progress_interval * 4).clamp(Duration::from_secs(3), Duration::from_secs(30))
}

pub struct Feed {
    pub store: KvStore,
    pub full_prefix: String,
    pub state: Arc<RwLock<CacheState>>,
    pub revision_tx: watch::Sender<i64>,
    pub progress_interval: Duration,
    /// See [`super::CacherConfig::checked_objects_per_second`].
    pub checked_objects_per_second: usize,
    /// Rung by readers waiting for a revision the cache has not seen, so they need not wait
    /// for the next tick when the change happened outside this prefix.
    pub progress_wanted: Arc<Notify>,
}

impl Feed {
    pub async fn run(self) {
        let mut backoff = Backoff::new();
        loop {
            let revision = match self.relist().await {
                Ok(revision) => revision,
                Err(e) => {
                    warn!(prefix = %self.full_prefix, error = %e, "watch cache list failed; retrying");
                    self.set_ready(false);
                    tokio::time::sleep(backoff.next_wait()).await;
                    continue;
                }
            };
            backoff.reset();
            let mut from = revision;
            loop {
                // Resumed after the last revision the cache holds, on whichever member the
                // backend picks: etcd's revisions are the cluster's, so no change is missed or
                // applied twice.
                match self.follow(from, &mut backoff).await {
                    Ok(()) => return,
                    Err(StorageError::TooOld { .. }) => {
                        info!(prefix = %self.full_prefix, "watch cache resume point compacted; relisting");
                        break;
                    }
                    Err(e) => {
                        debug!(prefix = %self.full_prefix, error = %e, "watch cache stream broke; resuming");
                        tokio::time::sleep(backoff.next_wait()).await;
                        from = self.read_state(|s| s.revision);
                    }
                }
            }
        }
    }

    fn read_state<T>(&self, f: impl FnOnce(&CacheState) -> T) -> T {
        f(&self.state.read().unwrap_or_else(|p| p.into_inner()))
    }

    fn write_state<T>(&self, f: impl FnOnce(&mut CacheState) -> T) -> T {
        let out = f(&mut self.state.write().unwrap_or_else(|p| p.into_inner()));
        let revision = self.read_state(|s| s.revision);
        self.revision_tx.send_if_modified(|r| {
            let changed = *r != revision;
            *r = revision;
            changed
        });
        out
    }

    fn set_ready(&self, ready: bool) {
        self.write_state(|s| s.ready = ready);
    }

    fn relative_key<'a>(&self, key: &'a str) -> &'a str {
        key.strip_prefix(self.store.prefix()).unwrap_or(key)
    }

    fn relative(&self, mut kv: KeyValue) -> KeyValue {
        if let Some(rest) = kv.key.strip_prefix(self.store.prefix()) {
            kv.key = rest.to_string();
        }
        kv
    }

    /// The change with plaintext values, and whether its new value could be read. One whose
    /// new value does not decrypt becomes the object's removal from the cache, as if it had
    /// never listed.
    fn decoded(&self, mut event: RawEvent) -> (RawEvent, bool) {
        let mut prev_lost = false;
        // The previous state is usually the cache's current object: its plaintext is at hand,
        // so the backend's copy is neither decrypted nor kept.
        if let Some(prev) = event.prev.as_mut() {
            let key = self.relative_key(&prev.key);
            let cached = self.read_state(|s| {
                s.objects
                    .get(key)
                    .filter(|o| o.mod_revision == prev.mod_revision)
                    .map(|o| o.value.clone())
            });
            match cached {
                Some(value) => prev.value = value,
                None => match self
                    .store
                    .decode_value(&prev.key, std::mem::take(&mut prev.value))
                {
                    Ok((value, _)) => prev.value = value,
                    Err(e) => {
                        error!(prefix = %self.full_prefix, error = %e, "watch cache cannot read a previous value");
                        prev_lost = true;
                    }
                },
            }
        }
        if prev_lost {
            event.prev = None;
        }
        let mut readable = true;
        if event.kind == RawEventKind::Put {
            match self
                .store
                .decode_value(&event.kv.key, std::mem::take(&mut event.kv.value))
            {
                Ok((value, _)) => event.kv.value = value,
                Err(e) => {
                    error!(prefix = %self.full_prefix, error = %e, "watch cache dropped an object");
                    event.kind = RawEventKind::Delete;
                    readable = false;
                }
            }
        }
        (event, readable)
    }

    async fn relist(&self) -> Result<i64> {
        let backend = self.store.backend();
        let mut objects = Objects::default();
        let mut unreadable = std::collections::BTreeSet::new();
        let mut range = KeyRange::prefix(&self.full_prefix);
        let mut revision = 0;
        loop {
            let resp = backend
                .range(RangeRequest {
                    range: Some(range.clone()),
                    revision,
                    limit: LIST_PAGE,
                    ..Default::default()
                })
                .await?;
            revision = resp.revision;
            let last = resp.kvs.last().map(|kv| kv.key.clone());
            for mut kv in resp.kvs {
                // An object that does not decrypt stays out of the cache; reads of it from
                // storage fail with the reason.
                match self
                    .store
                    .decode_value(&kv.key, std::mem::take(&mut kv.value))
                {
                    Ok((value, _)) => {
                        kv.value = value;
                        objects.insert(Arc::new(self.relative(kv)));
                    }
                    Err(e) => {
                        error!(prefix = %self.full_prefix, error = %e, "watch cache left out an object");
                        unreadable.insert(self.relative_key(&kv.key).to_string());
                    }
                }
            }
            match last {
                Some(last) if resp.more => range = range.after(&last),
                _ => break,
            }
        }
        let count = objects.len();
        self.write_state(|s| {
            s.reset(objects, revision);
            s.unreadable = unreadable;
        });
        info!(prefix = %self.full_prefix, revision, objects = count, "watch cache listed");
        Ok(revision)
    }

    /// Applies backend changes after `from` until the stream fails (Err) or the cache is
    /// dropped (Ok). The first message on the stream resets `backoff`.
    async fn follow(&self, from: i64, backoff: &mut Backoff) -> Result<()> {
        let watch = self
            .store
            .backend()
            // No previous values: the cache holds every object's current state, which is what
            // each change replaced (see `State::apply`).
            .watch(KeyRange::prefix(&self.full_prefix), from + 1, false)
            .await?;
        self.set_ready(true);
        // A progress report is believed only when the backend orders it after every change it
        // covers, or when storage confirms nothing newer than the cache is on its way: etcd
        // before 3.4.26 can report progress while changes are still queued for this watcher,
        // and a cache advanced past them would serve stale reads.
        let ordered = self.store.backend().progress_is_ordered();
        let mut messages = watch.messages;
        let mut ticker = tokio::time::interval(self.progress_interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let stall_limit = stall_limit(self.progress_interval);
        // Whether this stream has answered a progress request (only then does silence mean
        // a stall), and since when a request has gone unanswered.
        let mut answers_progress = false;
        let mut unanswered_since: Option<Instant> = None;
        // Whether a reader waits on the next report, and when a report was last checked.
        let mut reader_waits = false;
        let mut last_check: Option<Instant> = None;
        let mut delivered = false;
        loop {
            tokio::select! {
                msg = messages.next() => {
                    if matches!(msg, Some(Ok(_))) {
                        unanswered_since = None;
                        if !delivered {
                            delivered = true;
                            backoff.reset();
                        }
                    }
                    match msg {
                        None => return Err(StorageError::Unavailable("watch stream ended".into())),
                        Some(Err(e)) => return Err(e),
                        Some(Ok(WatchMessage::Events(events))) => {
                            // Decrypted before the cache is locked, so readers never wait on it.
                            let events: Vec<(RawEvent, bool)> =
                                events.into_iter().map(|e| self.decoded(e)).collect();
                            self.write_state(|s| {
                                for (mut event, readable) in events {
                                    event.kv = self.relative(event.kv);
                                    event.prev = event.prev.map(|p| self.relative(p));
                                    s.mark_readable(&event.kv.key, readable);
                                    s.apply(event);
                                }
                            });
                        }
                        Some(Ok(WatchMessage::Progress(revision))) => {
                            answers_progress = true;
                            let check_due = reader_waits
                                || last_check.is_none_or(|t| t.elapsed() >= self.check_every());
                            let believed = ordered
                                || (check_due && {
                                    reader_waits = false;
                                    last_check = Some(Instant::now());
                                    self.unchanged_until(revision).await?
                                });
                            if believed {
                                self.write_state(|s| s.progress(revision));
                            }
                        }
                    }
                },
                _ = self.progress_wanted.notified() => {
                    reader_waits = true;
                    unanswered_since.get_or_insert_with(Instant::now);
                    (watch.progress)();
                }
                _ = ticker.tick() => {
                    if self.revision_tx.is_closed() {
                        return Ok(());
                    }
                    if answers_progress && unanswered_since.is_some_and(|t| t.elapsed() > stall_limit) {
                        return Err(StorageError::Unavailable(format!(
                            "watch stream silent for {stall_limit:?}"
                        )));
                    }
                    unanswered_since.get_or_insert_with(Instant::now);
                    (watch.progress)();
                }
            }
        }
    }

    /// Whether the store under the prefix at `revision` is what the cache holds, i.e. no change
    /// is still on its way: no key modified after the cache's revision, and no key deleted
    /// (same count).
    /// How often a report nobody waits for is checked (see `unchanged_until`): every tenth
    /// report at most (each check is a range, which etcd 3.4 serves by copying its pending
    /// writes: a cache per resource checking every second was 17% of etcd), and less often
    /// for a big resource, whose check reads every object. Changes advance the cache
    /// meanwhile; only the bookmarks of a resource without changes lag.
    fn check_every(&self) -> Duration {
        let objects = self.read_state(|s| s.objects.len());
        let per_second = self.checked_objects_per_second.max(1);
        (self.progress_interval * 10)
            .max(Duration::from_secs_f64(objects as f64 / per_second as f64))
    }

    async fn unchanged_until(&self, revision: i64) -> Result<bool> {
        let (cached_revision, cached_count) = self.read_state(|s| (s.revision, s.objects.len()));
        if revision <= cached_revision {
            return Ok(true);
        }
        let resp = self
            .store
            .backend()
            .range(RangeRequest {
                range: Some(KeyRange::prefix(&self.full_prefix)),
                revision,
                min_mod_revision: cached_revision + 1,
                keys_only: true,
                ..Default::default()
            })
            .await?;
        Ok(resp.kvs.is_empty() && resp.count == cached_count as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_starts_over_after_a_success() {
        let mut b = Backoff::new();
        let waits: Vec<_> = (0..8).map(|_| b.next_wait()).collect();
        assert_eq!(waits[0], Duration::from_millis(100));
        assert_eq!(waits[1], Duration::from_millis(200));
        assert_eq!(waits[7], Duration::from_secs(5));
        b.reset();
        assert_eq!(b.next_wait(), Duration::from_millis(100));
    }

    #[test]
    fn a_stall_is_a_few_progress_rounds() {
        assert_eq!(
            stall_limit(Duration::from_millis(100)),
            Duration::from_secs(3)
        );
        assert_eq!(stall_limit(Duration::from_secs(1)), Duration::from_secs(4));
        assert_eq!(
            stall_limit(Duration::from_secs(60)),
            Duration::from_secs(30)
        );
    }
}
