//! Exponential backoff with jitter between failed list or watch attempts, so a broken backend
//! is not hammered by every informer at once.

use std::time::Duration;

pub struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            next: initial,
        }
    }

    /// The wait before the next attempt: the current step plus up to as much again of jitter,
    /// capped at the maximum; the step doubles.
    pub fn next_delay(&mut self) -> Duration {
        let step = self.next;
        self.next = (self.next * 2).min(self.max);
        step.mul_f64(1.0 + rand::random::<f64>()).min(self.max)
    }

    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(500));
        let first = b.next_delay();
        assert!(first >= Duration::from_millis(100) && first <= Duration::from_millis(200));
        let second = b.next_delay();
        assert!(second >= Duration::from_millis(200) && second <= Duration::from_millis(400));
        for _ in 0..5 {
            assert!(b.next_delay() <= Duration::from_millis(500));
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(200));
    }
}
