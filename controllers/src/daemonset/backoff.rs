//! The back-off before a failed daemon pod is replaced (upstream's flowcontrol.Backoff keyed
//! by DaemonSet uid and node): a kubelet that keeps rejecting the pod must not make the
//! controller delete and recreate it in a hot loop.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

struct Entry {
    backoff: Duration,
    last_update: Instant,
}

pub struct FailedPodsBackoff {
    initial: Duration,
    max: Duration,
    entries: Mutex<HashMap<String, Entry>>,
}

impl FailedPodsBackoff {
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, Entry>) -> R) -> R {
        f(&mut self.entries.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Whether `key` is still waiting out the back-off set at its last failure; if so, how
    /// long is left.
    pub fn remaining(&self, key: &str, now: Instant) -> Option<Duration> {
        self.with(|m| {
            let e = m.get(key)?;
            let elapsed = now.saturating_duration_since(e.last_update);
            (elapsed < e.backoff).then(|| e.backoff - elapsed)
        })
    }

    /// Records a failure: the back-off starts at `initial`, doubles up to `max`, and starts
    /// over after a quiet spell of twice the maximum.
    pub fn next(&self, key: &str, now: Instant) {
        let (initial, max) = (self.initial, self.max);
        self.with(|m| {
            let entry = m.entry(key.to_string()).or_insert(Entry {
                backoff: Duration::ZERO,
                last_update: now,
            });
            let expired = now.saturating_duration_since(entry.last_update) > 2 * max;
            entry.backoff = if entry.backoff.is_zero() || expired {
                initial
            } else {
                (entry.backoff * 2).min(max)
            };
            entry.last_update = now;
        });
    }

    /// Drops entries idle past twice the maximum, so deleted DaemonSets and nodes leave
    /// nothing behind.
    pub fn gc(&self, now: Instant) {
        let max = self.max;
        self.with(|m| m.retain(|_, e| now.saturating_duration_since(e.last_update) <= 2 * max));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_maximum() {
        let b = FailedPodsBackoff::new(Duration::from_secs(1), Duration::from_secs(3));
        let t0 = Instant::now();
        assert_eq!(b.remaining("k", t0), None);
        b.next("k", t0);
        assert_eq!(b.remaining("k", t0), Some(Duration::from_secs(1)));
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(b.remaining("k", t1), None);
        b.next("k", t1);
        assert_eq!(b.remaining("k", t1), Some(Duration::from_secs(2)));
        b.next("k", t1);
        assert_eq!(b.remaining("k", t1), Some(Duration::from_secs(3)));
        let later = t1 + Duration::from_secs(7);
        b.next("k", later);
        assert_eq!(b.remaining("k", later), Some(Duration::from_secs(1)));
        b.gc(later + Duration::from_secs(7));
        assert_eq!(b.remaining("k", later), None);
    }
}
