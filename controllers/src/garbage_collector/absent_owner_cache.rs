//! Owners known not to exist (upstream's ReferenceCache): a bounded LRU, so that thousands of
//! dependents of one deleted owner cost one lookup of it, not thousands.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use super::reference::ObjectReference;

pub struct AbsentOwnerCache {
    inner: Mutex<Lru>,
}

struct Lru {
    capacity: usize,
    tick: u64,
    /// Entry → the tick of its last use.
    used: HashMap<ObjectReference, u64>,
    /// Tick → entry, oldest first.
    order: BTreeMap<u64, ObjectReference>,
}

impl Lru {
    fn touch(&mut self, key: &ObjectReference) -> bool {
        let Some(last) = self.used.get_mut(key) else {
            return false;
        };
        self.order.remove(last);
        self.tick += 1;
        *last = self.tick;
        self.order.insert(self.tick, key.clone());
        true
    }
}

impl AbsentOwnerCache {
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Lru {
                capacity: capacity.max(1),
                tick: 0,
                used: HashMap::new(),
                order: BTreeMap::new(),
            }),
        }
    }

    pub fn add(&self, key: ObjectReference) {
        let mut lru = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if lru.touch(&key) {
            return;
        }
        lru.tick += 1;
        let tick = lru.tick;
        lru.used.insert(key.clone(), tick);
        lru.order.insert(tick, key);
        while lru.used.len() > lru.capacity {
            let Some((_, oldest)) = lru.order.pop_first() else {
                break;
            };
            lru.used.remove(&oldest);
        }
    }

    /// Whether `key` is known absent; a hit counts as a use.
    pub fn has(&self, key: &ObjectReference) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .touch(key)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .used
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(uid: &str) -> ObjectReference {
        ObjectReference {
            uid: uid.into(),
            ..Default::default()
        }
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let cache = AbsentOwnerCache::new(2);
        cache.add(reference("a"));
        cache.add(reference("b"));
        // Using "a" makes "b" the oldest.
        assert!(cache.has(&reference("a")));
        cache.add(reference("c"));
        assert!(cache.has(&reference("a")));
        assert!(!cache.has(&reference("b")));
        assert!(cache.has(&reference("c")));
        assert_eq!(cache.len(), 2);
        // Adding what is there only refreshes it.
        cache.add(reference("a"));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn namespace_is_part_of_the_key() {
        let cache = AbsentOwnerCache::new(10);
        let cluster = reference("x");
        let namespaced = ObjectReference {
            namespace: "ns".into(),
            ..reference("x")
        };
        cache.add(namespaced.clone());
        assert!(cache.has(&namespaced));
        assert!(!cache.has(&cluster));
    }
}
