//! The benchmark's sizes, each overridable from the environment (see the crate docs).

use std::time::Duration;

pub struct Config {
    pub ops_1: usize,
    pub ops_n: usize,
    pub writers_n: usize,
    pub value_size: usize,
    pub watchers: usize,
    pub watch_events: usize,
    pub watch_interval: Duration,
    pub rounds: usize,
}

impl Config {
    pub fn from_env() -> Self {
        Self {
            ops_1: env_usize("BENCH_OPS_1", 2_000),
            ops_n: env_usize("BENCH_OPS", 20_000),
            writers_n: env_usize("BENCH_WRITERS", 64),
            value_size: env_usize("BENCH_VALUE", 1024),
            watchers: env_usize("BENCH_WATCHERS", 1_000),
            watch_events: env_usize("BENCH_WATCH_EVENTS", 200),
            watch_interval: Duration::from_millis(env_usize("BENCH_WATCH_INTERVAL_MS", 5) as u64),
            rounds: env_usize("BENCH_ROUNDS", 3),
        }
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("ignoring {name}={v:?}: not a positive integer; using {default}");
                default
            }
        },
        Err(_) => default,
    }
}
