//! What the watch cache holds: the current objects, a window of recent changes, and the
//! channel that fans each change out to every watcher.

use std::borrow::Borrow;
use std::collections::{BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use super::shared::Encodings;
use crate::backend::{KeyRange, RawEvent, RawEventKind};
use crate::KeyValue;

/// How long a change counts as fresh: the window keeps at least this span of changes (up to
/// its maximum). Upstream's DefaultEventFreshDuration.
const FRESH: Duration = Duration::from_secs(75);
/// The smallest window a busy resource shrinks to (upstream's defaultLowerBoundCapacity).
const MIN_CAPACITY: usize = 100;

/// A change with its place in the cache's sequence. One etcd revision may hold several
/// changes (a multi-key transaction of another client), so watchers track positions by
/// sequence number, not by revision. The states are the cache's own pointers: a change
/// that is an object's current state shares it with `objects`, and its previous state is
/// the pointer the change replaced.
#[derive(Debug)]
pub struct CachedEvent {
    pub seq: u64,
    pub kind: RawEventKind,
    /// For a deletion: the key and the deleting revision.
    pub kv: Arc<KeyValue>,
    pub prev: Option<Arc<KeyValue>>,
    /// When the cache received it: the window's size follows the changes' age.
    pub received: Instant,
    /// What its watchers made of it to send, made once for all of them.
    pub(crate) encodings: Encodings,
}

impl CachedEvent {
    pub fn revision(&self) -> i64 {
        self.kv.mod_revision
    }
}

/// What the feed broadcasts to watchers.
#[derive(Clone, Debug)]
pub enum CacheMessage {
    Event(Arc<CachedEvent>),
    /// The cache has seen everything up to this revision.
    Progress(i64),
    /// The cache was rebuilt from a fresh list; watchers must relist (TooOld).
    Reset,
}

/// The current objects by key. Shared pointers, so a list or an initial watch state is a
/// snapshot of pointers taken under the lock, and its values are the cache's own bytes. The
/// tree holds only the pointers, ordered by the key inside them: a key held beside each
/// pointer was a second copy of every key (its `String` in the tree's nodes and its bytes on
/// the heap, about 60 bytes an object), for the price of following a pointer per comparison
/// of a lookup.
#[derive(Default)]
pub struct Objects(BTreeSet<ByKey>);

/// A cached object ordered (and looked up) by its key.
struct ByKey(Arc<KeyValue>);

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}

impl Eq for ByKey {}

impl PartialOrd for ByKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key.cmp(&other.0.key)
    }
}

/// Agrees with the order above: a key orders as its `str`.
impl Borrow<str> for ByKey {
    fn borrow(&self) -> &str {
        &self.0.key
    }
}

impl Objects {
    /// Adds or replaces the object under its key; returns the one replaced.
    pub fn insert(&mut self, kv: Arc<KeyValue>) -> Option<Arc<KeyValue>> {
        self.0.replace(ByKey(kv)).map(|old| old.0)
    }

    pub fn remove(&mut self, key: &str) -> Option<Arc<KeyValue>> {
        self.0.take(key).map(|old| old.0)
    }

    pub fn get(&self, key: &str) -> Option<&Arc<KeyValue>> {
        self.0.get(key).map(|kv| &kv.0)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The objects in `range`, in key order.
    pub fn within<'a>(
        &'a self,
        range: &'a KeyRange,
    ) -> impl Iterator<Item = &'a Arc<KeyValue>> + 'a {
        // Keys are text; a start that is not (never made by a caller) is walked to.
        let from = std::str::from_utf8(&range.start).map_or(Bound::Unbounded, Bound::Included);
        self.0
            .range::<str, _>((from, Bound::Unbounded))
            .map(|kv| &kv.0)
            .skip_while(|kv| kv.key.as_bytes() < range.start.as_slice())
            .take_while(|kv| range.contains(kv.key.as_bytes()))
    }
}

pub struct CacheState {
    pub objects: Objects,
    /// Keys whose stored value the cache could not read (it does not decrypt): left out of
    /// the objects, so reads at the latest revision go to the store, which reports why.
    pub unreadable: std::collections::BTreeSet<String>,
    window: VecDeque<Arc<CachedEvent>>,
    /// Every change after this revision is in the window: watches may start here or later.
    pub window_start: i64,
    /// Sequence number of the newest change pushed out of the window (0: none yet).
    evicted_seq: u64,
    next_seq: u64,
    /// The cache reflects the store up to this revision.
    pub revision: i64,
    /// The newest change applied (or the list's revision): a resumed watch repeats nothing
    /// older. Kept apart from `revision`, which progress also advances, so that a change
    /// arriving after a progress report past it is still applied, never dropped.
    applied: i64,
    pub ready: bool,
    /// The window's current size, between [`MIN_CAPACITY`] (or the maximum, if smaller) and
    /// `max_capacity`: see [`make_room`](Self::make_room).
    capacity: usize,
    max_capacity: usize,
    /// Made when the first watcher subscribes: a channel reserves all its slots at once, and
    /// most resources of an idle server have no watcher.
    tx: OnceLock<broadcast::Sender<CacheMessage>>,
    fanout: usize,
}

