//! The noisy-neighbour measurement of API Priority and Fairness, shared by the e2e test (which
//! asserts on it) and the benchmark (which prints it beside a baseline): a quiet tenant's
//! single GETs on one kept-alive HTTPS connection, timed alone and then while a noisy tenant
//! floods the server from many connections, each of which waits the Retry-After it is given
//! on a 429, as client-go does.
//!
//! The noisy tenant's client threads run at the lowest CPU priority (nice 19). In a cluster
//! its clients are other machines; here they share the cores with the server and the quiet
//! tenant's client, and decrypting the megabytes of lists they are served would otherwise be
//! counted against the server in the quiet tenant's latency. They still get every cycle the
//! server and the quiet tenant leave.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::https::Connection;
use crate::stats::percentile;
use crate::wait_until;

/// The body of upstream's 429 (Go's `http.Error` text).
pub const TOO_MANY_REQUESTS: &[u8] = b"Too many requests, please try again later.\n";

/// What the noisy tenant sends, back to back on each of its connections.
#[derive(Clone)]
pub struct Request {
    pub method: &'static str,
    pub path: String,
    pub body: Vec<u8>,
}

/// One measurement: who connects where, and how much.
pub struct Scenario {
    /// The server's secure port on loopback and the CA certificate that signed it.
    pub port: u16,
    pub ca: PathBuf,
    pub quiet_token: String,
    /// What the quiet tenant GETs.
    pub quiet_path: String,
    /// How many GETs the quiet tenant times, alone and under the flood, at least.
    pub gets: usize,
    /// How long the quiet tenant keeps timing GETs, at least, in each phase: the noisy
    /// tenant's load comes in waves (its refused connections wait out their Retry-After
    /// together), and the quiet tenant's figures must span several.
    pub span: Duration,
    pub noisy_token: String,
    pub connections: usize,
    pub flood: Request,
}

/// The quiet tenant's GETs: the latencies of those answered 200 (sorted) and the statuses of
/// the others.
pub struct Quiet {
    pub latencies: Vec<Duration>,
    pub refused: Vec<u16>,
}

impl Quiet {
    /// The nearest-rank percentile `q` (0..=1) of the latencies.
    pub fn percentile(&self, q: f64) -> Duration {
        percentile(&self.latencies, q)
    }
}

/// How the noisy tenant was answered.
#[derive(Debug, Default)]
pub struct FloodCounts {
    /// 200 or 201.
    pub served: usize,
    /// 429.
    pub refused: usize,
    /// 429s without a Retry-After in whole seconds.
    pub refused_without_retry_after: usize,
    /// 429s whose body is not upstream's `http.Error` text.
    pub refused_otherwise: usize,
    /// Any other status (504: timed out).
    pub other: Vec<u16>,
    /// Broken connections and failures to connect.
    pub errors: Vec<String>,
}

/// What one measurement found.
pub struct Outcome {
    pub alone: Quiet,
    pub flooded: Quiet,
    pub flood: FloodCounts,
}

impl Outcome {
    /// The quiet tenant's p99 under the flood over its p99 alone.
    pub fn p99_ratio(&self) -> f64 {
        let alone = self.alone.percentile(0.99).as_secs_f64();
        self.flooded.percentile(0.99).as_secs_f64() / alone.max(1e-9)
    }
}

/// The quiet tenant's GETs of its path on one kept-alive connection (at least `s.gets`, for at
/// least `s.span`), after 20 untimed ones (the handshake, the server's caches).
pub fn quiet_gets(s: &Scenario) -> std::io::Result<Quiet> {
    let mut c = Connection::open(&s.ca, s.port, &s.quiet_token)?;
    for _ in 0..20 {
        c.exchange("GET", &s.quiet_path, b"")?;
    }
    let mut quiet = Quiet {
        latencies: Vec::with_capacity(s.gets),
        refused: Vec::new(),
    };
    let started = Instant::now();
    while quiet.latencies.len() + quiet.refused.len() < s.gets || started.elapsed() < s.span {
        let started = Instant::now();
        let r = c.exchange("GET", &s.quiet_path, b"")?;
        let took = started.elapsed();
        if r.status == 200 {
            quiet.latencies.push(took);
        } else {
            quiet.refused.push(r.status);
        }
    }
    quiet.latencies.sort();
    Ok(quiet)
}

