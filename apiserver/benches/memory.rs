//! What the server's memory is made of, on both backends: the release binary started as a new
//! user would (a fresh data dir, or a fresh etcd), then measured from /proc/<pid>/status.
//!
//! The figures are anonymous memory (`RssAnon`: the process's heap, stacks and anonymous
//! mappings), which stays resident until the process frees it (or it is swapped). Its
//! file-backed pages (the executable's code, shared libraries) are clean page cache the
//! kernel reclaims first under pressure; RSS (`VmRSS`, which counts them) is shown beside
//! each figure for reference.
//!
//! For each backend, object kind (ConfigMaps with a ~1 KiB data value; pods in namespace
//! default with a ~2 KiB annotation, ~4 KiB encoded with what defaulting and admission add)
//! and object count, a fresh server:
//! - idle anonymous memory a few seconds after it is ready;
//! - anonymous memory after creating the objects (8 keep-alive connections creating at once),
//!   settled for 3 s, and per 1,000 objects above idle; the objects' encoded size (the bytes
//!   of a full JSON list of them);
//! - 10 concurrent full lists, plain and `?resourceVersion=0`: peak anonymous memory (sampled
//!   every 10 ms; VmHWM, RSS's high-water mark, beside it), anonymous memory 3 s after they
//!   end, and their median latency;
//! - the ratio of settled anonymous memory to the bytes stored, in all and per object above
//!   idle;
//! - the goals beside each figure, on anonymous memory, "met" or "missed" (a report, not a
//!   test): issue 30's for idle (8 MB) and settled memory (1.5x the bytes stored), issue
//!   16's for the lists.
//!
//! The server runs with `--nodes 0 --scheduler=false` so that pods stay as created (no binding,
//! no status writes, no events); the other controllers (garbage collector, service accounts)
//! run, since what they hold is part of the figure. Only the server's memory is measured,
//! not etcd's. MB here is 10^6 bytes.
//!
//! `cargo bench -p apiserver --bench memory`; `MEMORY_BENCH_OBJECTS=n` for one count n
//! (default 10,000, and 100,000 too with `MEMORY_BENCH_LARGE=1`);
//! `MEMORY_BENCH_BACKENDS=embedded` or `=etcd` for one backend; `MEMORY_BENCH_KINDS=configmaps`
//! or `=pods` for one kind; the server binary from
//! `APISERVER_BIN`, default the one cargo built. A list that fails is reported with its
//! answer, and the run goes on. Before lists were streamed, ten concurrent lists of 10,000
//! pods peaked near 2 GB; they now add about a page per list.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use test_support::https::Connection;
use test_support::server::{self, proc_status, proc_status_field, ApiServer, Launch};
use test_support::stats::{mb, verdict};
use test_support::BackendKind;

const NAMESPACE: &str = "default";
const CREATORS: usize = 8;
const LISTS: usize = 10;
const IDLE_AFTER: Duration = Duration::from_secs(5);
const SETTLE: Duration = Duration::from_secs(3);
const MB: f64 = 1e6;
/// Issue 30's goals: settled anonymous memory at most this many times the bytes stored (the
/// objects' encoded size), and an idle server at most this many MB.
const DATA_RATIO_GOAL: f64 = 1.5;
const IDLE_GOAL_MB: f64 = 8.0;

fn status(pid: u32) -> String {
    proc_status(pid).expect("/proc status")
}

/// A field of a /proc/<pid>/status text, in bytes.
fn field_bytes(status: &str, field: &str) -> u64 {
    proc_status_field(status, field).unwrap_or_else(|| panic!("no {field} in /proc/<pid>/status"))
}

/// The process's memory at one moment: anonymous (the figure) and RSS (for reference).
#[derive(Clone, Copy)]
struct Memory {
    anon: u64,
    rss: u64,
}

fn memory(pid: u32) -> Memory {
    let status = status(pid);
    Memory {
        anon: field_bytes(&status, "RssAnon:"),
        rss: field_bytes(&status, "VmRSS:"),
    }
}

/// A fresh server on `backend`, its data dir and (on etcd) its etcd, all gone on drop.
fn start(bin: &std::path::Path, backend: BackendKind) -> ApiServer {
    Launch::new(bin)
        .backend(backend)
        .args(["--nodes", "0", "--scheduler=false"])
        // Ten lists of 100,000 pods at once on two cores may take longer than the
        // default 60 s; the figure wanted is their memory, not a 504.
        .args(["--request-timeout", "10m"])
        .log_level("error")
        .start()
}

/// A keep-alive connection to the plain port whose reads wait as long as the server takes
/// (a list of 100,000 pods, ten at once, may be slow to start).
fn connect(port: u16) -> Connection {
    let mut conn = Connection::plain(port).expect("connect to the server");
    conn.set_read_timeout(None).expect("no read timeout");
    conn
}

