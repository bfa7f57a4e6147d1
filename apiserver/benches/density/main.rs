//! Density and load, modelled on clusterloader2's tests, against the real release binary
//! started as a user would (`--nodes N --cluster-cidr 10.128.0.0/9`, a fresh data dir or a
//! fresh etcd). Per backend:
//!
//! 1. The raw store write rate, in the same run: a fresh server with `--nodes 0
//!    --scheduler=false`, N×30 bare pods created over 12 keep-alive connections (pods/s, the
//!    server's CPU seconds).
//! 2. Density: a fresh server with N nodes; once every node is Ready, namespaces (one per 100
//!    nodes), Deployments of 250, 30 and 5 replicas summing to N×30 pods and a Service for
//!    every other one (EndpointSlices follow), created at upstream's default client QPS (10 up
//!    to 500 nodes, 100 above); time until the watch sees every pod Running.
//! 3. Latency pods, as upstream's density test measures the pod startup SLO: once every
//!    saturation pod runs, `max(500, N)` Deployments of one pod (100m CPU, 350M memory) created
//!    at 5 qps; their startup latency against the 5 s SLO; then they are deleted. The
//!    saturation pods' own startup is held to upstream's saturation threshold instead
//!    (pods / 20 + 180 s: they queue behind each other by design).
//! 4. Load: every Deployment scaled down by 10% and back up, then 10% of the pods deleted
//!    (their ReplicaSets replace them), each step until the watch sees the count Running.
//!
//! Measured throughout as clusterloader2 does: pod startup latency from a pod watch (first
//! seen → seen Running, upstream's `pod_startup`; also from `creationTimestamp`, 1 s
//! granularity), API call latency per resource/verb/scope from the server's
//! `apiserver_request_duration_seconds` over each phase against the SLOs (see `slis.rs`),
//! with a reader issuing GETs and namespace/cluster LISTs meanwhile; the server's anonymous
//! memory (`RssAnon`, peak sampled every 250 ms, and settled 10 s after the last phase) and
//! CPU seconds (utime + stime). The in-process controllers, scheduler and kubelets call the
//! registry directly, so the API histograms hold the bench's own HTTP calls only. The server
//! records a streamed list's duration when its response starts (`apiserver/src/limits.rs`),
//! upstream once the handler has written it, so the reader's client-side latencies are
//! printed beside: for large lists they are the truer figure.
//!
//! `cargo bench -p apiserver --bench density`; `DENSITY_NODES` (default 100),
//! `DENSITY_PODS_PER_NODE` (30), `DENSITY_BACKENDS=embedded` or `=etcd` (default both, one
//! after the other), `DENSITY_TIMEOUT_SECS` (per wait for pods Running, default 600),
//! `DENSITY_LATENCY_PODS` (default `max(500, N)`, 0 to skip that phase),
//! `DENSITY_QPS` to override the client rate, `DENSITY_SERVER_ARGS` for more server flags;
//! the server binary from `APISERVER_BIN`. A
//! cluster that does not converge is reported (where its pods are, the Deployments' status,
//! the server's last warnings) and the run goes on: no hang.

mod pods;
mod report;
mod slis;
mod workload;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pods::{Counts, PodWatch, Startup};
use slis::Histograms;
use test_support::https::Redial;
use test_support::server::{self, proc_status, proc_status_field, ApiServer, Launch};
use test_support::BackendKind;
use workload::{Plan, Reader, Sent};

const RAW_CONNECTIONS: usize = 12;
const SETTLE: Duration = Duration::from_secs(10);

