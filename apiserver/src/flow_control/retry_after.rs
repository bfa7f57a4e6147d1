//! The `Retry-After` of refusals (upstream's dropped_requests_tracker.go): 1 second at first;
//! doubled (up to 32) when a level refused at least three times that many requests within the
//! last Retry-After seconds, at most once per Retry-After; lowered by one when it refused
//! fewer than Retry-After. Like TCP's back-off, so that clients told to wait spread out.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

const MAX_RETRY_AFTER: i64 = 32;

#[derive(Debug)]
struct Level {
    /// (unix second, refusals in it), oldest first; the current second last.
    history: VecDeque<(i64, i64)>,
    retry_after: i64,
    raised_at: i64,
}

impl Level {
    fn new() -> Self {
        Self {
            history: VecDeque::new(),
            retry_after: 1,
            raised_at: 0,
        }
    }

    fn record(&mut self, now: i64) {
        match self.history.back_mut() {
            Some((second, count)) if *second == now => {
                *count += 1;
                return;
            }
            _ => {}
        }
        // A new second: judge the seconds before it, then start counting this one.
        self.adjust(now);
        self.history.push_back((now, 1));
        while self
            .history
            .front()
            .is_some_and(|(second, _)| now - second > MAX_RETRY_AFTER)
        {
            self.history.pop_front();
        }
    }

    fn adjust(&mut self, now: i64) {
        let window = self.retry_after;
        let dropped: i64 = self
            .history
            .iter()
            .filter(|(second, _)| now - second <= window && *second < now)
            .map(|(_, count)| count)
            .sum();
        if now - self.raised_at >= window && dropped >= 3 * window {
            self.retry_after = (window * 2).min(MAX_RETRY_AFTER);
            self.raised_at = now;
        } else if dropped < window && window > 1 {
            self.retry_after = window - 1;
        }
    }
}

#[derive(Debug, Default)]
pub struct DroppedRequests(Mutex<HashMap<String, Level>>);

impl DroppedRequests {
    /// A refusal by `level` at `now` (unix seconds).
    pub fn record(&self, level: &str, now: i64) {
        if let Ok(mut levels) = self.0.lock() {
            levels
                .entry(level.to_string())
                .or_insert_with(Level::new)
                .record(now);
        }
    }

    /// The seconds a client refused by `level` is told to wait.
    pub fn retry_after(&self, level: &str) -> i64 {
        self.0
            .lock()
            .ok()
            .and_then(|levels| levels.get(level).map(|l| l.retry_after))
            .unwrap_or(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backs_off_under_sustained_refusals_and_recovers() {
        let tracker = DroppedRequests::default();
        assert_eq!(tracker.retry_after("pl"), 1);
        // 5 refusals in second 100: judged when second 101 starts (5 >= 3 x 1).
        for _ in 0..5 {
            tracker.record("pl", 100);
        }
        assert_eq!(tracker.retry_after("pl"), 1);
        tracker.record("pl", 101);
        assert_eq!(tracker.retry_after("pl"), 2);
        // Not raised again within 2 s of the raise, however many.
        for _ in 0..20 {
            tracker.record("pl", 102);
        }
        assert_eq!(tracker.retry_after("pl"), 2);
        tracker.record("pl", 103);
        assert_eq!(tracker.retry_after("pl"), 4);
        // Quiet: one refusal in a long while lowers it by one.
        tracker.record("pl", 200);
        assert_eq!(tracker.retry_after("pl"), 3);
        // Other levels are their own.
        assert_eq!(tracker.retry_after("other"), 1);
    }
}
