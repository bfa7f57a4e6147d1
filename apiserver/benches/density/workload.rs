//! What the bench asks of the cluster, shaped like clusterloader2's load test: a namespace per
//! 100 nodes; in each, Deployments of three sizes (250, 30 and 5 replicas: a quarter of the
//! namespace's pods in big ones, half in medium, a quarter in small) and a ClusterIP Service
//! for every other Deployment; all created at the test client's default QPS (10 up to 500
//! nodes, 100 above, upstream's `CL2_DEFAULT_QPS`). Also the paced sender and the measurement
//! client's periodic reads.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use test_support::https::Redial;

use crate::pods::GROUP_LABEL;

const NODES_PER_NAMESPACE: usize = 100;
const SIZES: [usize; 3] = [250, 30, 5];

pub struct Deployment {
    pub namespace: String,
    pub name: String,
    pub replicas: usize,
    pub service: bool,
}

#[derive(Default)]
pub struct Plan {
    pub namespaces: Vec<String>,
    pub deployments: Vec<Deployment>,
}

impl Plan {
    pub fn new(nodes: usize, pods_per_node: usize) -> Self {
        let namespaces = nodes.div_ceil(NODES_PER_NAMESPACE).max(1);
        let total = nodes * pods_per_node;
        let mut deployments = Vec::new();
        let names: Vec<String> = (0..namespaces).map(|i| format!("density-{i}")).collect();
        for (i, ns) in names.iter().enumerate() {
            // The namespace's share, the remainder in the last.
            let mut budget = total / namespaces
                + if i + 1 == namespaces {
                    total % namespaces
                } else {
                    0
                };
            let shares = [budget / 4, budget / 2];
            let mut sized = Vec::new();
            for (size, share) in SIZES.iter().zip(shares) {
                sized.extend(std::iter::repeat_n(*size, share / size));
                budget -= (share / size) * size;
            }
            while budget > 0 {
                let r = budget.min(SIZES[2]);
                sized.push(r);
                budget -= r;
            }
            for (j, replicas) in sized.into_iter().enumerate() {
                deployments.push(Deployment {
                    namespace: ns.clone(),
                    name: format!("d{j}-r{replicas}"),
                    replicas,
                    service: j % 2 == 0,
                });
            }
        }
        Self {
            namespaces: names,
            deployments,
        }
    }

    pub fn pods(&self) -> usize {
        self.deployments.iter().map(|d| d.replicas).sum()
    }

    pub fn services(&self) -> usize {
        self.deployments.iter().filter(|d| d.service).count()
    }
}

/// The test client's QPS: upstream's default for the cluster's size.
pub fn default_qps(nodes: usize) -> f64 {
    if nodes <= 500 {
        10.0
    } else {
        100.0
    }
}

pub struct Request {
    pub method: &'static str,
    pub path: String,
    pub content_type: &'static str,
    pub body: String,
}

/// Upstream's saturation pods ask for 1m CPU and 10M memory each.
pub fn deployment_create(d: &Deployment) -> Request {
    deployment_with_requests(d, "1m", "10M")
}

/// The latency pods of upstream's density test: one replica each, 100m CPU and 350M memory
/// (sized so that the scheduler's scores spread them over the nodes), `max(500, nodes)` of
/// them over the namespaces, created at 5 qps once every saturation pod runs.
pub fn latency_deployments(plan: &Plan, nodes: usize) -> Vec<Deployment> {
    let count = crate::knob("DENSITY_LATENCY_PODS", nodes.max(500));
    (0..count)
        .map(|i| Deployment {
            namespace: plan.namespaces[i % plan.namespaces.len().max(1)].clone(),
            name: format!("latency-{i}"),
            replicas: 1,
            service: false,
        })
        .collect()
}

pub fn latency_create(d: &Deployment) -> Request {
    deployment_with_requests(d, "100m", "350M")
}

/// Deletes a Deployment; its ReplicaSet and pods go in the background (the default).
pub fn deployment_delete(d: &Deployment) -> Request {
    Request {
        method: "DELETE",
        path: format!(
            "/apis/apps/v1/namespaces/{}/deployments/{}",
            d.namespace, d.name
        ),
        content_type: "application/json",
        body: String::new(),
    }
}

fn deployment_with_requests(d: &Deployment, cpu: &str, memory: &str) -> Request {
    let (ns, name, r) = (&d.namespace, &d.name, d.replicas);
    let (group_key, group_value) = GROUP_LABEL.split_once('=').unwrap_or(("group", "density"));
    Request {
        method: "POST",
        path: format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        content_type: "application/json",
        body: format!(
            r#"{{"metadata":{{"name":"{name}"}},"spec":{{"replicas":{r},"selector":{{"matchLabels":{{"name":"{name}"}}}},"template":{{"metadata":{{"labels":{{"name":"{name}","{group_key}":"{group_value}"}}}},"spec":{{"containers":[{{"name":"pause","image":"registry.k8s.io/pause:3.10","resources":{{"requests":{{"cpu":"{cpu}","memory":"{memory}"}}}}}}]}}}}}}}}"#
        ),
    }
}

pub fn service_create(d: &Deployment) -> Request {
    let (ns, name) = (&d.namespace, &d.name);
    Request {
        method: "POST",
        path: format!("/api/v1/namespaces/{ns}/services"),
        content_type: "application/json",
        body: format!(
            r#"{{"metadata":{{"name":"{name}"}},"spec":{{"selector":{{"name":"{name}"}},"ports":[{{"port":80,"targetPort":8080}}]}}}}"#
        ),
    }
}