/// The noisy tenant's connections, each a thread sending its request back to back.
pub struct Flood {
    served: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
    counts: Arc<Mutex<FloodCounts>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Flood {
    pub fn start(s: &Scenario) -> Self {
        let flood = Self {
            served: Arc::default(),
            refused: Arc::default(),
            counts: Arc::default(),
            stop: Arc::default(),
            threads: Vec::new(),
        };
        let threads = (0..s.connections)
            .map(|_| {
                let (served, refused) = (flood.served.clone(), flood.refused.clone());
                let (counts, stop) = (flood.counts.clone(), flood.stop.clone());
                let (ca, port, token) = (s.ca.clone(), s.port, s.noisy_token.clone());
                let request = s.flood.clone();
                std::thread::spawn(move || {
                    lowest_cpu_priority();
                    let connect = || Connection::open(&ca, port, &token);
                    let mut connection = None;
                    while !stop.load(Ordering::Relaxed) {
                        let c = match &mut connection {
                            Some(c) => c,
                            None => match connect() {
                                Ok(c) => connection.insert(c),
                                Err(e) => {
                                    lock(&counts).errors.push(format!("connect: {e}"));
                                    std::thread::sleep(Duration::from_millis(100));
                                    continue;
                                }
                            },
                        };
                        let r = match c.exchange(request.method, &request.path, &request.body) {
                            Ok(r) => r,
                            Err(e) => {
                                lock(&counts).errors.push(e.to_string());
                                connection = None;
                                continue;
                            }
                        };
                        match r.status {
                            200 | 201 => {
                                served.fetch_add(1, Ordering::Relaxed);
                            }
                            429 => {
                                refused.fetch_add(1, Ordering::Relaxed);
                                let wait =
                                    r.header("retry-after").and_then(|v| v.parse::<u64>().ok());
                                {
                                    let mut counts = lock(&counts);
                                    counts.refused_otherwise +=
                                        usize::from(r.body != TOO_MANY_REQUESTS);
                                    counts.refused_without_retry_after +=
                                        usize::from(wait.is_none());
                                }
                                let until = Instant::now() + Duration::from_secs(wait.unwrap_or(1));
                                while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                                    std::thread::sleep(Duration::from_millis(20));
                                }
                            }
                            code => lock(&counts).other.push(code),
                        }
                    }
                })
            })
            .collect();
        Self { threads, ..flood }
    }

    /// Answers 200 or 201 so far.
    pub fn served(&self) -> usize {
        self.served.load(Ordering::Relaxed)
    }

    /// Answers 429 so far.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::Relaxed)
    }

    /// Stops every connection (each after its request in flight) and counts the answers.
    pub fn stop(self) -> FloodCounts {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            if t.join().is_err() {
                lock(&self.counts)
                    .errors
                    .push("a flood thread panicked".into());
            }
        }
        let mut counts = std::mem::take(&mut *lock(&self.counts));
        counts.served = self.served.load(Ordering::Relaxed);
        counts.refused = self.refused.load(Ordering::Relaxed);
        counts
    }
}

/// Nice 19 for the calling thread (Linux: `renice` of a thread id applies to that thread
/// alone); where that fails, the thread runs as it is.
fn lowest_cpu_priority() {
    let Ok(me) = std::fs::read_link("/proc/thread-self") else {
        return;
    };
    if let Some(tid) = me.file_name() {
        let _ = std::process::Command::new("renice")
            .args(["-n", "19", "-p"])
            .arg(tid)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

fn lock(counts: &Mutex<FloodCounts>) -> std::sync::MutexGuard<'_, FloodCounts> {
    counts.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The quiet tenant alone, then under the noisy tenant's flood (once it has been served a
/// few times, and after `during`, which sees the flood under way); then the flood stopped.
pub fn measure(s: &Scenario, during: impl FnOnce(&Flood)) -> std::io::Result<Outcome> {
    let alone = quiet_gets(s)?;
    let flood = Flood::start(s);
    wait_until("the noisy tenant served", Duration::from_secs(60), || {
        flood.served() >= 3
    });
    during(&flood);
    let flooded = quiet_gets(s);
    let counts = flood.stop();
    Ok(Outcome {
        alone,
        flooded: flooded?,
        flood: counts,
    })
}

/// The token file of the two tenants: the noisy `tenant-a` and the quiet `tenant-b`.
pub const TOKENS: &str = "token-a,tenant-a,uid-a\ntoken-b,tenant-b,uid-b\n";
/// What the quiet tenant GETs once [`populate`] made it.
pub const QUIET_TARGET: &str = "/api/v1/namespaces/quiet/configmaps/target";
/// Where the noisy tenant's creates go.
pub const CREATE_PATH: &str = "/api/v1/namespaces/flood-create/configmaps";

/// A ConfigMap of 2 KB.
pub fn config_map(name: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"payload": "x".repeat(2048)}})
}

