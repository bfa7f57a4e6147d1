//! The soak: the real server under a steady mixed churn ([`churn`]) for a while, what it
//! holds sampled every few seconds, and the verdicts on it ([`report`]). One code for the
//! `soak` bench (an hour by default) and the short e2e test CI runs (a minute per backend).
//!
//! A run: start the binary with simulated nodes; make the widgets CRD and the `soak`
//! namespace; sample the idle server; churn for the given time while sampling; stop the churn
//! (every watch closes), delete every namespace it made and wait until they are gone; sample
//! the drained server.

mod churn;
mod report;
mod server;
mod tally;
mod watch;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use report::drained_allowance;
pub use report::{table, Counts, Report, Series};
pub use server::{LogLines, Sample};

use crate::https::Redial;
use crate::BackendKind;
use churn::{Churn, GROUP, NAMESPACE, NAMESPACE_PREFIX};
use server::{sample, Server, REQUEST_TIMEOUT};
use tally::{Client, Tally};

/// How long the drain may take: every churn namespace deleted and gone.
const DRAIN_LIMIT: Duration = Duration::from_secs(180);
/// How long the drained server has to come back to its idle tasks.
const SETTLE_LIMIT: Duration = Duration::from_secs(30);

pub struct Config {
    /// The server binary.
    pub bin: PathBuf,
    pub backend: BackendKind,
    /// How long the churn runs.
    pub duration: Duration,
    /// The start of the churn left out of the flatness figures.
    pub warm_up: Duration,
    pub sample_every: Duration,
    /// Simulated nodes (kubelets running the churn's pods).
    pub nodes: usize,
}

impl Config {
    /// A soak of `duration`: warm-up a sixth of it (between 15 s and 10 min), a sample every
    /// 5 s (every second on runs under five minutes), three nodes.
    pub fn new(bin: impl Into<PathBuf>, backend: BackendKind, duration: Duration) -> Self {
        let warm_up = (duration / 6).clamp(Duration::from_secs(15), Duration::from_secs(600));
        let sample_every = if duration < Duration::from_secs(300) {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(5)
        };
        Self {
            bin: bin.into(),
            backend,
            duration,
            warm_up,
            sample_every,
            nodes: 3,
        }
    }
}