pub fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `DENSITY_SERVER_ARGS`: more flags for the density server (whitespace-separated), to
/// compare a setting against the defaults a user gets.
fn extra_args() -> Vec<String> {
    std::env::var("DENSITY_SERVER_ARGS")
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The server's CPU seconds so far (user + system); 0 once it is gone.
fn cpu_seconds(pid: u32) -> f64 {
    test_support::server::cpu_time(pid).map_or(0.0, |t| t.as_secs_f64())
}

fn anon_bytes(pid: u32) -> u64 {
    proc_status(pid)
        .ok()
        .and_then(|s| proc_status_field(&s, "RssAnon:"))
        .unwrap_or(0)
}

/// The highest anonymous memory seen, sampled every 250 ms until dropped.
struct PeakAnon {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PeakAnon {
    fn start(pid: u32) -> Self {
        let peak = Arc::new(AtomicU64::new(anon_bytes(pid)));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (peak, stop) = (peak.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(anon_bytes(pid), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(250));
                }
            })
        };
        Self {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for PeakAnon {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The server's last log lines (warnings and errors at the default level), their count, and
/// how often the controllers lost their leader lease (they stop until they win it back).
#[derive(Clone, Default)]
struct LogTail(Arc<Mutex<ServerLog>>);

impl LogTail {
    fn push(&self, line: String) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.lines += 1;
        if line.contains("lost leadership") {
            g.lost_leadership += 1;
        }
        if g.last.len() == 20 {
            g.last.pop_front();
        }
        g.last.push_back(line);
    }

    fn snapshot(&self) -> ServerLog {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[derive(Clone, Default)]
pub struct ServerLog {
    pub last: VecDeque<String>,
    pub lines: u64,
    pub lost_leadership: u64,
}

fn get(conn: &mut Redial, path: &str) -> Result<test_support::https::Reply, String> {
    match conn.send("GET", path, "application/json", b"") {
        Ok(r) if r.status == 200 => Ok(r),
        Ok(r) => Err(format!("GET {path}: {} {}", r.status, r.text())),
        Err(e) => Err(format!("GET {path}: {e}")),
    }
}

fn scrape(port: u16) -> Histograms {
    let mut conn = Redial::new(port, Duration::from_secs(60));
    get(&mut conn, "/metrics")
        .map(|r| Histograms::parse(&r.text()))
        .unwrap_or_default()
}

/// Polls `done` every 500 ms until it holds or `limit` passes; false on timeout.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let since = Instant::now();
    while !done() {
        if since.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    true
}

fn ready_nodes(conn: &mut Redial) -> usize {
    let Ok(reply) = get(conn, "/api/v1/nodes") else {
        return 0;
    };
    let list = reply.json();
    list["items"].as_array().map_or(0, |items| {
        items
            .iter()
            .filter(|n| {
                n["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            })
            .count()
    })
}

pub struct Raw {
    pub pods: usize,
    pub sent: Sent,
    pub cpu: f64,
}

/// The raw store write rate: bare pod creates on a server with no nodes and no scheduler.
fn raw_rate(bin: &Path, backend: BackendKind, pods: usize) -> Raw {
    let server = Launch::new(bin)
        .backend(backend)
        .args(["--nodes", "0", "--scheduler=false"])
        .start();
    let mut conn = Redial::new(server.port, Duration::from_secs(60));
    // Admission waits for the namespace's service account, which a controller creates.
    wait_for(Duration::from_secs(60), || {
        get(
            &mut conn,
            "/api/v1/namespaces/default/serviceaccounts/default",
        )
        .is_ok()
    });
    let requests: Vec<_> = (0..pods).map(workload::bare_pod).collect();
    let cpu = cpu_seconds(server.pid());
    let sent = workload::send_paced(server.port, &requests, None, RAW_CONNECTIONS, None);
    Raw {
        pods,
        sent,
        cpu: cpu_seconds(server.pid()) - cpu,
    }
}

/// One measured phase: API latency over it, pod startup of the pods it created, CPU.
pub struct Phase {
    pub api: Histograms,
    pub startup: Startup,
    pub cpu: f64,
    pub watch_events: u64,
    pub took: Duration,
}

/// A step that waits for the pods: how long it took, or where they were when time ran out.
pub enum Converged {
    After(Duration),
    Stalled(Duration, Counts, String),
}

pub struct Outcome {
    pub backend: BackendKind,
    pub nodes: usize,
    pub plan: Plan,
    pub qps: f64,
    pub nodes_ready: Option<Duration>,
    pub created: Option<Sent>,
    pub all_running: Option<Converged>,
    pub density: Option<Phase>,
    /// The latency pods' phase: how long until all ran, and its measurements.
    pub latency: Option<(usize, Converged, Phase)>,
    pub load: Vec<(String, Converged)>,
    pub load_phase: Option<Phase>,
    pub reader: Option<Reader>,
    pub peak_anon: u64,
    pub settled_anon: u64,
    pub idle_anon: u64,
    pub raw: Raw,
    pub log: ServerLog,
    pub watch_reopened: u64,
}

struct Cluster<'a> {
    server: &'a ApiServer,
    watch: &'a PodWatch,
    log: &'a LogTail,
    timeout: Duration,
}

impl Cluster<'_> {
    /// Waits until `target` of the bench's pods are Running (and not being deleted).
    fn wait_running(&self, target: usize, since: Instant) -> Converged {
        let mut said = Instant::now();
        let done = wait_for(self.timeout, || {
            let c = self.watch.state().counts();
            if said.elapsed() > Duration::from_secs(15) {
                eprintln!("    {:>5.0} s: {c:?}", since.elapsed().as_secs_f64());
                said = Instant::now();
            }
            // Pods being deleted may linger (their grace period); none may be left waiting.
            c.running == target && c.unscheduled + c.scheduled_not_running == 0
        });
        let counts = self.watch.state().counts();
        if done {
            Converged::After(since.elapsed())
        } else {
            Converged::Stalled(since.elapsed(), counts, self.stall_report())
        }
    }

    /// Where a cluster that did not converge stands: the Deployments' and ReplicaSets'
    /// status summed, the stored object counts, the server's last warnings.
    fn stall_report(&self) -> String {
        let mut conn = Redial::new(self.server.port, Duration::from_secs(120));
        let mut out = String::new();
        for (what, path) in [
            ("deployments", "/apis/apps/v1/deployments"),
            ("replicasets", "/apis/apps/v1/replicasets"),
        ] {
            let sums = get(&mut conn, path).map(|r| {
                let list = r.json();
                let mut s = [0i64; 5];
                for item in list["items"].as_array().into_iter().flatten() {
                    s[0] += item["spec"]["replicas"].as_i64().unwrap_or(0);
                    for (i, f) in [
                        "replicas",
                        "readyReplicas",
                        "availableReplicas",
                        "updatedReplicas",
                    ]
                    .iter()
                    .enumerate()
                    {
                        s[i + 1] += item["status"][f].as_i64().unwrap_or(0);
                    }
                }
                s
            });
            out += &format!(
                "      {what}: spec.replicas, status replicas/ready/available/updated: {sums:?}\n"
            );
        }
        if let Ok(r) = get(&mut conn, "/metrics") {
            for line in r.text().lines().filter(|l| {
                l.starts_with("apiserver_storage_objects")
                    && ["pods", "replicasets", "endpointslices", "events"]
                        .iter()
                        .any(|k| l.contains(&format!("\"{k}")))
            }) {
                out += &format!("      {line}\n");
            }
        }
        let log = self.log.snapshot();
        out += &format!(
            "      server log lines at warn and above: {}; leader lease lost {} times; the last:\n",
            log.lines, log.lost_leadership
        );
        for l in log.last.iter().rev().take(8).rev() {
            out += &format!("        {}\n", l.chars().take(300).collect::<String>());
        }
        out
    }
}

/// Where a phase starts: the server's histograms, its CPU, the watch's events, the moment.
struct PhaseStart {
    api: Histograms,
    cpu: f64,
    events: u64,
    since: Instant,
}

fn phase_start(port: u16, pid: u32, watch: &PodWatch) -> PhaseStart {
    PhaseStart {
        api: scrape(port),
        cpu: cpu_seconds(pid),
        events: watch.state().events,
        since: Instant::now(),
    }
}

fn phase(port: u16, pid: u32, watch: &PodWatch, start: PhaseStart) -> Phase {
    let PhaseStart {
        api: before,
        cpu,
        events,
        since,
    } = start;
    // Scraped before the watch's lock is taken: the watch goes on meanwhile.
    let api = scrape(port).since(&before);
    let state = watch.state();
    Phase {
        api,
        startup: pods::startup(&state, since),
        cpu: cpu_seconds(pid) - cpu,
        watch_events: state.events - events,
        took: since.elapsed(),
    }
}

fn run(bin: &Path, backend: BackendKind, nodes: usize, per_node: usize) -> Outcome {
    let plan = Plan::new(nodes, per_node);
    eprintln!(
        "{}: raw write rate, {} bare pods",
        backend.name(),
        plan.pods()
    );
    let raw = raw_rate(bin, backend, plan.pods());
    let qps = std::env::var("DENSITY_QPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(workload::default_qps(nodes));
    let timeout = Duration::from_secs(knob("DENSITY_TIMEOUT_SECS", 600) as u64);
    let log = LogTail::default();
    let server = {
        let log = log.clone();
        Launch::new(bin)
            .backend(backend)
            .args(["--nodes".to_string(), nodes.to_string()])
            .args(["--cluster-cidr", "10.128.0.0/9"])
            .args(extra_args())
            .on_log_line(move |l| log.push(l))
            .start()
    };
    let (port, pid) = (server.port, server.pid());
    let peak = PeakAnon::start(pid);
    // The plan joins the outcome at the end: the reader and the churn borrow it meanwhile.
    let mut out = Outcome {
        backend,
        nodes,
        plan: Plan::default(),
        qps,
        nodes_ready: None,
        created: None,
        all_running: None,
        density: None,
        latency: None,
        load: Vec::new(),
        load_phase: None,
        reader: None,
        peak_anon: 0,
        settled_anon: 0,
        idle_anon: 0,
        raw,
        log: ServerLog::default(),
        watch_reopened: 0,
    };
    let started = Instant::now();
    let mut conn = Redial::new(port, Duration::from_secs(120));
    eprintln!("{}: waiting for {nodes} nodes Ready", backend.name());
    if wait_for(Duration::from_secs(600), || ready_nodes(&mut conn) >= nodes) {
        out.nodes_ready = Some(started.elapsed());
    } else {
        out.log = log.snapshot();
        out.plan = plan;
        return out;
    }
    out.idle_anon = anon_bytes(pid);
    let watch = PodWatch::start(port);
    let cluster = Cluster {
        server: &server,
        watch: &watch,
        log: &log,
        timeout,
    };
    // Namespaces and their service accounts first: admission holds pods until the latter exist.
    let namespaces: Vec<_> = plan
        .namespaces
        .iter()
        .map(|ns| workload::Request {
            method: "POST",
            path: "/api/v1/namespaces".into(),
            content_type: "application/json",
            body: format!(r#"{{"metadata":{{"name":"{ns}"}}}}"#),
        })
        .collect();
    workload::send_paced(port, &namespaces, Some(qps), 4, None);
    for ns in &plan.namespaces {
        let path = format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
        wait_for(Duration::from_secs(60), || get(&mut conn, &path).is_ok());
    }
    let start = phase_start(port, pid, &watch);
    let since = start.since;
    let mut creates = Vec::new();
    for d in &plan.deployments {
        creates.push(workload::deployment_create(d));
        if d.service {
            creates.push(workload::service_create(d));
        }
    }
    eprintln!(
        "{}: creating {} deployments and {} services at {qps} qps",
        backend.name(),
        plan.deployments.len(),
        plan.services()
    );
    let workers = (qps as usize / 10).clamp(2, 16);
    let stop_reader = AtomicBool::new(false);
    let answered = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let reader = scope
            .spawn(|| workload::read_periodically(port, &plan, &answered, workers, &stop_reader));
        out.created = Some(workload::send_paced(
            port,
            &creates,
            Some(qps),
            workers,
            Some(&answered),
        ));
        let total = plan.pods();
        let converged = cluster.wait_running(total, since);
        let density_converged = matches!(converged, Converged::After(_));
        out.all_running = Some(converged);
        out.density = Some(phase(port, pid, &watch, start));
        if density_converged {
            out.latency = latency_pods(&cluster, &plan, nodes);
            load(&cluster, &plan, &mut out, qps, workers);
        }
        stop_reader.store(true, Ordering::Relaxed);
        out.reader = reader.join().ok();
    });
    std::thread::sleep(SETTLE);
    out.settled_anon = anon_bytes(pid);
    out.peak_anon = peak.peak().max(out.settled_anon);
    out.log = log.snapshot();
    out.watch_reopened = watch.state().reopened;
    out.plan = plan;
    out
}

/// Upstream's latency pods: created at 5 qps on the saturated cluster, measured, deleted.
/// None when `DENSITY_LATENCY_PODS=0`.
fn latency_pods(cluster: &Cluster, plan: &Plan, nodes: usize) -> Option<(usize, Converged, Phase)> {
    const QPS: f64 = 5.0;
    let deployments = workload::latency_deployments(plan, nodes);
    if deployments.is_empty() {
        return None;
    }
    let (port, pid) = (cluster.server.port, cluster.server.pid());
    let watch = cluster.watch;
    let start = phase_start(port, pid, watch);
    eprintln!("  latency: {} pods at {QPS} qps", deployments.len());
    let creates: Vec<_> = deployments.iter().map(workload::latency_create).collect();
    workload::send_paced(port, &creates, Some(QPS), 2, None);
    let total = plan.pods();
    let done = cluster.wait_running(total + deployments.len(), start.since);
    let measured = phase(port, pid, watch, start);
    let deletes: Vec<_> = deployments
        .iter()
        .map(workload::deployment_delete)
        .collect();
    workload::send_paced(port, &deletes, Some(QPS * 10.0), 4, None);
    // Gone from the count once terminating; the load phase starts from the saturation pods.
    cluster.wait_running(total, Instant::now());
    Some((deployments.len(), done, measured))
}

/// Churn: every Deployment down 10% and back, then 10% of the pods deleted.
fn load(cluster: &Cluster, plan: &Plan, out: &mut Outcome, qps: f64, workers: usize) {
    let (port, pid) = (cluster.server.port, cluster.server.pid());
    let watch = cluster.watch;
    let start = phase_start(port, pid, watch);
    let total = plan.pods();
    let down: Vec<usize> = plan
        .deployments
        .iter()
        .map(|d| d.replicas - d.replicas.div_ceil(10))
        .collect();
    let steps: [(&str, Vec<workload::Request>, usize); 2] = [
        (
            "scale every Deployment down 10%",
            plan.deployments
                .iter()
                .zip(&down)
                .map(|(d, r)| workload::scale(d, *r))
                .collect(),
            down.iter().sum(),
        ),
        (
            "scale back up",
            plan.deployments
                .iter()
                .map(|d| workload::scale(d, d.replicas))
                .collect(),
            total,
        ),
    ];
    for (name, requests, target) in steps {
        let t = Instant::now();
        eprintln!("  load: {name}");
        workload::send_paced(port, &requests, Some(qps), workers, None);
        let done = cluster.wait_running(target, t);
        let stalled = matches!(done, Converged::Stalled(..));
        out.load.push((name.to_string(), done));
        if stalled {
            out.load_phase = Some(phase(port, pid, watch, start));
            return;
        }
    }
    // 10% of the running pods, spread over the Deployments.
    let victims: Vec<workload::Request> = {
        let state = watch.state();
        let mut keys: Vec<&String> = state
            .pods
            .iter()
            .filter(|(_, p)| p.live_running())
            .map(|(k, _)| k)
            .collect();
        keys.sort();
        keys.iter()
            .step_by(10)
            .filter_map(|k| k.split_once('/'))
            .map(|(ns, name)| workload::Request {
                method: "DELETE",
                path: format!("/api/v1/namespaces/{ns}/pods/{name}"),
                content_type: "application/json",
                body: String::new(),
            })
            .collect()
    };
    let name = format!("delete {} pods (10%), replaced", victims.len());
    eprintln!("  load: {name}");
    let t = Instant::now();
    workload::send_paced(port, &victims, Some(qps), workers, None);
    // The deleted pods show as terminating, then gone; done when their replacements run.
    let done = cluster.wait_running(total, t);
    out.load.push((name, done));
    out.load_phase = Some(phase(port, pid, watch, start));
}

fn main() {
    let bin = server::binary(env!("CARGO_BIN_EXE_apiserver"));
    let nodes = knob("DENSITY_NODES", 100);
    let per_node = knob("DENSITY_PODS_PER_NODE", 30);
    let backends = BackendKind::chosen(
        "DENSITY_BACKENDS",
        &[BackendKind::Embedded, BackendKind::Etcd],
    );
    for backend in backends {
        let outcome = run(&bin, backend, nodes, per_node);
        report::print(&outcome);
    }
}