impl CacheState {
    /// A window of at most `max_capacity` changes.
    pub fn new(max_capacity: usize, fanout: usize) -> Self {
        Self {
            objects: Objects::default(),
            unreadable: Default::default(),
            window: VecDeque::new(),
            window_start: 0,
            evicted_seq: 0,
            next_seq: 1,
            revision: 0,
            applied: 0,
            ready: false,
            capacity: max_capacity.min(MIN_CAPACITY),
            max_capacity,
            tx: OnceLock::new(),
            fanout,
        }
    }

    /// Starts over from a full list at `revision`; existing watchers are told to relist.
    pub fn reset(&mut self, objects: Objects, revision: i64) {
        let had_data = self.ready || self.revision > 0;
        self.objects = objects;
        self.window.clear();
        self.window_start = revision;
        // Positions of old watchers mean nothing in the new window.
        self.evicted_seq = self.next_seq;
        self.next_seq += 1;
        self.revision = revision;
        self.applied = revision;
        self.ready = true;
        if had_data {
            self.send(CacheMessage::Reset);
        }
    }

    /// Records whether the store's latest value of `key` could be read into the cache.
    pub fn mark_readable(&mut self, key: &str, readable: bool) {
        if !readable {
            self.unreadable.insert(key.to_string());
        } else if !self.unreadable.is_empty() {
            self.unreadable.remove(key);
        }
    }

    /// Applies one change (keys already relative to the storage prefix) and fans it out.
    pub fn apply(&mut self, event: RawEvent) {
        self.apply_at(event, Instant::now());
    }

    /// [`apply`](Self::apply), received at `now`.
    fn apply_at(&mut self, event: RawEvent, now: Instant) {
        // A resumed watch never repeats a revision, but several changes may share one.
        if event.kv.mod_revision < self.applied {
            return;
        }
        let revision = event.kv.mod_revision;
        let kv = Arc::new(event.kv);
        let replaced = match event.kind {
            RawEventKind::Put => self.objects.insert(kv.clone()),
            RawEventKind::Delete => self.objects.remove(&kv.key),
        };
        // The window keeps the previous state as the cache's own pointer when it is the state
        // the change replaced, not the backend's second copy of it; a backend asked for no
        // previous values leaves it to the cache, which holds every object's current state.
        let prev = match (event.prev, replaced) {
            (Some(prev), Some(old)) if old.mod_revision == prev.mod_revision => Some(old),
            (Some(prev), _) => Some(Arc::new(prev)),
            (None, replaced) => replaced,
        };
        self.applied = revision;
        self.revision = self.revision.max(revision);
        let event = Arc::new(CachedEvent {
            seq: self.next_seq,
            kind: event.kind,
            kv,
            prev,
            received: now,
            encodings: Encodings::default(),
        });
        self.next_seq += 1;
        self.make_room(now);
        self.window.push_back(event.clone());
        self.send(CacheMessage::Event(event));
    }

    /// Upstream's watch cache sizing (watch_cache.go, resizeCacheLocked): a full window whose
    /// oldest change is fresh (younger than [`FRESH`]) doubles, up to the maximum; a full
    /// window whose newest quarter already began before [`FRESH`] halves, down to
    /// [`MIN_CAPACITY`]; otherwise a full window drops its oldest change. So the window holds
    /// about the last 75 s of changes: a busy resource keeps what a watcher resuming after a
    /// short break needs, and memory does not grow with a fixed count of old objects (10,000
    /// per resource held tens of MB of replaced versions that no watcher would ask for).
    fn make_room(&mut self, now: Instant) {
        if self.window.len() < self.capacity {
            return;
        }
        let age = |e: &Arc<CachedEvent>| now.saturating_duration_since(e.received);
        if self.window.front().is_some_and(|e| age(e) < FRESH) {
            self.capacity = (self.capacity * 2).min(self.max_capacity);
        } else if self
            .window
            .get(self.window.len() - self.capacity / 4)
            .is_some_and(|e| age(e) > FRESH)
        {
            self.capacity = (self.capacity / 2).max(MIN_CAPACITY.min(self.max_capacity));
        }
        while self.window.len() >= self.capacity {
            let Some(oldest) = self.window.pop_front() else {
                break;
            };
            self.evicted_seq = oldest.seq;
            // Changes sharing the evicted one's revision may remain, so a watch from the
            // revision before it can no longer be served.
            self.window_start = oldest.revision();
        }
    }

