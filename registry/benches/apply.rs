//! Server-side apply against a plain update of the same object: CPU time of this process
//! per request (user + system, every thread: the Store, the watch cache and the storage
//! client), and wall time, for a typical Deployment (two containers with ports, env,
//! resources, a readiness probe and volume mounts; a volume; a rollout strategy) written
//! over and over, each request changing its replicas and an image tag. Target: an apply
//! costs at most 2x an update.
//!
//! Rows (`BENCH_ROWS` keys), each of sequential requests from one client:
//! - `update`: a PUT of the whole object as a client that read it sends it back (with its
//!   uid, defaults, status and managedFields; no resourceVersion, so the bodies can be built
//!   beforehand), by `kubectl-edit`, decoded from JSON as the server decodes a body;
//! - `apply`: the JSON body `kubectl apply --server-side` sends, by `kubectl`, on an object
//!   only it applies to;
//! - `co-owned`: the same on an object whose labels, selector, ports, resources, probe and
//!   volumes a second applier (`platform`) also owns, with the same values;
//! - `create` and `apply-create`: a POST of the manifest, and an apply of it to a name that
//!   does not exist yet (compared with the POST).
//!
//! Every object starts created by apply, with a status written by the controller manager,
//! as a Deployment in a cluster has. The request bodies are built before the clock starts;
//! encoding the response is left out (the same for both). Requests are strict about fields,
//! as kubectl asks.
//!
//! Run: `cargo bench -p registry --bench apply` (needs `etcd` for the etcd rows).
//! `BENCH_OBJECTS` sets the requests per row and round (default 600), `BENCH_ROUNDS` the
//! rounds (default 3; each row reports its median round), `BENCH_BACKENDS` which backends
//! (`embedded,etcd`), `BENCH_ROWS` which rows (e.g. `update,apply`, for profiling).

use std::sync::Arc;
use std::time::{Duration, Instant};

use registry::options::{FieldValidation, ListOptions, WriteOptions};
use registry::{Catalogue, Registry, Store, Subresource};
use serde_json::{json, Value};
use storage::backend::DynBackend;
use storage::CacherConfig;
use test_support::stats::median;
use test_support::{BackendKind, TestBackend};

// The allocator the server binary uses, so the comparison reflects what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const NS: Option<&str> = Some("bench");
const TARGET: f64 = 2.0;

/// CPU time this process has used, every thread (alive or gone) included: user + system.
fn process_cpu() -> Duration {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    // Linux's CLOCK_PROCESS_CPUTIME_ID: nanosecond-exact, where /proc/self/stat counts ticks.
    const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec (two 64-bit fields on 64-bit Linux).
    let rc = unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The two states requests alternate between: replicas and the web image's tag.
fn replicas(variant: usize) -> i64 {
    2 + variant as i64
}

fn image(variant: usize) -> String {
    format!("registry.example.com/shop/web:1.25.{variant}")
}

fn container(
    name: &str,
    image: &str,
    port: (&str, i64),
    probe: Value,
    mount: (&str, &str),
) -> Value {
    json!({
        "name": name,
        "image": image,
        "ports": [{"name": port.0, "containerPort": port.1, "protocol": "TCP"}],
        "env": [
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
        ],
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"}
        },
        "readinessProbe": probe,
        "volumeMounts": [{"name": mount.0, "mountPath": mount.1, "readOnly": true}]
    })
}

fn labels() -> Value {
    json!({"app.kubernetes.io/name": "web", "app.kubernetes.io/part-of": "shop", "tier": "frontend"})
}

