//! Latency distributions reduced to the figures the report prints, in the units it prints them.

use std::time::Duration;

use test_support::stats::{ms, percentile};

pub struct Latency {
    pub mean: Duration,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Latency {
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let sum: Duration = samples.iter().sum();
        Self {
            mean: sum / (samples.len().max(1) as u32),
            p50: percentile(&samples, 0.50),
            p99: percentile(&samples, 0.99),
            max: samples.last().copied().unwrap_or_default(),
        }
    }

    /// As the put / update / get rows print it.
    pub fn mean_p50_p99(&self) -> String {
        format!(
            "{:.2}/{:.2}/{:.2}",
            ms(self.mean),
            ms(self.p50),
            ms(self.p99)
        )
    }

    /// As the watch rows print it.
    pub fn p50_p99_max(&self) -> String {
        format!(
            "p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
            ms(self.p50),
            ms(self.p99),
            ms(self.max)
        )
    }
}
