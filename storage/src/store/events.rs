//! Turning backend changes into what one watcher sees, given its predicate: an object that
//! starts matching is ADDED, one that stops matching is DELETED (with its last matching state),
//! as upstream's cache watcher decides.

use crate::backend::RawEventKind;
use crate::{EventKind, KeyValue, Predicate, WatchEvent};

pub fn matches(predicate: &Option<Predicate>, kv: &KeyValue) -> bool {
    predicate.as_ref().is_none_or(|p| p(kv))
}

/// `key` is the key as the watcher knows it (without the storage prefix).
pub fn watch_event_of(
    kind: RawEventKind,
    kv: &KeyValue,
    prev: Option<&KeyValue>,
    key: &str,
    predicate: &Option<Predicate>,
) -> Option<WatchEvent> {
    let prev_passes = prev.is_some_and(|p| matches(predicate, p));
    let cur_passes = kind == RawEventKind::Put && matches(predicate, kv);
    let prev_value = prev.map(|p| p.value.clone());
    let (kind, value) = match (prev_passes, cur_passes) {
        (false, true) => (EventKind::Added, kv.value.clone()),
        (true, true) => (EventKind::Modified, kv.value.clone()),
        (true, false) => (EventKind::Deleted, prev_value.clone().unwrap_or_default()),
        (false, false) => return None,
    };
    Some(WatchEvent {
        kind,
        key: key.to_string(),
        value,
        prev_value,
        revision: kv.mod_revision,
        initial_events_end: false,
        shared: None,
    })
}

pub fn added(kv: &KeyValue) -> WatchEvent {
    WatchEvent {
        kind: EventKind::Added,
        key: kv.key.clone(),
        value: kv.value.clone(),
        prev_value: None,
        revision: kv.mod_revision,
        initial_events_end: false,
        shared: None,
    }
}