/// The Deployment as `kubectl apply --server-side -f web.yaml` sends it: the manifest,
/// converted to JSON, with the namespace kubectl fills in.
fn manifest(name: &str, variant: usize) -> Value {
    let web = container(
        "web",
        &image(variant),
        ("http", 8080),
        json!({"httpGet": {"path": "/healthz", "port": "http"},
               "initialDelaySeconds": 5, "periodSeconds": 10, "failureThreshold": 3}),
        ("config", "/etc/web"),
    );
    let proxy = container(
        "proxy",
        "envoyproxy/envoy:v1.30.1",
        ("admin", 9901),
        json!({"tcpSocket": {"port": 9901}, "periodSeconds": 5}),
        ("config", "/etc/envoy"),
    );
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "bench", "labels": labels()},
        "spec": {
            "replicas": replicas(variant),
            "selector": {"matchLabels": {"app.kubernetes.io/name": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": labels()},
                "spec": {
                    "containers": [web, proxy],
                    "volumes": [{"name": "config", "configMap": {"name": "web-config"}}]
                }
            }
        }
    })
}

/// What the second applier sets on the co-owned object: a subset of the manifest, with the
/// same values, leaving replicas and images to kubectl.
fn co_owner_config(name: &str) -> Value {
    let mut config = manifest(name, 0);
    let spec = &mut config["spec"];
    spec.as_object_mut().map(|s| s.remove("replicas"));
    for c in spec["template"]["spec"]["containers"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        c.as_object_mut().map(|c| c.remove("image"));
    }
    config
}

fn body(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("encode body")
}

fn write_options(manager: &str) -> WriteOptions {
    // kubectl asks for strict field validation on every write.
    WriteOptions {
        field_validation: FieldValidation::Strict,
        ..WriteOptions::by(manager)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Row {
    Update,
    Apply,
    ApplyCoOwned,
    Create,
    ApplyCreate,
}

const ROWS: [Row; 5] = [
    Row::Update,
    Row::Apply,
    Row::ApplyCoOwned,
    Row::Create,
    Row::ApplyCreate,
];

impl Row {
    fn label(self) -> &'static str {
        match self {
            Row::Update => "update (PUT of the read object)",
            Row::Apply => "apply (one applier)",
            Row::ApplyCoOwned => "apply (fields co-owned by 2 appliers)",
            Row::Create => "create (POST)",
            Row::ApplyCreate => "apply (creates the object)",
        }
    }

    /// Its name in `BENCH_ROWS`.
    fn key(self) -> &'static str {
        match self {
            Row::Update => "update",
            Row::Apply => "apply",
            Row::ApplyCoOwned => "co-owned",
            Row::Create => "create",
            Row::ApplyCreate => "apply-create",
        }
    }

    /// The row it is compared with.
    fn baseline(self) -> Row {
        match self {
            Row::Create | Row::ApplyCreate => Row::Create,
            _ => Row::Update,
        }
    }
}

/// An object written over and over, with its two request bodies, flipping between them.
struct Target {
    name: String,
    bodies: [Vec<u8>; 2],
    /// The variant the object holds.
    variant: usize,
    resource_version: String,
}

impl Target {
    fn flip(&mut self) -> usize {
        self.variant = 1 - self.variant;
        self.variant
    }

    /// The object a request returned holds what it asked for, at a new revision.
    fn check(&mut self, out: &Value) {
        let v = self.variant;
        assert_eq!(
            out.pointer("/spec/replicas"),
            Some(&json!(replicas(v))),
            "{} replicas",
            self.name
        );
        assert_eq!(
            out.pointer("/spec/template/spec/containers/0/image")
                .and_then(Value::as_str),
            Some(image(v).as_str()),
            "{} image",
            self.name
        );
        let rv = registry::object::resource_version(out);
        assert_ne!(rv, self.resource_version, "{} was not written", self.name);
        self.resource_version = rv.to_string();
    }
}

struct Bench {
    store: Arc<Store>,
    update: Target,
    apply: Target,
    co_owned: Target,
    /// Names given to created objects so far.
    created: usize,
}

