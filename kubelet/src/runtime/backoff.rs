//! The kubelet's per-container restart back-off (client-go's flowcontrol.Backoff as the
//! kubelet uses it): the first restart is immediate, each later one waits twice as long as
//! the one before, up to the ceiling; an entry untouched for twice the ceiling starts over.

use std::time::Duration;

use tokio::time::Instant;

#[derive(Clone, Debug)]
pub struct CrashBackoff {
    initial: Duration,
    max: Duration,
    /// The current back-off and when it was last moved on.
    entry: Option<(Duration, Instant)>,
}

impl CrashBackoff {
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            entry: None,
        }
    }

    fn expired(&self, event: Instant, last: Instant) -> bool {
        event.saturating_duration_since(last) > self.max * 2
    }

    /// The back-off a container that finished at `finished` still waits out at `now`.
    pub fn in_backoff_since(&self, finished: Instant, now: Instant) -> Option<Duration> {
        let (backoff, last) = self.entry?;
        if self.expired(finished, last) {
            return None;
        }
        (now.saturating_duration_since(finished) < backoff).then_some(backoff)
    }

    /// Moves the back-off on at a restart of a container that finished at `finished`.
    pub fn next(&mut self, finished: Instant) {
        let backoff = match self.entry {
            Some((d, last)) if !self.expired(finished, last) => (d * 2).min(self.max),
            _ => self.initial,
        };
        self.entry = Some((backoff, finished));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_the_ceiling() {
        let t0 = Instant::now();
        let mut b = CrashBackoff::new(Duration::from_secs(10), Duration::from_secs(40));
        assert_eq!(
            b.in_backoff_since(t0, t0),
            None,
            "the first restart is immediate"
        );
        b.next(t0);
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(b.in_backoff_since(t1, t1), Some(Duration::from_secs(10)));
        assert_eq!(b.in_backoff_since(t1, t1 + Duration::from_secs(10)), None);
        b.next(t1);
        let t2 = t1 + Duration::from_secs(11);
        assert_eq!(b.in_backoff_since(t2, t2), Some(Duration::from_secs(20)));
        b.next(t2);
        b.next(t2);
        assert_eq!(b.in_backoff_since(t2, t2), Some(Duration::from_secs(40)));
        let late = t2 + Duration::from_secs(100);
        assert_eq!(
            b.in_backoff_since(late, late),
            None,
            "a long quiet spell resets it"
        );
    }
}