/// One request; panics when the connection fails (the server is gone: nothing to measure).
fn send(conn: &mut Connection, method: &str, path: &str, body: &str) -> test_support::https::Reply {
    conn.exchange(method, path, body.as_bytes())
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

#[derive(Clone, Copy)]
enum Kind {
    ConfigMaps,
    Pods,
}

impl Kind {
    fn describe(self) -> &'static str {
        match self {
            Kind::ConfigMaps => "ConfigMaps of ~1 KiB",
            Kind::Pods => "pods of ~4 KiB",
        }
    }

    fn collection(self) -> String {
        match self {
            Kind::ConfigMaps => format!("/api/v1/namespaces/{NAMESPACE}/configmaps"),
            Kind::Pods => format!("/api/v1/namespaces/{NAMESPACE}/pods"),
        }
    }

    fn body(self, i: usize, padding: &str) -> String {
        match self {
            Kind::ConfigMaps => format!(
                r#"{{"metadata":{{"name":"bench-{i:06}"}},"data":{{"value":"{padding}"}}}}"#
            ),
            Kind::Pods => format!(
                r#"{{"metadata":{{"name":"bench-{i:06}","labels":{{"app":"bench"}},"annotations":{{"bench/padding":"{padding}"}}}},"spec":{{"containers":[{{"name":"c","image":"nginx"}}]}}}}"#
            ),
        }
    }

    fn padding(self) -> String {
        match self {
            Kind::ConfigMaps => "x".repeat(1024),
            Kind::Pods => "x".repeat(2 * 1024),
        }
    }
}

/// Admission waits for a pod's service account: the controller creates `default` after start.
fn wait_for_service_account(port: u16) {
    let path = format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default");
    let since = Instant::now();
    let mut conn = connect(port);
    while send(&mut conn, "GET", &path, "").status != 200 {
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "the default service account did not appear within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Creates `n` objects over `CREATORS` connections; the time it took.
fn create(port: u16, kind: Kind, n: usize) -> Duration {
    let path = kind.collection();
    let padding = kind.padding();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for first in 0..CREATORS {
            let (path, padding) = (&path, &padding);
            scope.spawn(move || {
                let mut conn = connect(port);
                for i in (first..n).step_by(CREATORS) {
                    let body = kind.body(i, padding);
                    let mut tries = 0;
                    loop {
                        let answer = send(&mut conn, "POST", path, &body);
                        match answer.status {
                            201 => break,
                            // Overload: back off and try again, as a client would.
                            429 | 503 | 504 if tries < 20 => {
                                tries += 1;
                                std::thread::sleep(Duration::from_millis(100));
                            }
                            status => panic!("create {path} #{i}: {status} {}", answer.text()),
                        }
                    }
                }
            });
        }
    });
    started.elapsed()
}

/// What `LISTS` concurrent full lists did to the server.
struct Lists {
    before: Memory,
    /// The highest anonymous memory sampled.
    peak: u64,
    /// VmHWM: RSS's high-water mark since the server started.
    hwm: u64,
    settled: Memory,
    median: Duration,
    bytes: u64,
    /// The answers that were not 200, with their bodies.
    failures: Vec<String>,
}