/// Writes the status a deployment controller would, as `kube-controller-manager`.
async fn write_status(store: &Store, name: &str) {
    let mut obj = store
        .get(NS, name, &ListOptions::default())
        .await
        .expect("get for status");
    let generation = obj
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    obj["status"] = json!({
        "observedGeneration": generation,
        "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability.",
             "lastUpdateTime": "2025-01-01T00:00:10Z", "lastTransitionTime": "2025-01-01T00:00:10Z"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "message": "ReplicaSet \"web-7d9c6b5f4d\" has successfully progressed.",
             "lastUpdateTime": "2025-01-01T00:00:10Z", "lastTransitionTime": "2025-01-01T00:00:00Z"}
        ]
    });
    store
        .update(
            NS,
            name,
            obj,
            Subresource::Status,
            &WriteOptions::by("kube-controller-manager"),
        )
        .await
        .expect("status");
}

/// An object created by kubectl's apply of variant 0, with a status.
async fn applied(store: &Store, name: &str) -> Target {
    let (_, created) = store
        .apply(
            NS,
            name,
            &body(&manifest(name, 0)),
            Subresource::Main,
            &write_options("kubectl"),
        )
        .await
        .expect("apply to create");
    assert!(created, "{name} existed already");
    write_status(store, name).await;
    Target {
        name: name.to_string(),
        bodies: [body(&manifest(name, 0)), body(&manifest(name, 1))],
        variant: 0,
        resource_version: String::new(),
    }
}

impl Bench {
    async fn new(registry: &Registry) -> Bench {
        let store = registry
            .store("apps", "v1", "deployments")
            .expect("deployments store");
        let mut update = applied(&store, "web-update").await;
        // The object as a client reads it once an update of its own is in (so the body it
        // sends back names that manager too), without its resourceVersion: bodies that can
        // be built before the clock starts (a Deployment's update may be unconditional).
        for variant in [1, 0] {
            let mut obj = store
                .get(NS, &update.name, &ListOptions::default())
                .await
                .expect("get");
            obj["spec"]["replicas"] = json!(replicas(variant));
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = json!(image(variant));
            store
                .update(
                    NS,
                    &update.name,
                    obj,
                    Subresource::Main,
                    &write_options("kubectl-edit"),
                )
                .await
                .expect("first update");
        }
        let read = store
            .get(NS, &update.name, &ListOptions::default())
            .await
            .expect("get");
        for variant in [0, 1] {
            let mut obj = read.clone();
            obj["spec"]["replicas"] = json!(replicas(variant));
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = json!(image(variant));
            registry::object::meta_mut(&mut obj).remove("resourceVersion");
            update.bodies[variant] = body(&obj);
        }
        let apply = applied(&store, "web-apply").await;
        let co_owned = applied(&store, "web-co-owned").await;
        store
            .apply(
                NS,
                &co_owned.name,
                &body(&co_owner_config(&co_owned.name)),
                Subresource::Main,
                &write_options("platform"),
            )
            .await
            .expect("the second applier's apply");
        Bench {
            store,
            update,
            apply,
            co_owned,
            created: 0,
        }
    }