pub fn scale(d: &Deployment, replicas: usize) -> Request {
    Request {
        method: "PATCH",
        path: format!(
            "/apis/apps/v1/namespaces/{}/deployments/{}",
            d.namespace, d.name
        ),
        content_type: "application/merge-patch+json",
        body: format!(r#"{{"spec":{{"replicas":{replicas}}}}}"#),
    }
}

/// A bare pod in `namespace` default, for the raw write rate: the density pods' spec.
pub fn bare_pod(i: usize) -> Request {
    Request {
        method: "POST",
        path: "/api/v1/namespaces/default/pods".into(),
        content_type: "application/json",
        body: format!(
            r#"{{"metadata":{{"name":"raw-{i}","labels":{{"name":"raw"}}}},"spec":{{"containers":[{{"name":"pause","image":"registry.k8s.io/pause:3.10","resources":{{"requests":{{"cpu":"1m","memory":"10M"}}}}}}]}}}}"#
        ),
    }
}

/// What a batch of requests came to.
pub struct Sent {
    pub took: Duration,
    /// The first failures (status and body), and how many there were.
    pub failures: Vec<String>,
    pub failed: usize,
}

/// Sends `requests` from `workers` kept-alive connections, request i not before
/// `i / qps` seconds after the start (all at once without a rate), each retried on 429 and
/// 5xx as client-go would (ten times, a second apart). `done`, when given, counts the
/// requests answered.
pub fn send_paced(
    port: u16,
    requests: &[Request],
    qps: Option<f64>,
    workers: usize,
    done: Option<&AtomicUsize>,
) -> Sent {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new((Vec::new(), 0usize));
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let mut conn = Redial::new(port, Duration::from_secs(120));
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(r) = requests.get(i) else { return };
                    if let Some(qps) = qps {
                        let due = started + Duration::from_secs_f64(i as f64 / qps);
                        std::thread::sleep(due.saturating_duration_since(Instant::now()));
                    }
                    let mut tries = 0;
                    let failure = loop {
                        match conn.send(r.method, &r.path, r.content_type, r.body.as_bytes()) {
                            Ok(reply) if (200..300).contains(&reply.status) => break None,
                            Ok(reply)
                                if (reply.status == 429 || reply.status >= 500) && tries < 10 => {}
                            Ok(reply) => {
                                break Some(format!(
                                    "{} {}: {} {}",
                                    r.method,
                                    r.path,
                                    reply.status,
                                    reply.text().chars().take(200).collect::<String>()
                                ))
                            }
                            Err(_) if tries < 10 => {}
                            Err(e) => break Some(format!("{} {}: {e}", r.method, r.path)),
                        }
                        tries += 1;
                        std::thread::sleep(Duration::from_secs(1));
                    };
                    if let Some(done) = done {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    if let Some(f) = failure {
                        let mut g = failures.lock().unwrap_or_else(|e| e.into_inner());
                        g.1 += 1;
                        if g.0.len() < 5 {
                            g.0.push(f);
                        }
                    }
                }
            });
        }
    });
    let (failures, failed) = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    Sent {
        took: started.elapsed(),
        failures,
        failed,
    }
}

/// The measurement client's own reads, as a load test's readers issue them: every second a
/// GET of one Deployment and a LIST of one Deployment's pods (namespace, label selector);
/// every 10 s a LIST of all pods of a namespace and of all nodes; every 30 s a LIST of all
/// pods (cluster). Their latency on our side, per class.
pub struct Reader {
    pub latencies: [Vec<Duration>; 3],
    pub failures: usize,
}

pub const READ_CLASSES: [&str; 3] = ["GET", "LIST (namespace)", "LIST (cluster)"];

/// `created` counts the answered creates (each Deployment's, then its Service's if any): only Deployments created are
/// read (the reader starts with the creates, as the SLIs cover the whole phase).
pub fn read_periodically(
    port: u16,
    plan: &Plan,
    created: &AtomicUsize,
    workers: usize,
    stop: &AtomicBool,
) -> Reader {
    let mut conn = Redial::new(port, Duration::from_secs(120));
    let mut out = Reader {
        latencies: Default::default(),
        failures: 0,
    };
    let mut tick = 0usize;
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        // Answers come out of order by at most the creating workers; a Deployment is at most
        // the (2i/3 + 1)th create (a Service follows every other one).
        let answered = created.load(Ordering::Relaxed).saturating_sub(workers);
        let known = (answered * 2 / 3).min(plan.deployments.len());
        let mut calls = Vec::new();
        if known > 0 {
            let d = &plan.deployments[tick % known];
            let ns = &d.namespace;
            calls.push((
                0,
                format!("/apis/apps/v1/namespaces/{ns}/deployments/{}", d.name),
            ));
            calls.push((
                1,
                format!(
                    "/api/v1/namespaces/{ns}/pods?labelSelector=name%3D{}",
                    d.name
                ),
            ));
        }
        if tick.is_multiple_of(10) {
            let ns = &plan.namespaces[(tick / 10) % plan.namespaces.len().max(1)];
            calls.push((1, format!("/api/v1/namespaces/{ns}/pods")));
            calls.push((2, "/api/v1/nodes".into()));
        }
        if tick.is_multiple_of(30) {
            calls.push((2, "/api/v1/pods".into()));
        }
        for (class, path) in calls {
            let t = Instant::now();
            match conn.send("GET", &path, "application/json", b"") {
                Ok(r) if r.status == 200 => out.latencies[class].push(t.elapsed()),
                _ => out.failures += 1,
            }
        }
        tick += 1;
        let due = started + Duration::from_secs(tick as u64);
        while Instant::now() < due && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    for l in &mut out.latencies {
        l.sort();
    }
    out
}
