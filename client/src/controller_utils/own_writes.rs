//! A controller's own latest writes, until its informer shows them. A sync that starts
//! before the informer delivers the previous sync's status write would otherwise work from
//! the older object: its write is refused as a conflict, after it already acted on the pods
//! (deleted them, say), and the retry then sees those pods in a state it reads differently.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use registry::object;
use serde_json::Value;

#[derive(Default)]
pub struct OwnWrites {
    written: Mutex<HashMap<String, Arc<Value>>>,
}

impl OwnWrites {
    /// Remembers `object` as stored by this controller under `key`.
    pub fn record(&self, key: &str, object: Value) {
        self.lock().insert(key.to_string(), Arc::new(object));
    }

    /// The newer of the informer's copy and this controller's last write (the same object,
    /// by uid). Once the informer has caught up, the write is forgotten.
    pub fn freshest(&self, key: &str, cached: Arc<Value>) -> Arc<Value> {
        let mut written = self.lock();
        let Some(own) = written.get(key) else {
            return cached;
        };
        if object::uid(own) == object::uid(&cached) && revision(own) > revision(&cached) {
            return own.clone();
        }
        written.remove(key);
        cached
    }

    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Value>>> {
        self.written.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// resourceVersions are the store's revisions here, so they order writes; one that does not
/// parse never counts as newer.
fn revision(obj: &Value) -> u64 {
    object::resource_version(obj).parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(uid: &str, rv: &str, active: i64) -> Value {
        json!({"metadata": {"uid": uid, "resourceVersion": rv}, "status": {"active": active}})
    }

    /// Whether `freshest` answers with the informer's copy itself.
    fn answers_cached(writes: &OwnWrites, key: &str, cached: &Arc<Value>) -> bool {
        Arc::ptr_eq(&writes.freshest(key, cached.clone()), cached)
    }

    #[test]
    fn a_newer_own_write_wins_until_the_informer_catches_up() {
        let writes = OwnWrites::default();
        writes.record("ns/a", job("u1", "12", 3));
        let stale = Arc::new(job("u1", "9", 0));
        assert_eq!(
            writes.freshest("ns/a", stale.clone())["status"]["active"],
            3
        );
        // Caught up: the informer's copy, and the write is dropped.
        assert!(answers_cached(
            &writes,
            "ns/a",
            &Arc::new(job("u1", "12", 3))
        ));
        assert!(answers_cached(&writes, "ns/a", &stale));
    }

    #[test]
    fn a_recreated_object_is_never_replaced_by_its_predecessor() {
        let writes = OwnWrites::default();
        writes.record("ns/a", job("u1", "30", 3));
        assert!(answers_cached(
            &writes,
            "ns/a",
            &Arc::new(job("u2", "20", 0))
        ));
    }

    #[test]
    fn unparsable_versions_never_win() {
        let writes = OwnWrites::default();
        writes.record("ns/a", job("u1", "x", 3));
        assert!(answers_cached(
            &writes,
            "ns/a",
            &Arc::new(job("u1", "5", 0))
        ));
    }

    #[test]
    fn a_forgotten_write_is_not_answered() {
        let writes = OwnWrites::default();
        writes.record("ns/b", job("u1", "7", 3));
        writes.forget("ns/b");
        assert!(answers_cached(
            &writes,
            "ns/b",
            &Arc::new(job("u1", "5", 0))
        ));
    }
}
