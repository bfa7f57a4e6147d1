//! Storage benchmark, all in one run, side by side:
//!
//! 1. raw etcd through `etcd_client` (put / get of 1 KiB values),
//! 2. our `Store` on the etcd backend ("ours-etcd"), as a ratio of raw etcd,
//! 3. our `Store` on the embedded backend (data in a temp dir), as a ratio of raw etcd,
//!
//! each with 1 and with many concurrent writers (tokio tasks), and
//!
//! 4. watch fan-out latency through a `Cacher` on each backend: many watchers, one writer doing
//!    spaced writes, latency from the moment the write was sent to each delivery.
//!
//! Run: `cargo bench -p storage --bench storage` (needs the `etcd` binary, or `$ETCD_BIN`).
//!
//! Environment overrides (defaults in brackets):
//! - `BENCH_OPS`       ops of each many-writer run [20000]
//! - `BENCH_OPS_1`     ops of each single-writer run [2000]
//! - `BENCH_WRITERS`   concurrency of the many-writer runs [64]
//! - `BENCH_VALUE`     value size in bytes [1024]
//! - `BENCH_WATCHERS`  watchers per cacher [1000]
//! - `BENCH_WATCH_EVENTS`       writes observed by the watchers [200]
//! - `BENCH_WATCH_INTERVAL_MS`  spacing of those writes [5]

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use futures::StreamExt;
use storage::backend::etcd::{EtcdBackend, EtcdConfig};
use storage::backend::DynBackend;
use storage::embedded::EmbeddedBackend;
use storage::testing::EtcdServer;
use storage::{
    Cacher, CacherConfig, EventKind, Interface, KeyValue, ReadRevision, Store, UpdateOptions,
    WatchOptions,
};
use tokio::sync::{watch, Barrier};

// ---------------------------------------------------------------------------------------------
// Configuration