/// The noisy tenant's create: a generated name, 2 KB.
pub fn create_body() -> Vec<u8> {
    let mut cm = config_map("");
    cm["metadata"] = serde_json::json!({"generateName": "a-"});
    cm.to_string().into_bytes()
}

/// POSTs `body`; panics unless it is created.
fn create(c: &mut Connection, path: &str, body: &serde_json::Value) {
    let r = c
        .exchange("POST", path, body.to_string().as_bytes())
        .unwrap_or_else(|e| panic!("POST {path}: {e}"));
    assert_eq!(r.status, 201, "POST {path}: {}", r.text());
}

/// Through the plain loopback `port`: both tenants may do anything (cluster-admin through
/// RBAC, neither in system:masters, so both are subject to priority and fairness).
pub fn bind_tenants(port: u16) {
    let mut c = Connection::plain(port).expect("connect to the plain port");
    for user in ["tenant-a", "tenant-b"] {
        let binding = serde_json::json!({
            "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}],
        });
        create(
            &mut c,
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            &binding,
        );
    }
    // The authorizer learns of the bindings through its informer: ask it (a
    // SubjectAccessReview) until both tenants are allowed, so no request of theirs races it.
    for user in ["tenant-a", "tenant-b"] {
        let review = serde_json::json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "resourceAttributes": {"verb": "get", "resource": "namespaces"}},
        });
        crate::wait_until(
            &format!("RBAC allowing {user}"),
            std::time::Duration::from_secs(20),
            || {
                c.exchange(
                    "POST",
                    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                    review.to_string().as_bytes(),
                )
                .ok()
                .and_then(|r| serde_json::from_slice::<serde_json::Value>(&r.body).ok())
                .is_some_and(|v| v["status"]["allowed"] == true)
            },
        );
    }
}

/// Through the plain loopback `port`: namespaces `flood` (with `objects` 2 KB ConfigMaps,
/// created from 8 connections), `quiet` (with the quiet tenant's target) and `flood-create`.
pub fn populate(port: u16, objects: usize) {
    let mut c = Connection::plain(port).expect("connect to the plain port");
    for ns in ["flood", "quiet", "flood-create"] {
        create(
            &mut c,
            "/api/v1/namespaces",
            &serde_json::json!({"metadata": {"name": ns}}),
        );
    }
    create(
        &mut c,
        "/api/v1/namespaces/quiet/configmaps",
        &config_map("target"),
    );
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Connection::plain(port).expect("connect to the plain port");
                for i in (t..objects).step_by(8) {
                    create(
                        &mut c,
                        "/api/v1/namespaces/flood/configmaps",
                        &config_map(&format!("cm-{i}")),
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("populate");
    }
}

/// The noisy tenant's own priority level, as an administrator would give a tenant known to be
/// noisy: one share (3 of the server's 600 seats), no borrowing, one queue of 8. Why not the
/// defaults: both tenants fall into `global-default` (flows by user), whose 128 queues of 50
/// hold all of A's 48 connections, so A would wait (up to a quarter of the request timeout)
/// instead of being refused, and A's 6 queues would keep borrowing seats B's level lends.
/// Created through the plain loopback `port`; with `in_force`, waits until the server's
/// priority-and-fairness dump shows the level.
pub fn limit_noisy_tenant(port: u16, in_force: bool) {
    let level = serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "tenant-a"},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 8}}}},
    });
    let schema = serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "tenant-a"},
        "spec": {
            "priorityLevelConfiguration": {"name": "tenant-a"}, "matchingPrecedence": 500,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "tenant-a"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}]}],
        },
    });
    let mut c = Connection::plain(port).expect("connect to the plain port");
    create(
        &mut c,
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
        &level,
    );
    create(
        &mut c,
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
        &schema,
    );
    if in_force {
        wait_until(
            "the tenant-a level in force",
            Duration::from_secs(20),
            || {
                c.exchange(
                    "GET",
                    "/debug/api_priority_and_fairness/dump_priority_levels",
                    b"",
                )
                .is_ok_and(|r| {
                    r.text()
                        .lines()
                        .any(|l| l.split(',').next().map(str::trim) == Some("tenant-a"))
                })
            },
        );
    }
}
