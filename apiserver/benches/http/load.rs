//! Concurrent clients sharing one phase's inputs, started together and timed as one, and the
//! figures a phase reports.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use test_support::stats::percentile;
use tokio::sync::Barrier;

pub struct Phase {
    pub ops_per_sec: f64,
    pub ok: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub p50: Duration,
    pub p99: Duration,
}

#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    errors: u64,
    first_error: Option<String>,
}

/// Deals `inputs` round-robin to `clients` tasks, each running `op` on its share one after
/// another; ops/s counts successful ops over the time from the common start to the last end.
pub async fn run<I, F, Fut>(clients: usize, inputs: Vec<I>, op: F) -> Phase
where
    I: Send + 'static,
    F: Fn(I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    let clients = clients.clamp(1, inputs.len().max(1));
    let mut shares: Vec<Vec<I>> = (0..clients)
        .map(|_| Vec::with_capacity(inputs.len() / clients + 1))
        .collect();
    for (i, input) in inputs.into_iter().enumerate() {
        shares[i % clients].push(input);
    }
    let op = Arc::new(op);
    // Tasks are spawned before the clock starts, so spawning 64 of them is not timed.
    let barrier = Arc::new(Barrier::new(clients + 1));
    let tasks: Vec<_> = shares
        .into_iter()
        .map(|share| {
            let (op, barrier) = (op.clone(), barrier.clone());
            tokio::spawn(async move {
                let mut tally = Tally {
                    latencies: Vec::with_capacity(share.len()),
                    ..Default::default()
                };
                barrier.wait().await;
                for input in share {
                    let started = Instant::now();
                    let result = op(input).await;
                    tally.latencies.push(started.elapsed());
                    if let Err(e) = result {
                        tally.errors += 1;
                        tally.first_error.get_or_insert(e);
                    }
                }
                tally
            })
        })
        .collect();
    barrier.wait().await;
    let started = Instant::now();
    let mut total = Tally::default();
    for task in tasks {
        match task.await {
            Ok(t) => {
                total.latencies.extend(t.latencies);
                total.errors += t.errors;
                if total.first_error.is_none() {
                    total.first_error = t.first_error;
                }
            }
            Err(e) => {
                total.errors += 1;
                total.first_error.get_or_insert(format!("client task: {e}"));
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    let mut latencies = total.latencies;
    latencies.sort_unstable();
    let ok = (latencies.len() as u64).saturating_sub(total.errors);
    Phase {
        ops_per_sec: ok as f64 / elapsed,
        ok,
        errors: total.errors,
        first_error: total.first_error,
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
    }
}