struct Config {
    ops_1: usize,
    ops_n: usize,
    writers_n: usize,
    value_size: usize,
    watchers: usize,
    watch_events: usize,
    watch_interval: Duration,
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

impl Config {
    fn from_env() -> Self {
        Self {
            ops_1: env_usize("BENCH_OPS_1", 2_000),
            ops_n: env_usize("BENCH_OPS", 20_000),
            writers_n: env_usize("BENCH_WRITERS", 64),
            value_size: env_usize("BENCH_VALUE", 1024),
            watchers: env_usize("BENCH_WATCHERS", 1_000),
            watch_events: env_usize("BENCH_WATCH_EVENTS", 200),
            watch_interval: Duration::from_millis(env_usize("BENCH_WATCH_INTERVAL_MS", 5) as u64),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Running N concurrent tasks over a set of op indices

#[derive(Default)]
struct TaskStats {
    ok: u64,
    errors: u64,
    first_error: Option<String>,
    latencies: Vec<Duration>,
    /// Results of creates, kept so updates can start from them (as the registry does with
    /// the watch cache's copy).
    created: Vec<(usize, KeyValue)>,
}

impl TaskStats {
    fn with_capacity(n: usize) -> Self {
        Self {
            latencies: Vec::with_capacity(n),
            ..Default::default()
        }
    }

    fn record<T, E: std::fmt::Display>(
        &mut self,
        started: Instant,
        result: Result<T, E>,
    ) -> Option<T> {
        self.latencies.push(started.elapsed());
        match result {
            Ok(v) => {
                self.ok += 1;
                Some(v)
            }
            Err(e) => {
                self.errors += 1;
                if self.first_error.is_none() {
                    self.first_error = Some(e.to_string());
                }
                None
            }
        }
    }
}

struct RunResult {
    ops_per_sec: f64,
    ok: u64,
    errors: u64,
    first_error: Option<String>,
    mean: Duration,
    p50: Duration,
    p99: Duration,
    created: Vec<(usize, KeyValue)>,
}

impl RunResult {
    fn error_note(&self) -> String {
        match (&self.first_error, self.errors) {
            (Some(e), n) if n > 0 => format!(" [{n} errors of {}, first: {e}]", n + self.ok),
            _ => String::new(),
        }
    }
}

/// Splits `0..ops` round-robin over `writers` tasks, starts them together, and times them.
async fn run_concurrent<F, Fut>(writers: usize, ops: usize, mut task: F) -> RunResult
where
    F: FnMut(Vec<usize>) -> Fut,
    Fut: Future<Output = TaskStats> + Send + 'static,
{
    let writers = writers.max(1).min(ops.max(1));
    let barrier = Arc::new(Barrier::new(writers + 1));
    let mut handles = Vec::with_capacity(writers);
    for w in 0..writers {
        let indices: Vec<usize> = (w..ops).step_by(writers).collect();
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
            Ok(stats) => {
                total.ok += stats.ok;
                total.errors += stats.errors;
                if total.first_error.is_none() {
                    total.first_error = stats.first_error;
                }
                total.latencies.extend(stats.latencies);
                total.created.extend(stats.created);
            }
            Err(e) => {
                total.errors += 1;
                total
                    .first_error
                    .get_or_insert_with(|| format!("task failed: {e}"));
            }
        }
    }
    let elapsed = started.elapsed();
    total.latencies.sort_unstable();
    let sum: Duration = total.latencies.iter().sum();
    let mean = sum / (total.latencies.len().max(1) as u32);
    RunResult {
        mean,
        ops_per_sec: total.ok as f64 / elapsed.as_secs_f64().max(1e-9),
        ok: total.ok,
        errors: total.errors,
        first_error: total.first_error,
        p50: percentile(&total.latencies, 0.50),
        p99: percentile(&total.latencies, 0.99),
        created: total.created,
    }
}

/// `sorted` must be sorted ascending.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A value of `size` bytes, distinct per `tag` so updates really change it.
fn value_of(size: usize, tag: u8) -> Bytes {
    let mut v = vec![b'a' + (tag % 26); size];
    if let Some(first) = v.first_mut() {
        *first = b'v';
    }
    Bytes::from(v)
}

/// Gets read the written keys in a scrambled order.
fn scrambled(i: usize, n: usize) -> usize {
    (i.wrapping_mul(7919).wrapping_add(13)) % n.max(1)
}

// ---------------------------------------------------------------------------------------------
// The three systems

fn raw_key(phase: &str, i: usize) -> String {
    format!("/registry/raw-{phase}/k{i:08}")
}

fn ours_key(phase: &str, i: usize) -> String {
    format!("/tput-{phase}/k{i:08}")
}

async fn raw_put(
    client: &etcd_client::Client,
    phase: &str,
    writers: usize,
    ops: usize,
    value: Bytes,
) -> RunResult {
    run_concurrent(writers, ops, |indices| {
        let mut client = client.clone();
        let value = value.clone();
        let phase = phase.to_string();
        async move {
            let mut st = TaskStats::with_capacity(indices.len());
            for i in indices {
                let t = Instant::now();
                let r = client.put(raw_key(&phase, i), value.to_vec(), None).await;
                st.record(t, r);
            }
            st
        }
    })
    .await
}

async fn raw_get(
    client: &etcd_client::Client,
    phase: &str,
    writers: usize,
    ops: usize,
) -> RunResult {
    run_concurrent(writers, ops, |indices| {
        let mut client = client.clone();
        let phase = phase.to_string();
        async move {
            let mut st = TaskStats::with_capacity(indices.len());
            for i in indices {
                let key = raw_key(&phase, scrambled(i, ops));
                let t = Instant::now();
                let r = client.get(key.as_str(), None).await;
                let r = match r {
                    Ok(resp) if resp.kvs().is_empty() => Err(format!("{key} not found")),
                    Ok(_) => Ok(()),
                    Err(e) => Err(e.to_string()),
                };
                st.record(t, r);
            }
            st
        }
    })
    .await
}

fn raw_txn_key(phase: &str, i: usize) -> String {
    format!("/registry/rawtxn-{phase}/k{i:08}")
}

/// The same compare-and-swap the etcd backend's `put_if` sends, straight through `etcd_client`:
/// tells etcd's cost of a txn apart from our layers' cost.
async fn raw_txn(
    client: &etcd_client::Client,
    phase: &str,
    writers: usize,
    ops: usize,
    value: Bytes,
    expected: Option<Arc<Vec<Option<KeyValue>>>>,
) -> RunResult {
    run_concurrent(writers, ops, |indices| {
        let mut client = client.clone();
        let value = value.clone();
        let phase = phase.to_string();
        let expected = expected.clone();
        async move {
            let mut st = TaskStats::with_capacity(indices.len());
            for i in indices {
                let key = raw_txn_key(&phase, i);
                let exp = expected
                    .as_ref()
                    .and_then(|e| e.get(i).cloned().flatten())
                    .map_or(0, |kv| kv.mod_revision);
                let txn = Txn::new()
                    .when([Compare::mod_revision(key.as_str(), CompareOp::Equal, exp)])
                    .and_then([TxnOp::put(
                        key.as_str(),
                        value.to_vec(),
                        Some(PutOptions::new().with_prev_key()),
                    )])
                    .or_else([TxnOp::get(key.as_str(), None)]);
                let t = Instant::now();
                let r = match client.txn(txn).await {
                    Ok(resp) if resp.succeeded() => Ok(resp.header().map_or(0, |h| h.revision())),
                    Ok(_) => Err(format!("{key}: compare failed")),
                    Err(e) => Err(e.to_string()),
                };
                if let Some(revision) = st.record(t, r) {
                    st.created.push((
                        i,
                        KeyValue {
                            key,
                            value: Bytes::new(),
                            create_revision: revision,
                            mod_revision: revision,
                            version: 1,
                        },
                    ));
                }
            }
            st
        }
    })
    .await
}

async fn store_create(
    store: &Store,
    phase: &str,
    writers: usize,
    ops: usize,
    value: Bytes,
) -> RunResult {
    run_concurrent(writers, ops, |indices| {
        let store = store.clone();
        let value = value.clone();
        let phase = phase.to_string();
        async move {
            let mut st = TaskStats::with_capacity(indices.len());
            st.created.reserve(indices.len());
            for i in indices {
                let t = Instant::now();
                let r = store.create(&ours_key(&phase, i), value.clone()).await;
                if let Some(kv) = st.record(t, r) {
                    st.created.push((i, kv));
                }
            }
            st
        }
    })
    .await
}

/// guaranteed_update starting from the value the create returned (one compare-and-swap, the
/// path the registry takes with the watch cache's copy); without it, it is a read plus a txn.
async fn store_update(
    store: &Store,
    phase: &str,
    writers: usize,
    ops: usize,
    value: Bytes,
    created: Arc<Vec<Option<KeyValue>>>,
) -> RunResult {
    run_concurrent(writers, ops, |indices| {
        let store = store.clone();
        let value = value.clone();
        let phase = phase.to_string();
        let created = created.clone();
        async move {
            let mut st = TaskStats::with_capacity(indices.len());
            for i in indices {
                let opts = UpdateOptions {
                    cached: created.get(i).cloned().flatten(),
                    ..Default::default()
                };
                let v = value.clone();
                let mut update = move |_: Option<&KeyValue>| Ok(v.clone());
                let t = Instant::now();
                let r = store
                    .guaranteed_update(&ours_key(&phase, i), opts, &mut update)
                    .await;
                st.record(t, r);
            }
            st
        }
    })
    .await
}

async fn store_get(store: &Store, phase: &str, writers: usize, ops: usize) -> RunResult {
    run_concurrent(writers, ops, |indices| {
        let store = store.clone();
        let phase = phase.to_string();
        async move {
            let mut st = TaskStats::with_capacity(indices.len());
            for i in indices {
                let key = ours_key(&phase, scrambled(i, ops));
                let t = Instant::now();
                let r = store.get(&key, ReadRevision::Latest).await;
                st.record(t, r);
            }
            st
        }
    })
    .await
}

fn index_created(created: Vec<(usize, KeyValue)>, ops: usize) -> Arc<Vec<Option<KeyValue>>> {
    let mut out = vec![None; ops];
    for (i, kv) in created {
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(kv);
        }
    }
    Arc::new(out)
}

// ---------------------------------------------------------------------------------------------
// Reporting

struct Row {
    label: String,
    raw: RunResult,
    /// Diagnostic only: the backend's compare-and-swap txn sent raw (put and update rows).
    raw_txn: Option<RunResult>,
    ours: RunResult,
    embedded: RunResult,
}

impl Row {
    fn ours_ratio(&self) -> f64 {
        self.ours.ops_per_sec / self.raw.ops_per_sec.max(1e-9)
    }

