//! Values that cross the storage interface: stored pairs, read and watch options, events.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

/// A stored pair as read at some revision. Revisions follow etcd: `mod_revision` is the
/// resourceVersion of the object, `create_revision` the revision that created this
/// incarnation of the key, `version` how many times it was written since.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    pub create_revision: i64,
    pub mod_revision: i64,
    pub version: i64,
}

impl fmt::Debug for KeyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyValue")
            .field("key", &self.key)
            .field("value_len", &self.value.len())
            .field("create_revision", &self.create_revision)
            .field("mod_revision", &self.mod_revision)
            .field("version", &self.version)
            .finish()
    }
}

/// Conditions an update or delete must meet against the current stored value (upstream
/// storage.Preconditions). A failed precondition is a Conflict.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<i64>,
}

impl Preconditions {
    pub fn none() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.uid.is_none() && self.resource_version.is_none()
    }
}

/// Which state a read may return (upstream's resourceVersion / resourceVersionMatch pair).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadRevision {
    /// resourceVersion unset: the most recent state, read from the backend (quorum read).
    #[default]
    Latest,
    /// resourceVersion="0": any state; the watch cache may serve it.
    Any,
    /// At least as new as this revision (the default meaning of a resourceVersion).
    NotOlderThan(i64),
    /// Exactly this revision (resourceVersionMatch=Exact); fails if compacted.
    Exact(i64),
}

/// Decides whether an object belongs in a list or watch (selectors live above storage).
pub type Predicate = Arc<dyn Fn(&KeyValue) -> bool + Send + Sync>;

#[derive(Clone, Default)]
pub struct ListOptions {
    pub revision: ReadRevision,
    /// At most this many items in one page; 0 means no limit.
    pub limit: i64,
    /// Opaque token from a previous page; all pages share that page's snapshot revision.
    pub continue_token: Option<String>,
    pub predicate: Option<Predicate>,
    /// List everything under the key as a prefix (false: the key alone, as a one-item list).
    pub recursive: bool,
}

impl fmt::Debug for ListOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListOptions")
            .field("revision", &self.revision)
            .field("limit", &self.limit)
            .field("continue_token", &self.continue_token)
            .field("predicate", &self.predicate.is_some())
            .field("recursive", &self.recursive)
            .finish()
    }
}

#[derive(Clone, Debug, Default)]
pub struct ListResult {
    pub items: Vec<KeyValue>,
    /// The snapshot revision the list was read at (the list's resourceVersion).
    pub revision: i64,
    pub continue_token: Option<String>,
    /// Items left after this page, when known without a predicate (remainingItemCount).
    pub remaining: Option<i64>,
}

/// A complete list read from one snapshot and handed out a page at a time, so that a reader
/// that writes each page out never holds the whole collection (upstream's streaming list
/// encoders). Pages are never empty; `revision` is the snapshot's.
pub struct ListPages {
    pub revision: i64,
    pub pages: futures::stream::BoxStream<'static, crate::Result<Vec<KeyValue>>>,
}

impl fmt::Debug for ListPages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListPages")
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Default)]
pub struct WatchOptions {
    /// Deliver changes after this revision. 0: start from the current state.
    pub revision: i64,
    pub recursive: bool,
    pub predicate: Option<Predicate>,
    /// Forward bookmarks (a newer revision with no object change).
    pub bookmarks: bool,
    /// Some(true): synthetic ADDED events for the current state, then a bookmark marked as the
    /// end of initial events. None: initial events only when `revision` is 0 (legacy watch).
    pub send_initial_events: Option<bool>,
}

impl fmt::Debug for WatchOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchOptions")
            .field("revision", &self.revision)
            .field("recursive", &self.recursive)
            .field("predicate", &self.predicate.is_some())
            .field("bookmarks", &self.bookmarks)
            .field("send_initial_events", &self.send_initial_events)
            .finish()
    }
}

impl WatchOptions {
    pub fn initial_events(&self) -> bool {
        self.send_initial_events.unwrap_or(self.revision == 0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    Added,
    Modified,
    Deleted,
    Bookmark,
}

/// One change as a watcher sees it. For `Deleted`, `value` is the last state before the
/// deletion (or before the object stopped matching the watcher's predicate) and `revision` the
/// revision of the deletion, as upstream's watch cache reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    pub kind: EventKind,
    pub key: String,
    pub value: Bytes,
    pub prev_value: Option<Bytes>,
    pub revision: i64,
    /// Only on a bookmark that closes the initial events of `send_initial_events`.
    pub initial_events_end: bool,
    /// The watch cache's change this event was made from, where the bytes a sender makes of
    /// it are kept for every watcher (None for events made otherwise: initial states, a
    /// watch of the store itself, bookmarks).
    pub shared: Option<crate::cacher::SharedEncodings>,
}

impl WatchEvent {
    pub fn bookmark(revision: i64) -> Self {
        Self {
            kind: EventKind::Bookmark,
            key: String::new(),
            value: Bytes::new(),
            prev_value: None,
            revision,
            initial_events_end: false,
            shared: None,
        }
    }
}

pub type WatchStream = futures::stream::BoxStream<'static, crate::Result<WatchEvent>>;
