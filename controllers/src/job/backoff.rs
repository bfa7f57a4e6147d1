//! The wait before failed pods are replaced (upstream's backoffRecord and backoffStore): it
//! doubles with each failure since the last success, from the last failure's time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BackoffRecord {
    pub failures_after_last_success: u32,
    pub last_failure: Option<DateTime<Utc>>,
}

impl BackoffRecord {
    /// The record after pods newly seen finished: a success starts the count over.
    pub fn after(
        &self,
        succeeded: usize,
        failure_times: impl IntoIterator<Item = DateTime<Utc>>,
    ) -> Self {
        let mut next = if succeeded > 0 {
            Self::default()
        } else {
            self.clone()
        };
        for at in failure_times {
            next.failures_after_last_success += 1;
            next.last_failure = Some(next.last_failure.map_or(at, |l| l.max(at)));
        }
        next
    }

    /// How long until new pods may be created.
    pub fn remaining(&self, now: DateTime<Utc>, base: Duration, max: Duration) -> Duration {
        let Some(last) = self.last_failure else {
            return Duration::ZERO;
        };
        if self.failures_after_last_success == 0 {
            return Duration::ZERO;
        }
        let exponent = (self.failures_after_last_success - 1).min(31);
        let backoff = base.saturating_mul(1u32 << exponent).min(max);
        let elapsed = (now - last).to_std().unwrap_or(Duration::ZERO);
        backoff.saturating_sub(elapsed)
    }
}

/// Records by Job key.
#[derive(Default)]
pub struct BackoffStore {
    records: Mutex<HashMap<String, BackoffRecord>>,
}

impl BackoffStore {
    pub fn get(&self, key: &str) -> BackoffRecord {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
            .unwrap_or_default()
    }

    pub fn set(&self, key: &str, record: BackoffRecord) {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), record);
    }

    pub fn forget(&self, key: &str) {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_per_failure_since_the_last_success_up_to_the_cap() {
        let t0 = Utc::now();
        let base = Duration::from_secs(10);
        let max = Duration::from_secs(25);
        let none = BackoffRecord::default();
        assert_eq!(none.remaining(t0, base, max), Duration::ZERO);
        let one = none.after(0, [t0]);
        assert_eq!(one.remaining(t0, base, max), base);
        let two = one.after(0, [t0]);
        assert_eq!(two.remaining(t0, base, max), Duration::from_secs(20));
        let three = two.after(0, [t0]);
        assert_eq!(three.remaining(t0, base, max), max);
        let later = t0 + chrono::Duration::seconds(5);
        assert_eq!(three.remaining(later, base, max), Duration::from_secs(20));
        assert_eq!(three.after(1, []).remaining(t0, base, max), Duration::ZERO);
    }
}