    fn embedded_ratio(&self) -> f64 {
        self.embedded.ops_per_sec / self.raw.ops_per_sec.max(1e-9)
    }

    fn print(&self) {
        println!(
            "{:<11} raw-etcd {:>7.0} ops/s | ours-etcd {:>7.0} ops/s ({:.2}x) | embedded {:>7.0} ops/s ({:.2}x)",
            self.label,
            self.raw.ops_per_sec,
            self.ours.ops_per_sec,
            self.ours_ratio(),
            self.embedded.ops_per_sec,
            self.embedded_ratio(),
        );
        println!(
            "{:<11}   latency mean/p50/p99 ms: raw {:.2}/{:.2}/{:.2} | ours {:.2}/{:.2}/{:.2} | embedded {:.2}/{:.2}/{:.2}{}{}{}",
            "",
            ms(self.raw.mean),
            ms(self.raw.p50),
            ms(self.raw.p99),
            ms(self.ours.mean),
            ms(self.ours.p50),
            ms(self.ours.p99),
            ms(self.embedded.mean),
            ms(self.embedded.p50),
            ms(self.embedded.p99),
            prefixed(" raw:", self.raw.error_note()),
            prefixed(" ours:", self.ours.error_note()),
            prefixed(" embedded:", self.embedded.error_note()),
        );
        if let Some(txn) = &self.raw_txn {
            println!(
                "{:<11}   diagnostic: raw-etcd txn (put_if's CAS) {:.0} ops/s ({:.2}x raw put), mean/p50/p99 {:.2}/{:.2}/{:.2} ms; ours-etcd / raw txn = {:.2}x{}",
                "",
                txn.ops_per_sec,
                txn.ops_per_sec / self.raw.ops_per_sec.max(1e-9),
                ms(txn.mean),
                ms(txn.p50),
                ms(txn.p99),
                self.ours.ops_per_sec / txn.ops_per_sec.max(1e-9),
                prefixed(" txn:", txn.error_note()),
            );
        }
    }
}

fn prefixed(prefix: &str, note: String) -> String {
    if note.is_empty() {
        note
    } else {
        format!("{prefix}{note}")
    }
}

// ---------------------------------------------------------------------------------------------
// Watch fan-out

struct WatchResult {
    backend: &'static str,
    watchers: usize,
    events: usize,
    expected: usize,
    delivered: usize,
    watch_errors: usize,
    stream_errors: usize,
    first_error: Option<String>,
    out_of_order: usize,
    unknown: usize,
    write_errors: usize,
    /// From just before the write was sent to the delivery.
    send: [Duration; 3],
    /// From the write's acknowledgement to the delivery (0 when delivered before the ack).
    ack: [Duration; 3],
}

impl WatchResult {
    fn print(&self) {
        println!(
            "watch {:<9} {} watchers x {} writes: delivered {}/{} | send->deliver p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms | ack->deliver p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
            self.backend,
            self.watchers,
            self.events,
            self.delivered,
            self.expected,
            ms(self.send[0]),
            ms(self.send[1]),
            ms(self.send[2]),
            ms(self.ack[0]),
            ms(self.ack[1]),
            ms(self.ack[2]),
        );
        let problems = self.watch_errors
            + self.stream_errors
            + self.out_of_order
            + self.unknown
            + self.write_errors;
        if problems > 0 || self.delivered < self.expected {
            println!(
                "{:<16}problems: watch() errors {}, stream errors {}, out-of-order {}, unknown revisions {}, write errors {}{}",
                "",
                self.watch_errors,
                self.stream_errors,
                self.out_of_order,
                self.unknown,
                self.write_errors,
                self.first_error
                    .as_ref()
                    .map(|e| format!(", first error: {e}"))
                    .unwrap_or_default(),
            );
        }
    }