    /// Runs `n` requests of `row`: (CPU, wall) per request.
    async fn run(&mut self, row: Row, n: usize) -> (Duration, Duration) {
        let store = self.store.clone();
        let kubectl = write_options("kubectl");
        // Creates name fresh objects: their bodies are built before the clock starts.
        let fresh: Vec<(String, Vec<u8>)> = match row {
            Row::Create | Row::ApplyCreate => (0..n)
                .map(|i| {
                    let name = format!("web-{:07}", self.created + i);
                    let b = body(&manifest(&name, 0));
                    (name, b)
                })
                .collect(),
            _ => Vec::new(),
        };
        self.created += fresh.len();
        let (cpu, wall) = (process_cpu(), Instant::now());
        match row {
            Row::Update => {
                let opts = write_options("kubectl-edit");
                let t = &mut self.update;
                for _ in 0..n {
                    let v = t.flip();
                    // As the server decodes a PUT's body.
                    let obj: Value = serde_json::from_slice(&t.bodies[v]).expect("decode");
                    let (out, created) = store
                        .update(NS, &t.name, obj, Subresource::Main, &opts)
                        .await
                        .expect("update");
                    assert!(!created);
                    t.check(&out);
                }
            }
            Row::Apply | Row::ApplyCoOwned => {
                let t = if row == Row::Apply {
                    &mut self.apply
                } else {
                    &mut self.co_owned
                };
                for _ in 0..n {
                    let v = t.flip();
                    let (out, created) = store
                        .apply(NS, &t.name, &t.bodies[v], Subresource::Main, &kubectl)
                        .await
                        .expect("apply");
                    assert!(!created);
                    t.check(&out);
                }
            }
            Row::Create => {
                let opts = write_options("kubectl-create");
                for (name, b) in &fresh {
                    let obj: Value = serde_json::from_slice(b).expect("decode");
                    let out = store.create(NS, obj, &opts).await.expect("create");
                    assert_eq!(registry::object::name(&out), name);
                }
            }
            Row::ApplyCreate => {
                for (name, b) in &fresh {
                    let (out, created) = store
                        .apply(NS, name, b, Subresource::Main, &kubectl)
                        .await
                        .expect("apply to create");
                    assert!(created && registry::object::name(&out) == name);
                }
            }
        }
        let (cpu, wall) = (process_cpu() - cpu, wall.elapsed());
        (cpu / n as u32, wall / n as u32)
    }

    /// Reads the objects back: each holds the last variant written, with the managers
    /// expected.
    async fn verify(&self) {
        for (t, managers) in [
            (&self.update, &["kubectl", "kubectl-edit"][..]),
            (&self.apply, &["kubectl"][..]),
            (&self.co_owned, &["kubectl", "platform"][..]),
        ] {
            let obj = self
                .store
                .get(NS, &t.name, &ListOptions::default())
                .await
                .expect("read back");
            let v = t.variant;
            assert_eq!(
                obj.pointer("/spec/replicas"),
                Some(&json!(replicas(v))),
                "{}",
                t.name
            );
            assert_eq!(
                obj.pointer("/spec/template/spec/containers/0/image")
                    .and_then(Value::as_str),
                Some(image(v).as_str()),
                "{}",
                t.name
            );
            // The last write is the one read (objects of rows not run were not written).
            if !t.resource_version.is_empty() {
                assert_eq!(
                    registry::object::resource_version(&obj),
                    t.resource_version,
                    "{}",
                    t.name
                );
            }
            assert!(
                obj.pointer("/status/availableReplicas").is_some(),
                "{} status",
                t.name
            );
            let entries = obj
                .pointer("/metadata/managedFields")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for manager in managers {
                assert!(
                    entries.iter().any(|e| e["manager"] == json!(manager)
                        && e["subresource"].as_str().unwrap_or_default().is_empty()
                        && e["fieldsV1"].as_object().is_some_and(|f| !f.is_empty())),
                    "{}: no fields owned by {manager} in {entries:#?}",
                    t.name
                );
            }
        }
    }
}

/// The rows `BENCH_ROWS` names (comma-separated keys, e.g. `update,apply`), for profiling
/// one of them; all of them when it is unset.
fn rows() -> Vec<Row> {
    let wanted = std::env::var("BENCH_ROWS").ok();
    ROWS.into_iter()
        .filter(|row| {
            wanted
                .as_deref()
                .is_none_or(|w| w.split(',').any(|k| k.trim() == row.key()))
        })
        .collect()
}

fn rounds() -> usize {
    std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|r| *r > 0)
        .unwrap_or(3)
}

/// One row's result on a backend, per request: median CPU µs (and its rounds' range) and
/// median wall µs.
struct Measured {
    row: Row,
    cpu: f64,
    cpu_range: (f64, f64),
    wall: f64,
}