    /// A receiver of every message from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<CacheMessage> {
        self.tx
            .get_or_init(|| broadcast::channel(self.fanout).0)
            .subscribe()
    }

    /// Fans a message out to the watchers, if any ever subscribed.
    fn send(&self, message: CacheMessage) {
        if let Some(tx) = self.tx.get() {
            let _ = tx.send(message);
        }
    }

    pub fn progress(&mut self, revision: i64) {
        if revision > self.revision {
            self.revision = revision;
        }
        self.send(CacheMessage::Progress(self.revision));
    }

    /// The sequence number of the last change at or before `revision` (where a watch from
    /// `revision` starts), or None if the window no longer reaches back that far.
    pub fn position_of(&self, revision: i64) -> Option<u64> {
        if revision < self.window_start {
            return None;
        }
        let after = self.window.partition_point(|e| e.revision() <= revision);
        Some(match after {
            0 => self.window.front().map_or(self.next_seq - 1, |e| e.seq - 1),
            n => self.window[n - 1].seq,
        })
    }

    /// The position after the newest change.
    pub fn end_position(&self) -> u64 {
        self.next_seq - 1
    }

    /// The first `limit` changes after position `seq`, and whether they reach the window's
    /// end; None if some of them left the window.
    pub fn since_at_most(&self, seq: u64, limit: usize) -> Option<(Vec<Arc<CachedEvent>>, bool)> {
        if seq < self.evicted_seq {
            return None;
        }
        let first = self.window.partition_point(|e| e.seq <= seq);
        let end = first.saturating_add(limit).min(self.window.len());
        let changes = self.window.range(first..end).cloned().collect();
        Some((changes, end == self.window.len()))
    }

    /// Changes after position `seq`, or None if some of them left the window.
    #[cfg(test)]
    pub fn since(&self, seq: u64) -> Option<Vec<Arc<CachedEvent>>> {
        self.since_at_most(seq, usize::MAX)
            .map(|(changes, _)| changes)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn put(key: &str, revision: i64) -> RawEvent {
        RawEvent {
            kind: RawEventKind::Put,
            kv: KeyValue {
                key: key.into(),
                value: Bytes::new(),
                create_revision: revision,
                mod_revision: revision,
                version: 1,
            },
            prev: None,
        }
    }

    /// The tree keeps a pointer per object and finds objects by the key inside it.
    #[test]
    fn objects_are_held_by_pointer_alone_and_found_by_key() {
        assert_eq!(std::mem::size_of::<ByKey>(), std::mem::size_of::<usize>());
        let kv = |key: &str, revision| Arc::new(put(key, revision).kv);
        let mut objects = Objects::default();
        for key in ["/a/2", "/b/1", "/a/1", "/ab"] {
            assert!(objects.insert(kv(key, 1)).is_none());
        }
        let newer = kv("/a/1", 2);
        let replaced = objects.insert(newer.clone()).expect("replaced");
        assert_eq!(replaced.mod_revision, 1);
        assert!(Arc::ptr_eq(objects.get("/a/1").expect("held"), &newer));
        let range = KeyRange::prefix("/a/");
        let keys: Vec<_> = objects.within(&range).map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["/a/1", "/a/2"]);
        assert_eq!(objects.remove("/a/2").expect("removed").key, "/a/2");
        assert!(objects.get("/a/2").is_none());
        assert_eq!(objects.len(), 3);
    }

    #[test]
    fn changes_sharing_a_revision_are_all_kept() {
        let mut s = CacheState::new(10, 16);
        s.reset(Objects::default(), 1);
        s.apply(put("/a", 2));
        s.apply(put("/b", 2));
        s.apply(put("/c", 3));
        assert_eq!(s.objects.len(), 3);
        let from = s.position_of(1).expect("in window");
        let keys: Vec<_> = s
            .since(from)
            .expect("in window")
            .iter()
            .map(|e| e.kv.key.clone())
            .collect();
        assert_eq!(keys, ["/a", "/b", "/c"]);
        let after_2 = s.position_of(2).expect("in window");
        assert_eq!(s.since(after_2).expect("in window").len(), 1);
    }

    #[test]
    fn eviction_moves_the_window() {
        let mut s = CacheState::new(2, 16);
        s.reset(Objects::default(), 1);
        for r in 2..6 {
            s.apply(put(&format!("/{r}"), r));
        }
        assert!(s.position_of(1).is_none());
        assert!(s.position_of(2).is_none());
        // Everything after revision 3 is still there.
        assert_eq!(
            s.since(s.position_of(3).expect("kept"))
                .expect("kept")
                .len(),
            2
        );
        assert_eq!(
            s.since(s.position_of(4).expect("kept"))
                .expect("kept")
                .len(),
            1
        );
        // A watcher that had seen only up to the first change can no longer catch up.
        assert!(s.since(1).is_none());
    }

    /// One copy of each state: a change's current state is the cached object's pointer, and
    /// an update's or deletion's previous state is the pointer it replaced.
    #[test]
    fn the_window_shares_the_objects_pointers() {
        let mut s = CacheState::new(10, 16);
        s.reset(Objects::default(), 1);
        s.apply(put("/a", 2));
        let created = s.objects.get("/a").expect("cached").clone();
        let mut update = put("/a", 3);
        update.kv.version = 2;
        update.kv.create_revision = 2;
        update.prev = Some(KeyValue::clone(&created));
        s.apply(update);
        let updated = s.objects.get("/a").expect("cached").clone();
        let mut delete = put("/a", 4);
        delete.kind = RawEventKind::Delete;
        delete.prev = Some(KeyValue::clone(&updated));
        s.apply(delete);
        assert!(s.objects.get("/a").is_none());

        let window = s.since(s.position_of(1).expect("kept")).expect("in window");
        assert_eq!(window.len(), 3);
        assert!(Arc::ptr_eq(&window[0].kv, &created));
        assert!(Arc::ptr_eq(&window[1].kv, &updated));
        assert!(Arc::ptr_eq(
            window[1].prev.as_ref().expect("prev"),
            &created
        ));
        assert!(Arc::ptr_eq(
            window[2].prev.as_ref().expect("prev"),
            &updated
        ));
        assert_eq!(window[2].kind, RawEventKind::Delete);
    }

    /// A previous state the cache does not hold (its revision differs) is the backend's.
    #[test]
    fn a_previous_state_not_cached_is_kept_as_given() {
        let mut s = CacheState::new(10, 16);
        s.reset(Objects::default(), 1);
        s.apply(put("/a", 2));
        let mut update = put("/a", 5);
        let mut prev = put("/a", 4).kv;
        prev.value = Bytes::from_static(b"{}");
        update.prev = Some(prev);
        s.apply(update);
        let window = s.since(s.position_of(1).expect("kept")).expect("in window");
        let prev = window[1].prev.as_ref().expect("prev");
        assert_eq!((prev.mod_revision, &prev.value[..]), (4, &b"{}"[..]));
    }

    #[test]
    fn objects_in_a_range_come_in_key_order() {
        let mut objects = Objects::default();
        for key in ["/b/2", "/a/1", "/b/1", "/c", "/b"] {
            objects.insert(Arc::new(put(key, 2).kv));
        }
        let keys = |range: &KeyRange| -> Vec<String> {
            objects.within(range).map(|kv| kv.key.clone()).collect()
        };
        assert_eq!(keys(&KeyRange::prefix("/b/")), ["/b/1", "/b/2"]);
        assert_eq!(keys(&KeyRange::key("/b")), ["/b"]);
        assert_eq!(
            keys(&KeyRange::prefix("/")),
            ["/a/1", "/b", "/b/1", "/b/2", "/c"]
        );
        assert!(keys(&KeyRange::key("/d")).is_empty());
        assert_eq!(
            objects
                .insert(Arc::new(put("/c", 3).kv))
                .map(|old| old.mod_revision),
            Some(2)
        );
        assert_eq!(objects.remove("/c").map(|kv| kv.mod_revision), Some(3));
        assert_eq!(objects.len(), 4);
    }

    #[test]
    fn the_window_keeps_the_fresh_span_and_shrinks_when_it_is_old() {
        let mut s = CacheState::new(10_000, 16);
        s.reset(Objects::default(), 0);
        let t0 = Instant::now();
        // 250 changes within a moment: all kept (the window doubles past its 100).
        for r in 1..=250 {
            s.apply_at(put(&format!("k{r}"), r), t0);
        }
        assert_eq!(s.window.len(), 250);
        assert!(
            s.position_of(0).is_some(),
            "a watch from the start is served"
        );
        // Much later, a trickle of one change every 2 s: the old changes go, and the window
        // halves while its newest quarter is older than the fresh span, down to its floor.
        for r in 251..=1250 {
            let at = t0 + Duration::from_secs(400 + 2 * (r as u64 - 250));
            s.apply_at(put(&format!("k{r}"), r), at);
        }
        assert_eq!(s.window.len(), MIN_CAPACITY);
        assert!(
            s.position_of(1000).is_none(),
            "changes before the window left"
        );
        assert!(s.position_of(1150).is_some());
        // The maximum holds however fresh the changes are.
        let mut small = CacheState::new(3, 16);
        small.reset(Objects::default(), 0);
        for r in 1..=10 {
            small.apply_at(put(&format!("k{r}"), r), t0);
        }
        assert_eq!(small.window.len(), 3);
    }
}