    fn p99_ok(&self) -> bool {
        self.delivered == self.expected && self.send[1] <= Duration::from_millis(50)
    }
}

#[derive(Default)]
struct WatcherOutcome {
    deliveries: Vec<(i64, Instant)>,
    watch_error: Option<String>,
    stream_error: Option<String>,
}

async fn watch_fanout(name: &'static str, backend: DynBackend, cfg: &Config) -> WatchResult {
    let store = Store::new(backend.clone(), "/registry");
    let cacher = Arc::new(Cacher::new(
        store.clone(),
        "/bench/",
        CacherConfig::default(),
    ));

    // The start revision must be one the cache has listed at or passed (its window starts at
    // the list revision), so read it after the cache is up.
    let deadline = Instant::now() + Duration::from_secs(20);
    let revision = loop {
        let current = backend
            .current_revision()
            .await
            .expect("reading the backend's current revision");
        if cacher.revision() >= current {
            break current;
        }
        assert!(
            Instant::now() < deadline,
            "watch cache on {name} did not reach revision {current} within 20s (at {})",
            cacher.revision()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };

    let expected_per_watcher = cfg.watch_events;
    let barrier = Arc::new(Barrier::new(cfg.watchers + 1));
    let finished = Arc::new(AtomicUsize::new(0));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut handles = Vec::with_capacity(cfg.watchers);
    for _ in 0..cfg.watchers {
        let cacher = cacher.clone();
        let barrier = barrier.clone();
        let finished = finished.clone();
        let mut stop = stop_rx.clone();
        handles.push(tokio::spawn(async move {
            let mut out = WatcherOutcome {
                deliveries: Vec::with_capacity(expected_per_watcher),
                ..Default::default()
            };
            let opts = WatchOptions {
                revision,
                recursive: true,
                ..Default::default()
            };
            let stream = cacher.watch("/bench/", opts).await;
            // Always reach the barrier, or the writer would wait forever.
            barrier.wait().await;
            match stream {
                Err(e) => out.watch_error = Some(e.to_string()),
                Ok(mut stream) => loop {
                    tokio::select! {
                        item = stream.next() => match item {
                            Some(Ok(ev)) => {
                                let now = Instant::now();
                                if ev.kind != EventKind::Bookmark {
                                    out.deliveries.push((ev.revision, now));
                                    if out.deliveries.len() >= expected_per_watcher {
                                        break;
                                    }
                                }
                            }
                            Some(Err(e)) => {
                                out.stream_error = Some(e.to_string());
                                break;
                            }
                            None => {
                                out.stream_error = Some("watch stream ended".into());
                                break;
                            }
                        },
                        _ = stop.changed() => break,
                    }
                },
            }
            finished.fetch_add(1, Ordering::AcqRel);
            out
        }));
    }
    barrier.wait().await;

    // The writer: spaced creates under the cached prefix.
    let value = value_of(cfg.value_size, 7);
    let mut sent: HashMap<i64, (Instant, Instant)> = HashMap::with_capacity(cfg.watch_events);
    let mut write_errors = 0;
    let mut first_error = None;
    let mut ticker = tokio::time::interval(cfg.watch_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for i in 0..cfg.watch_events {
        ticker.tick().await;
        let t = Instant::now();
        match cacher
            .create(&format!("/bench/obj-{i:06}"), value.clone())
            .await
        {
            Ok(kv) => {
                sent.insert(kv.mod_revision, (t, Instant::now()));
            }
            Err(e) => {
                write_errors += 1;
                first_error.get_or_insert_with(|| format!("write: {e}"));
            }
        }
    }
    let expected_per_watcher = cfg.watch_events - write_errors;

    // Give the watchers time to drain, then stop the stragglers.
    let drain_deadline = Instant::now() + Duration::from_secs(15);
    while finished.load(Ordering::Acquire) < cfg.watchers && Instant::now() < drain_deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = stop_tx.send(true);

    let mut send_lat = Vec::with_capacity(cfg.watchers * cfg.watch_events);
    let mut ack_lat = Vec::with_capacity(cfg.watchers * cfg.watch_events);
    let (mut watch_errors, mut stream_errors, mut out_of_order, mut unknown) = (0, 0, 0, 0);
    for h in handles {
        let out = match h.await {
            Ok(out) => out,
            Err(e) => {
                stream_errors += 1;
                first_error.get_or_insert_with(|| format!("watcher task: {e}"));
                continue;
            }
        };
        if let Some(e) = out.watch_error {
            watch_errors += 1;
            first_error.get_or_insert_with(|| format!("watch(): {e}"));
        }
        if let Some(e) = out.stream_error {
            stream_errors += 1;
            first_error.get_or_insert_with(|| format!("stream: {e}"));
        }
        let mut last = i64::MIN;
        for (rev, at) in out.deliveries {
            if rev <= last {
                out_of_order += 1;
            }
            last = rev;
            match sent.get(&rev) {
                Some((send, ack)) => {
                    send_lat.push(at.saturating_duration_since(*send));
                    ack_lat.push(at.saturating_duration_since(*ack));
                }
                None => unknown += 1,
            }
        }
    }
    send_lat.sort_unstable();
    ack_lat.sort_unstable();
    let summary = |v: &[Duration]| {
        [
            percentile(v, 0.50),
            percentile(v, 0.99),
            v.last().copied().unwrap_or_default(),
        ]
    };
    WatchResult {
        backend: name,
        watchers: cfg.watchers,
        events: cfg.watch_events,
        expected: cfg.watchers * expected_per_watcher,
        delivered: send_lat.len(),
        watch_errors,
        stream_errors,
        first_error,
        out_of_order,
        unknown,
        write_errors,
        send: summary(&send_lat),
        ack: summary(&ack_lat),
    }
}

// ---------------------------------------------------------------------------------------------

async fn bench(cfg: Config) {
    let bench_started = Instant::now();
    let etcd = EtcdServer::start().await;
    let etcd_backend = EtcdBackend::connect(EtcdConfig::new(vec![etcd.endpoint()]))
        .await
        .expect("connecting to the benchmark etcd");
    let raw = etcd_backend.client();
    let etcd_backend: DynBackend = Arc::new(etcd_backend);
    let ours = Store::new(etcd_backend.clone(), "/registry");

    let embedded_dir = tempfile::tempdir().expect("temp dir for the embedded store");
    let embedded_backend: DynBackend =
        Arc::new(EmbeddedBackend::open(embedded_dir.path()).expect("opening the embedded store"));
    let embedded = Store::new(embedded_backend.clone(), "/registry");

    println!(
        "storage benchmark: {} B values; {} ops with 1 writer, {} ops with {} writers; etcd at {}; embedded in {}",
        cfg.value_size,
        cfg.ops_1,
        cfg.ops_n,
        cfg.writers_n,
        etcd.endpoint(),
        embedded_dir.path().display()
    );
    println!(
        "ours-etcd = Store on the etcd backend; ratios are against raw etcd (etcd_client put/get); put = Interface::create, update = guaranteed_update from the created value, get = Interface::get(Latest)"
    );

    // Warm-up: connections, etcd's and redb's first allocations.
    let warm = value_of(cfg.value_size, 0);
    let _ = raw_put(&raw, "warm", 16, 256, warm.clone()).await;
    let _ = raw_get(&raw, "warm", 16, 256).await;
    let _ = store_create(&ours, "warm", 16, 256, warm.clone()).await;
    let _ = store_get(&ours, "warm", 16, 256).await;
    let _ = store_create(&embedded, "warm", 16, 256, warm.clone()).await;
    let _ = store_get(&embedded, "warm", 16, 256).await;

    let mut rows = Vec::new();
    for (writers, ops) in [(1, cfg.ops_1), (cfg.writers_n, cfg.ops_n)] {
        let phase = format!("{writers}w");
        let v1 = value_of(cfg.value_size, 1);
        let v2 = value_of(cfg.value_size, 2);

        let raw_r = raw_put(&raw, &phase, writers, ops, v1.clone()).await;
        let mut txn_r = raw_txn(&raw, &phase, writers, ops, v1.clone(), None).await;
        let mut ours_r = store_create(&ours, &phase, writers, ops, v1.clone()).await;
        let mut emb_r = store_create(&embedded, &phase, writers, ops, v1.clone()).await;
        let txn_created = index_created(std::mem::take(&mut txn_r.created), ops);
        let ours_created = index_created(std::mem::take(&mut ours_r.created), ops);
        let emb_created = index_created(std::mem::take(&mut emb_r.created), ops);
        let row = Row {
            label: format!("put {phase}"),
            raw: raw_r,
            raw_txn: Some(txn_r),
            ours: ours_r,
            embedded: emb_r,
        };
        row.print();
        rows.push(row);

        let row = Row {
            label: format!("update {phase}"),
            raw: raw_put(&raw, &phase, writers, ops, v2.clone()).await,
            raw_txn: Some(raw_txn(&raw, &phase, writers, ops, v2.clone(), Some(txn_created)).await),
            ours: store_update(&ours, &phase, writers, ops, v2.clone(), ours_created).await,
            embedded: store_update(&embedded, &phase, writers, ops, v2.clone(), emb_created).await,
        };
        row.print();
        rows.push(row);

        let row = Row {
            label: format!("get {phase}"),
            raw: raw_get(&raw, &phase, writers, ops).await,
            raw_txn: None,
            ours: store_get(&ours, &phase, writers, ops).await,
            embedded: store_get(&embedded, &phase, writers, ops).await,
        };
        row.print();
        rows.push(row);
    }

    let watch_etcd = watch_fanout("etcd", etcd_backend.clone(), &cfg).await;
    watch_etcd.print();
    let watch_embedded = watch_fanout("embedded", embedded_backend.clone(), &cfg).await;
    watch_embedded.print();

    // Targets.
    let mut verdicts = Vec::new();
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    for row in &rows {
        if row.label.starts_with("put") || row.label.starts_with("get") {
            let r = row.ours_ratio();
            let clean = row.raw.errors == 0 && row.ours.errors == 0;
            verdicts.push(format!(
                "ours-etcd {} >= 0.9x: {} ({r:.2}x)",
                row.label,
                verdict(r >= 0.9 && clean)
            ));
        }
    }
    if let Some(row) = rows
        .iter()
        .find(|r| r.label == format!("put {}w", cfg.writers_n))
    {
        let r = row.embedded_ratio();
        let clean = row.raw.errors == 0 && row.embedded.errors == 0;
        verdicts.push(format!(
            "embedded {} >= raw etcd: {} ({r:.2}x)",
            row.label,
            verdict(r >= 1.0 && clean)
        ));
    }
    for w in [&watch_etcd, &watch_embedded] {
        verdicts.push(format!(
            "watch p99 {} <= 50 ms: {} ({:.2} ms, {}/{} delivered)",
            w.backend,
            verdict(w.p99_ok()),
            ms(w.send[1]),
            w.delivered,
            w.expected
        ));
    }
    println!("targets: {}", verdicts.join("; "));
    println!("total time {:.1} s", bench_started.elapsed().as_secs_f64());

    drop(ours);
    drop(embedded);
    drop(etcd_backend);
    drop(embedded_backend);
    drop(etcd);
}

fn main() {
    let cfg = Config::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("building the tokio runtime");
    runtime.block_on(bench(cfg));
}
