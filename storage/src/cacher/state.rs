//! What the watch cache holds: the current objects, a window of recent changes, and the
//! channel that fans each change out to every watcher.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use tokio::sync::broadcast;

use crate::backend::{RawEvent, RawEventKind};
use crate::KeyValue;

/// What the feed broadcasts to watchers.
#[derive(Clone, Debug)]
pub enum CacheMessage {
    Event(Arc<RawEvent>),
    /// The cache has seen everything up to this revision.
    Progress(i64),
    /// The cache was rebuilt from a fresh list; watchers must relist (TooOld).
    Reset,
}

pub struct CacheState {
    pub objects: BTreeMap<String, KeyValue>,
    pub window: VecDeque<Arc<RawEvent>>,
    /// Every change after this revision is in the window: watches may start here or later.
    pub window_start: i64,
    /// The cache reflects the store up to this revision.
    pub revision: i64,
    pub ready: bool,
    pub capacity: usize,
    pub tx: broadcast::Sender<CacheMessage>,
}

impl CacheState {
    pub fn new(capacity: usize, fanout: usize) -> Self {
        Self {
            objects: BTreeMap::new(),
            window: VecDeque::with_capacity(capacity.min(4096)),
            window_start: 0,
            revision: 0,
            ready: false,
            capacity,
            tx: broadcast::channel(fanout).0,
        }
    }

    /// Starts over from a full list at `revision`; existing watchers are told to relist.
    pub fn reset(&mut self, objects: BTreeMap<String, KeyValue>, revision: i64) {
        let had_data = self.ready || self.revision > 0;
        self.objects = objects;
        self.window.clear();
        self.window_start = revision;
        self.revision = revision;
        self.ready = true;
        if had_data {
            let _ = self.tx.send(CacheMessage::Reset);
        }
    }

    /// Applies one change (keys already relative to the storage prefix) and fans it out.
    pub fn apply(&mut self, event: RawEvent) {
        if event.kv.mod_revision <= self.revision {
            return;
        }
        match event.kind {
            RawEventKind::Put => {
                self.objects.insert(event.kv.key.clone(), event.kv.clone());
            }
            RawEventKind::Delete => {
                self.objects.remove(&event.kv.key);
            }
        }
        self.revision = event.kv.mod_revision;
        let event = Arc::new(event);
        if self.window.len() >= self.capacity {
            if let Some(oldest) = self.window.pop_front() {
                self.window_start = oldest.kv.mod_revision;
            }
        }
        self.window.push_back(event.clone());
        let _ = self.tx.send(CacheMessage::Event(event));
    }

    pub fn progress(&mut self, revision: i64) {
        if revision > self.revision {
            self.revision = revision;
        }
        let _ = self.tx.send(CacheMessage::Progress(self.revision));
    }

    /// Changes after `revision`, or None if the window no longer reaches back that far.
    pub fn since(&self, revision: i64) -> Option<Vec<Arc<RawEvent>>> {
        if revision < self.window_start {
            return None;
        }
        let first = self
            .window
            .partition_point(|e| e.kv.mod_revision <= revision);
        Some(self.window.range(first..).cloned().collect())
    }
}