/// Runs one soak; panics only when the server cannot be started or set up.
pub fn run(config: &Config) -> Report {
    let name = config.backend.name();
    let server = Server::start(&config.bin, config.backend, config.nodes);
    let (pid, port) = (server.api.pid(), server.api.port);
    let churn = Arc::new(Churn::new(port));
    set_up(port);
    std::thread::sleep(Duration::from_secs(3));
    let mut metrics = Redial::new(port, REQUEST_TIMEOUT);
    let idle = sample(pid, &mut metrics, 0.0)
        .unwrap_or_else(|e| panic!("{name}: sampling the idle server: {e}"));

    let started = Instant::now();
    let threads = churn.run();
    let mut samples = Vec::new();
    let mut next = started;
    let mut told = started;
    while started.elapsed() < config.duration {
        match sample(pid, &mut metrics, started.elapsed().as_secs_f64()) {
            Ok(s) => samples.push(s),
            Err(e) => churn.tally.error(format!("sampling: {e}")),
        }
        if told.elapsed() >= Duration::from_secs(60) {
            told = Instant::now();
            progress(name, &churn.tally, samples.last());
        }
        next += config.sample_every;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let churned = started.elapsed();
    churn.stop.store(true, Ordering::Relaxed);
    for thread in threads {
        if thread.join().is_err() {
            churn.tally.error("a churn thread panicked".into());
        }
    }
    drain(port, &churn.tally);
    let drained = settle(
        pid,
        &mut metrics,
        &idle,
        churned.as_secs_f64(),
        &churn.tally,
    );
    let t = &churn.tally;
    let counts = Counts {
        requests: Tally::get(&t.requests),
        errors: Tally::get(&t.errors),
        races: Tally::get(&t.races),
        watches: Tally::get(&t.watches),
        watches_abandoned: Tally::get(&t.watches_abandoned),
        watch_events: Tally::get(&t.watch_events),
        namespaces_created: Tally::get(&t.namespaces_created),
        namespaces_gone: Tally::get(&t.namespaces_gone),
        rollouts_checked: Tally::get(&t.rollouts_checked),
        rollouts_complete: Tally::get(&t.rollouts_complete),
        kept_errors: t.kept(),
    };
    Report {
        backend: config.backend,
        churned,
        warm_up: config.warm_up,
        idle,
        samples,
        drained,
        counts,
        log: server.log(),
    }
}

fn progress(name: &str, tally: &Tally, last: Option<&Sample>) {
    let last = last.copied().unwrap_or_default();
    eprintln!(
        "soak {name}: {:.0} min: anon {:.1} MB, {} tasks, {} threads, {} fds; {} requests, {} errors",
        last.at / 60.0,
        last.anon as f64 / 1e6,
        last.tasks,
        last.threads,
        last.fds,
        Tally::get(&tally.requests),
        Tally::get(&tally.errors)
    );
}

/// The widgets CRD (served), the churn's namespace and its default service account (which
/// pods need to be admitted).
fn set_up(port: u16) {
    let tally = Arc::new(Tally::default());
    let mut client = Client::new(port, tally.clone());
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    client.call("POST", crds, Some(&churn::crd()));
    client.call(
        "POST",
        "/api/v1/namespaces",
        Some(&json!({"metadata": {"name": NAMESPACE}})),
    );
    let widgets = format!("/apis/{GROUP}/v1/namespaces/{NAMESPACE}/widgets");
    let account = format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default");
    let since = Instant::now();
    while client.exists(&widgets) != Some(true) || client.exists(&account) != Some(true) {
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "the widgets CRD or the default service account was not there within 60 s: {:?}",
            tally.kept()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        Tally::get(&tally.errors),
        0,
        "setting up: {:?}",
        tally.kept()
    );
}

/// Deletes every namespace the churn made (and its own) and waits until all are gone.
fn drain(port: u16, tally: &Arc<Tally>) {
    let mut client = Client::new(port, tally.clone());
    let ours = |list: &serde_json::Value| -> Vec<String> {
        crate::names(list)
            .into_iter()
            .filter(|n| n == NAMESPACE || n.starts_with(NAMESPACE_PREFIX))
            .collect()
    };
    let Some(list) = client.call("GET", "/api/v1/namespaces", None).ok() else {
        return;
    };
    for ns in ours(&list) {
        client.call("DELETE", &format!("/api/v1/namespaces/{ns}"), None);
    }
    let since = Instant::now();
    loop {
        let left = client
            .call("GET", "/api/v1/namespaces", None)
            .ok()
            .map(|l| ours(&l));
        match left {
            Some(left) if left.is_empty() => return,
            Some(left) if since.elapsed() > DRAIN_LIMIT => {
                tally.error(format!(
                    "namespaces still there {DRAIN_LIMIT:?} after the drain began: {left:?}"
                ));
                return;
            }
            None if since.elapsed() > DRAIN_LIMIT => return,
            _ => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

/// The drained server's figures, once its tasks are back near idle or after [`SETTLE_LIMIT`].
fn settle(pid: u32, metrics: &mut Redial, idle: &Sample, at: f64, tally: &Tally) -> Sample {
    let since = Instant::now();
    loop {
        match sample(pid, metrics, at + since.elapsed().as_secs_f64()) {
            Ok(s) if s.tasks <= drained_allowance(idle) || since.elapsed() > SETTLE_LIMIT => {
                return s
            }
            Ok(_) => {}
            Err(e) if since.elapsed() > SETTLE_LIMIT => {
                tally.error(format!("sampling the drained server: {e}"));
                return Sample::default();
            }
            Err(_) => {}
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
