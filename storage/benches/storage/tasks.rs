//! Many tasks sharing one row's op indices, started together and timed as one, and what they
//! tally.

use std::fmt::Display;
use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use storage::KeyValue;
use tokio::sync::Barrier;

use crate::stats::Latency;

#[derive(Default)]
pub struct TaskStats {
    ok: u64,
    errors: u64,
    first_error: Option<String>,
    latencies: Vec<Duration>,
    /// Results of creates, kept so updates can start from them (as the registry does with
    /// the watch cache's copy).
    pub created: Vec<(usize, KeyValue)>,
    /// Update functions called more than once (a lost compare-and-swap or a stale cached copy).
    pub retries: u64,
}

impl TaskStats {
    pub fn with_capacity(n: usize) -> Self {
        Self {
            latencies: Vec::with_capacity(n),
            ..Default::default()
        }
    }

    pub fn record<T, E: Display>(&mut self, started: Instant, result: Result<T, E>) -> Option<T> {
        self.latencies.push(started.elapsed());
        match result {
            Ok(v) => {
                self.ok += 1;
                Some(v)
            }
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    fn fail(&mut self, e: impl Display) {
        self.errors += 1;
        self.first_error.get_or_insert_with(|| e.to_string());
    }

    fn merge(&mut self, other: TaskStats) {
        self.ok += other.ok;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.latencies.extend(other.latencies);
        self.created.extend(other.created);
        self.retries += other.retries;
    }
}

/// What one system did for one row: added up over the rounds, so throughput counts only the
/// time that system was running.
#[derive(Default)]
pub struct Tally {
    stats: TaskStats,
    elapsed: Duration,
}

impl Tally {
    pub fn add(&mut self, part: Tally) {
        self.stats.merge(part.stats);
        self.elapsed += part.elapsed;
    }

    pub fn finish(self) -> RunResult {
        let TaskStats {
            ok,
            errors,
            first_error,
            latencies,
            created,
            retries,
        } = self.stats;
        RunResult {
            ops_per_sec: ok as f64 / self.elapsed.as_secs_f64().max(1e-9),
            ok,
            errors,
            first_error,
            latency: Latency::of(latencies),
            created,
            retries,
        }
    }
}

pub struct RunResult {
    pub ops_per_sec: f64,
    ok: u64,
    pub errors: u64,
    first_error: Option<String>,
    pub latency: Latency,
    pub created: Vec<(usize, KeyValue)>,
    retries: u64,
}

impl RunResult {
    /// This run's throughput as a multiple of `base`'s.
    pub fn ratio_to(&self, base: &RunResult) -> f64 {
        self.ops_per_sec / base.ops_per_sec.max(1e-9)
    }

    pub fn error_note(&self) -> String {
        let mut note = match (&self.first_error, self.errors) {
            (Some(e), n) if n > 0 => format!(" [{n} errors of {}, first: {e}]", n + self.ok),
            _ => String::new(),
        };
        if self.retries > 0 {
            note.push_str(&format!(" [{} update retries]", self.retries));
        }
        note
    }
}

/// Splits the op indices in `range` round-robin over `writers` tasks, starts them together,
/// and times them.
pub async fn run_concurrent<F, Fut>(writers: usize, range: Range<usize>, mut task: F) -> Tally
where
    F: FnMut(Vec<usize>) -> Fut,
    Fut: Future<Output = TaskStats> + Send + 'static,
{
    let writers = writers.max(1).min(range.len().max(1));
    let barrier = Arc::new(Barrier::new(writers + 1));
    let mut handles = Vec::with_capacity(writers);
    for w in 0..writers {
        let indices: Vec<usize> = range.clone().skip(w).step_by(writers).collect();
        let fut = task(indices);
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            fut.await
        }));
    }
    barrier.wait().await;
    let started = Instant::now();
    let mut total = TaskStats::default();
    for h in handles {
        match h.await {
            Ok(stats) => total.merge(stats),
            Err(e) => total.fail(format!("task failed: {e}")),
        }
    }
    Tally {
        elapsed: started.elapsed(),
        stats: total,
    }
}
