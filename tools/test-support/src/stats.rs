//! The figures benchmarks report.

use std::time::Duration;

/// The middle value; 0 for none. Benchmarks report the median of their rounds, which one
/// disturbed round cannot move.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or_default()
}

/// The nearest-rank percentile (`q` in 0..=1); `sorted` must be sorted ascending.
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Milliseconds, the unit latencies are printed in.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A goal's verdict, printed beside its figure.
pub fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "missed"
    }
}

/// Megabytes (10^6 bytes), the unit memory is printed in.
pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}
