//! Controller expectations (upstream's ControllerExpectations and its UID-tracking variant):
//! what a controller is still waiting to see in its informer after its own creates and
//! deletes. Until they are seen, the informer's view is stale and a sync must not act on it,
//! or a slow watch would make it create (or delete) the same pods twice.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Expectations older than this are assumed lost (a watch event that never came) and no
/// longer block syncs, as upstream's ExpectationsTimeout.
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Debug)]
struct Expected {
    adds: i64,
    /// Keys (namespace/name) of pods this controller asked to delete and has not seen go.
    deletes: HashSet<String>,
    set_at: Instant,
}

/// Per controller key (e.g. `namespace/name` of a ReplicaSet).
#[derive(Debug, Default)]
pub struct Expectations {
    by_key: Mutex<HashMap<String, Expected>>,
}

impl Expectations {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, Expected>) -> R) -> R {
        f(&mut self.by_key.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Whether a sync of `key` may trust the informer: nothing is pending, or what is pending
    /// has waited past the timeout.
    pub fn satisfied(&self, key: &str) -> bool {
        self.with(|m| match m.get(key) {
            None => true,
            Some(e) => {
                (e.adds <= 0 && e.deletes.is_empty()) || e.set_at.elapsed() > EXPECTATIONS_TIMEOUT
            }
        })
    }

    /// Records that `adds` creations are about to be made (replacing what was expected).
    pub fn expect_creations(&self, key: &str, adds: usize) {
        self.with(|m| {
            m.insert(
                key.to_string(),
                Expected {
                    adds: adds as i64,
                    deletes: HashSet::new(),
                    set_at: Instant::now(),
                },
            )
        });
    }

    /// Records deletions about to be made of the pods with these keys.
    pub fn expect_deletions(&self, key: &str, pods: impl IntoIterator<Item = String>) {
        self.with(|m| {
            m.insert(
                key.to_string(),
                Expected {
                    adds: 0,
                    deletes: pods.into_iter().collect(),
                    set_at: Instant::now(),
                },
            )
        });
    }

    /// Records creations and deletions about to be made together (upstream's
    /// SetExpectations), for a controller that does both in one sync.
    pub fn expect(&self, key: &str, adds: usize, deletes: impl IntoIterator<Item = String>) {
        self.with(|m| {
            m.insert(
                key.to_string(),
                Expected {
                    adds: adds as i64,
                    deletes: deletes.into_iter().collect(),
                    set_at: Instant::now(),
                },
            )
        });
    }

    /// A created pod was seen, or a creation was given up (it will never be seen).
    pub fn creation_observed(&self, key: &str) {
        self.lower_creations(key, 1);
    }

    pub fn lower_creations(&self, key: &str, count: usize) {
        self.with(|m| {
            if let Some(e) = m.get_mut(key) {
                e.adds -= count as i64;
            }
        });
    }

    /// A pod seen deleted (or going), or whose deletion failed: no longer awaited.
    pub fn deletion_observed(&self, key: &str, pod: &str) {
        self.with(|m| {
            if let Some(e) = m.get_mut(key) {
                e.deletes.remove(pod);
            }
        });
    }

    /// Forgets the controller (it was deleted).
    pub fn forget(&self, key: &str) {
        self.with(|m| m.remove(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creations_and_deletions_are_awaited_until_observed() {
        let e = Expectations::new();
        assert!(e.satisfied("ns/rs"));
        e.expect_creations("ns/rs", 2);
        assert!(!e.satisfied("ns/rs"));
        e.creation_observed("ns/rs");
        assert!(!e.satisfied("ns/rs"));
        e.creation_observed("ns/rs");
        assert!(e.satisfied("ns/rs"));

        e.expect_deletions("ns/rs", ["ns/a".to_string(), "ns/b".to_string()]);
        e.deletion_observed("ns/rs", "ns/a");
        // The same pod seen going twice counts once.
        e.deletion_observed("ns/rs", "ns/a");
        assert!(!e.satisfied("ns/rs"));
        e.deletion_observed("ns/rs", "ns/b");
        assert!(e.satisfied("ns/rs"));
        e.forget("ns/rs");
        assert!(e.satisfied("ns/rs"));
    }
}