fn lists(server: &ApiServer, path: &str) -> Lists {
    let pid = server.pid();
    let before = memory(pid);
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(before.anon));
    let sampler = {
        let (done, peak) = (done.clone(), peak.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(memory(pid).anon, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    // Connections open first, so that the lists start together.
    let barrier = Barrier::new(LISTS);
    let results: Vec<Result<(Duration, u64), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..LISTS)
            .map(|_| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut conn = connect(server.port);
                    barrier.wait();
                    let started = Instant::now();
                    let answer = conn
                        .exchange_counted("GET", path)
                        .map_err(|e| format!("GET {path}: {e}"))?;
                    match answer.status {
                        200 => Ok((started.elapsed(), answer.length)),
                        status => Err(format!("{status} {}", answer.text().trim_end())),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a list thread"))
            .collect()
    });
    done.store(true, Ordering::Relaxed);
    sampler.join().expect("the sampler thread");
    let now = status(pid);
    let peak = peak
        .load(Ordering::Relaxed)
        .max(field_bytes(&now, "RssAnon:"));
    let hwm = field_bytes(&now, "VmHWM:");
    std::thread::sleep(SETTLE);
    let settled = memory(pid);
    let succeeded: Vec<(Duration, u64)> = results.iter().filter_map(|r| r.clone().ok()).collect();
    let mut latencies: Vec<Duration> = succeeded.iter().map(|r| r.0).collect();
    latencies.sort();
    Lists {
        before,
        peak,
        hwm,
        settled,
        median: latencies
            .get(latencies.len() / 2)
            .copied()
            .unwrap_or_default(),
        bytes: succeeded.iter().map(|r| r.1).max().unwrap_or(0),
        failures: results.into_iter().filter_map(Result::err).collect(),
    }
}

fn run(bin: &std::path::Path, backend: BackendKind, kind: Kind, n: usize) {
    let server = start(bin, backend);
    let pid = server.pid();
    if matches!(kind, Kind::Pods) {
        wait_for_service_account(server.port);
    }
    std::thread::sleep(IDLE_AFTER);
    let idle = memory(pid);
    let took = create(server.port, kind, n);
    std::thread::sleep(SETTLE);
    let created = memory(pid);
    let collection = kind.collection();
    let plain = lists(&server, &collection);
    let cached = lists(&server, &format!("{collection}?resourceVersion=0"));
    // A list that failed counts nothing; either full list gives the size.
    let encoded = plain.bytes.max(cached.bytes);

    println!();
    println!(
        "{}: {n} {} (created over {CREATORS} connections in {:.1} s, {:.0}/s)",
        backend.name(),
        kind.describe(),
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64()
    );
    println!(
        "  idle anon ({} s after ready)     {:>9.1} MB   (RSS {:.1} MB)   goal <= {IDLE_GOAL_MB} MB: {}",
        IDLE_AFTER.as_secs(),
        mb(idle.anon),
        mb(idle.rss),
        verdict(idle.anon as f64 <= IDLE_GOAL_MB * MB)
    );
    println!(
        "  encoded size (full JSON list)   {:>9.1} MB   ({:.0} bytes/object)",
        mb(encoded),
        encoded as f64 / n as f64
    );
    let limit = DATA_RATIO_GOAL * encoded as f64;
    println!(
        "  anon after create (settled {} s) {:>9.1} MB   (RSS {:.1} MB)   goal <= {DATA_RATIO_GOAL}x encoded = {:.1} MB: {}",
        SETTLE.as_secs(),
        mb(created.anon),
        mb(created.rss),
        limit / MB,
        verdict(created.anon as f64 <= limit)
    );
    println!(
        "  anon / encoded                  {:>9.2}x   (per object above idle {:.2}x: {:.0} bytes held per {:.0} bytes stored)",
        created.anon as f64 / encoded as f64,
        (created.anon as f64 - idle.anon as f64) / encoded as f64,
        (created.anon as f64 - idle.anon as f64) / n as f64,
        encoded as f64 / n as f64
    );
    let per_thousand =
        |of: fn(&Memory) -> u64| (of(&created) as f64 - of(&idle) as f64) / MB / n as f64 * 1000.0;
    println!(
        "  anon per 1,000 objects          {:>9.2} MB   (above idle; RSS {:.2} MB)",
        per_thousand(|m| m.anon),
        per_thousand(|m| m.rss)
    );
    for (what, l) in [("plain GET", &plain), ("?resourceVersion=0", &cached)] {
        let rise = l.peak as f64 - l.before.anon as f64;
        let growth = l.settled.anon as f64 / l.before.anon as f64 - 1.0;
        println!("  {LISTS} concurrent full lists, {what}:");
        if let Some(first) = l.failures.first() {
            let shown: String = first.chars().take(400).collect();
            println!(
                "    {} of {LISTS} FAILED; the first: {shown}",
                l.failures.len()
            );
            if l.failures.len() == LISTS {
                continue;
            }
        }
        println!("    {:.1} MB each", mb(l.bytes));
        println!(
            "    median latency {:.2} s; anon before {:.1} MB (RSS {:.1} MB)",
            l.median.as_secs_f64(),
            mb(l.before.anon),
            mb(l.before.rss)
        );
        println!(
            "    peak anon {:.1} MB (+{:.1} MB; VmHWM {:.1} MB)   goal rise <= 50 MB: {}",
            mb(l.peak),
            rise / MB,
            mb(l.hwm),
            verdict(rise <= 50.0 * MB)
        );
        println!(
            "    settled anon {:.1} MB ({:+.1}%; RSS {:.1} MB)   goal <= +5%: {}",
            mb(l.settled.anon),
            growth * 100.0,
            mb(l.settled.rss),
            verdict(growth <= 0.05)
        );
    }
}

fn main() {
    let bin = server::binary(env!("CARGO_BIN_EXE_apiserver"));
    let counts: Vec<usize> = match std::env::var("MEMORY_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(n) => vec![n],
        None if std::env::var("MEMORY_BENCH_LARGE").is_ok_and(|v| v == "1") => {
            vec![10_000, 100_000]
        }
        None => vec![10_000],
    };
    let backends = BackendKind::chosen(
        "MEMORY_BENCH_BACKENDS",
        &[BackendKind::Embedded, BackendKind::Etcd],
    );
    let kinds: Vec<Kind> = match std::env::var("MEMORY_BENCH_KINDS").as_deref() {
        Ok("configmaps") => vec![Kind::ConfigMaps],
        Ok("pods") => vec![Kind::Pods],
        _ => vec![Kind::ConfigMaps, Kind::Pods],
    };
    println!(
        "memory: a fresh server per row; anonymous memory (RssAnon) of the apiserver process only, RSS beside it"
    );
    for backend in backends {
        for &kind in &kinds {
            for &n in &counts {
                run(&bin, backend, kind, n);
            }
        }
    }
}