/// The rows' medians on one backend.
async fn bench_backend(backend: DynBackend, n: usize) -> Vec<Measured> {
    let registry = Registry::new(
        storage::KvStore::new(backend, "/registry"),
        Arc::new(Catalogue::builtin()),
        CacherConfig::default(),
    );
    // Every built-in kind gets its schema, as the server sets them.
    registry.set_schemas(Arc::new(openapi::OpenApi::new(Vec::new())));
    registry.bootstrap().await.expect("bootstrap");
    registry
        .store("", "v1", "namespaces")
        .expect("namespaces")
        .create(
            None,
            json!({"metadata": {"name": "bench"}}),
            &WriteOptions::default(),
        )
        .await
        .expect("bench namespace");
    let mut bench = Bench::new(&registry).await;
    // Warm up: schemas built, caches filled, allocator pools grown.
    let rows = rows();
    for &row in &rows {
        bench.run(row, (n / 10).max(50)).await;
    }
    let mut samples = vec![(Vec::new(), Vec::new()); rows.len()];
    for round in 0..rounds() {
        // Rows take turns at going first, so background noise falls on each of them.
        for k in 0..rows.len() {
            let i = (k + round) % rows.len();
            let (cpu, wall) = bench.run(rows[i], n).await;
            samples[i].0.push(cpu.as_secs_f64() * 1e6);
            samples[i].1.push(wall.as_secs_f64() * 1e6);
        }
    }
    bench.verify().await;
    rows.iter()
        .zip(samples)
        .map(|(row, (cpu, wall))| Measured {
            row: *row,
            cpu_range: (
                cpu.iter().copied().fold(f64::MAX, f64::min),
                cpu.iter().copied().fold(f64::MIN, f64::max),
            ),
            cpu: median(cpu),
            wall: median(wall),
        })
        .collect()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let n: usize = std::env::var("BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(600);
    let kinds = BackendKind::chosen(
        "BENCH_BACKENDS",
        &[BackendKind::Embedded, BackendKind::Etcd],
    );
    let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
    runtime.block_on(async move {
        println!(
            "server-side apply vs update of a Deployment: {n} sequential requests per row, median of {} rounds, {cpus} CPUs",
            rounds()
        );
        println!("CPU is this process's (user + system, all threads); the etcd server's own is not counted");
        let mut worst: Option<(String, f64)> = None;
        for kind in kinds {
            let backend = TestBackend::open(kind).await;
            let opened = storage::backend::open(&backend.etcd_servers(), backend.data_dir())
                .await
                .expect("open the test backend");
            let rows = bench_backend(opened, n).await;
            let name = kind.name();
            println!(
                "{:<9} {:<38} {:>11} {:>15} {:>11} {:>9}",
                "backend", "request", "CPU µs/req", "(rounds range)", "wall µs/req", "CPU ratio"
            );
            for m in &rows {
                // Without its baseline row (BENCH_ROWS) a row has no ratio.
                let ratio = rows
                    .iter()
                    .find(|b| b.row == m.row.baseline())
                    .map(|b| m.cpu / b.cpu);
                let shown = ratio.map_or("-".to_string(), |r| format!("{r:.2}"));
                let range = format!("({:.0}-{:.0})", m.cpu_range.0, m.cpu_range.1);
                println!(
                    "{name:<9} {:<38} {:>11.1} {range:>15} {:>11.1} {shown:>9}",
                    m.row.label(),
                    m.cpu,
                    m.wall
                );
                let Some(ratio) = ratio else { continue };
                if matches!(m.row, Row::Apply | Row::ApplyCoOwned)
                    && worst.as_ref().is_none_or(|(_, w)| ratio > *w)
                {
                    worst = Some((format!("{name} {}", m.row.label()), ratio));
                }
            }
        }
        if let Some((row, ratio)) = worst {
            let verdict = if ratio <= TARGET { "met" } else { "MISSED" };
            println!(
                "target apply CPU <= {TARGET:.1}x update: {verdict} (worst: {row} at {ratio:.2}x)"
            );
        }
    });
}
