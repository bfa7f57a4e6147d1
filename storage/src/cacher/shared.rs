//! Bytes made once per change for all its watchers. Thousands of watchers of one resource
//! receive each change of the watch cache; those that send it the same way (one encoding, one
//! served version, one event type) would each make the same bytes. The first one to send it
//! makes them and keeps them on the change, and the others send the same allocation.
//! The cache itself knows nothing of encodings: the sender names what its bytes depend on with
//! a key of its own.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;

use super::state::CachedEvent;

/// The bytes made from one change, by key: made when its first watcher sends it. The window
/// keeps up to its maximum of changes (10,000 by default), most of them never sent by anyone
/// (no watcher, or only in-process informers, which send nothing); inline, the empty table
/// was 80 bytes of each, a pointer and its once-flag are 16.
#[derive(Debug, Default)]
pub(crate) struct Encodings(OnceLock<Box<Made>>);

/// Most changes are sent one way (JSON to every watcher), so the first bytes made are read
/// without a lock; any others (protobuf, another served version) are in a short list behind
/// one.
#[derive(Debug, Default)]
struct Made {
    first: OnceLock<(u64, Bytes)>,
    others: Mutex<Vec<(u64, Bytes)>>,
}

impl Encodings {
    fn get_or_make(&self, key: u64, make: impl FnOnce() -> Bytes) -> Bytes {
        self.0.get_or_init(Box::default).get_or_make(key, make)
    }

    /// How many encodings were made (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.get().map_or(0, |made| made.len())
    }
}

impl Made {
    /// The bytes under `key`, made by `make` if no watcher has made them yet. `make` runs
    /// without a lock, so one slow encoding never holds up the watchers of other keys; two
    /// watchers on two threads may both make them the first time, and the first kept wins.
    fn get_or_make(&self, key: u64, make: impl FnOnce() -> Bytes) -> Bytes {
        match self.first.get() {
            Some((k, bytes)) if *k == key => bytes.clone(),
            Some(_) => self.other(key, make),
            None => {
                let made = make();
                let (k, bytes) = self.first.get_or_init(|| (key, made.clone()));
                if *k == key {
                    bytes.clone()
                } else {
                    self.other(key, || made)
                }
            }
        }
    }

    fn other(&self, key: u64, make: impl FnOnce() -> Bytes) -> Bytes {
        let find =
            |made: &[(u64, Bytes)]| made.iter().find(|(k, _)| *k == key).map(|(_, b)| b.clone());
        if let Some(bytes) = find(&self.others.lock().unwrap_or_else(|p| p.into_inner())) {
            return bytes;
        }
        let bytes = make();
        let mut made = self.others.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kept) = find(&made) {
            return kept;
        }
        made.push((key, bytes.clone()));
        bytes
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        usize::from(self.first.get().is_some())
            + self.others.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// The change a watch event was made from, as a place to keep what its watchers make of it.
/// Carried by the events of a watch served by the watch cache ([`crate::WatchEvent::shared`]).
#[derive(Clone)]
pub struct SharedEncodings(Arc<CachedEvent>);

impl SharedEncodings {
    pub(crate) fn new(change: Arc<CachedEvent>) -> Self {
        Self(change)
    }

    /// The bytes every watcher sending this change the way `key` names makes of it: made by
    /// `make` the first time, the same allocation after. `key` must stand for everything the
    /// bytes depend on besides the change (encoding, served version, event type).
    pub fn get_or_make(&self, key: u64, make: impl FnOnce() -> Bytes) -> Bytes {
        self.0.encodings.get_or_make(key, make)
    }
}

/// Two handles are equal when they are the same change.
impl PartialEq for SharedEncodings {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedEncodings {}

impl fmt::Debug for SharedEncodings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedEncodings")
            .field("seq", &self.0.seq)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn bytes_are_made_once_per_key_and_shared() {
        let encodings = Encodings::default();
        let made = AtomicUsize::new(0);
        let make = |text: &'static str| {
            made.fetch_add(1, Ordering::Relaxed);
            Bytes::from_static(text.as_bytes())
        };
        let first = encodings.get_or_make(1, || make("json"));
        let again = encodings.get_or_make(1, || make("json again"));
        assert_eq!(made.load(Ordering::Relaxed), 1, "made once for one key");
        assert_eq!(first.as_ptr(), again.as_ptr(), "the same allocation");
        let other = encodings.get_or_make(2, || make("protobuf"));
        assert_eq!(&other[..], b"protobuf");
        let again = encodings.get_or_make(2, || make("protobuf again"));
        assert_eq!(&again[..], b"protobuf");
        assert_eq!(made.load(Ordering::Relaxed), 2);
        assert_eq!(encodings.len(), 2);
    }

    /// Every change in the window carries its table: one never sent holds a pointer and a flag.
    #[test]
    fn an_unsent_change_holds_a_pointer_not_a_table() {
        assert!(std::mem::size_of::<Encodings>() <= 2 * std::mem::size_of::<usize>());
        assert_eq!(Encodings::default().len(), 0);
    }
}
