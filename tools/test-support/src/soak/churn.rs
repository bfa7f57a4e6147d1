//! The churn: threads that each do one kind of work at a steady rate until told to stop, and
//! delete what they create, so that the number of live objects stays bounded and a server
//! without leaks holds flat memory and tasks.
//!
//! | thread | every | what |
//! |---|---|---|
//! | configmaps | 250 ms | create `cm-k`, patch `cm-(k-10)`, delete `cm-(k-20)` |
//! | widgets | 500 ms | the same with custom resources, 5 and 10 behind |
//! | pods | 2 s | create a bare pod (scheduled, run by a simulated kubelet), delete the one 5 behind |
//! | deployments | 4 s | three Deployments in turn: roll (new image), scale (1–3), roll, delete and recreate |
//! | namespaces | 8 s | a namespace with ConfigMaps, a Secret, a Deployment and a widget; delete the one 2 behind |
//! | watchers (4) | — | list, then watch one of five collections; half end by `timeoutSeconds`, half are dropped mid-stream |
//!
//! At about 20 requests/s of its own, plus what the controllers and kubelets write.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::tally::{Client, Outcome, Tally};
use super::watch::{watch, WatchEnd};

/// The namespace the steady churn works in.
pub const NAMESPACE: &str = "soak";
/// The custom resources' group, version and plural.
pub const GROUP: &str = "soak.example.com";
const PLURAL: &str = "widgets";
/// Churn namespaces are named this and a number.
pub const NAMESPACE_PREFIX: &str = "soak-ns-";
const DEPLOYMENTS: u64 = 3;
const WATCHERS: u64 = 4;
/// A deleted namespace still there after this is a failure (the namespace controller's).
const NAMESPACE_GONE_WITHIN: Duration = Duration::from_secs(120);

/// What every thread shares.
pub struct Churn {
    pub port: u16,
    pub tally: Arc<Tally>,
    pub stop: AtomicBool,
}

/// A small deterministic generator (xorshift): the choices vary, runs repeat.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn ns_path(ns: &str, resource: &str) -> String {
    match resource {
        "deployments" => format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        PLURAL => format!("/apis/{GROUP}/v1/namespaces/{ns}/{PLURAL}"),
        other => format!("/api/v1/namespaces/{ns}/{other}"),
    }
}

/// The CustomResourceDefinition of the widgets.
pub fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{PLURAL}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}, "colour": {"type": "string"}}}}}}
            }]
        }
    })
}

fn widget(name: &str, size: u64) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Widget",
           "metadata": {"name": name}, "spec": {"size": size, "colour": "blue"}})
}

fn configmap(name: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {"soak": "true"}},
           "data": {"value": "x".repeat(512)}})
}

fn pod_spec(image: &str) -> Value {
    json!({"containers": [{"name": "app", "image": image}], "terminationGracePeriodSeconds": 1})
}

fn deployment(name: &str, replicas: u64, image: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "revisionHistoryLimit": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec(image)}
        }
    })
}

impl Churn {
    pub fn new(port: u16) -> Self {
        Self {
            port,
            tally: Arc::new(Tally::default()),
            stop: AtomicBool::new(false),
        }
    }

    fn client(&self) -> Client {
        Client::new(self.port, self.tally.clone())
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Calls `tick(k)` for k = 0, 1, … every `period` until stopped.
    fn every(&self, period: Duration, mut tick: impl FnMut(u64)) {
        let mut next = Instant::now();
        for k in 0.. {
            if self.stopped() {
                return;
            }
            tick(k);
            next += period;
            // Behind (a slow answer): no burst to catch up, the rate stays steady.
            next = next.max(Instant::now());
            while Instant::now() < next {
                if self.stopped() {
                    return;
                }
                std::thread::sleep((next - Instant::now()).min(Duration::from_millis(100)));
            }
        }
    }

    /// Every thread of the churn, until [`stop`](Self::stop) is set.
    pub fn run(self: &Arc<Self>) -> Vec<std::thread::JoinHandle<()>> {
        let mut threads = Vec::new();
        let mut spawn = |f: Box<dyn FnOnce(&Churn) + Send>| {
            let churn = self.clone();
            threads.push(std::thread::spawn(move || f(&churn)));
        };
        spawn(Box::new(|c| c.configmaps()));
        spawn(Box::new(|c| c.widgets()));
        spawn(Box::new(|c| c.pods()));
        spawn(Box::new(|c| c.deployments()));
        spawn(Box::new(|c| c.namespaces()));
        for i in 0..WATCHERS {
            spawn(Box::new(move |c| c.watcher(i)));
        }
        threads
    }

    /// Create `k`, patch `k - patch_behind`, delete `k - delete_behind`: a bounded set.
    fn rolling_set(
        &self,
        period: Duration,
        collection: &str,
        (patch_behind, delete_behind): (u64, u64),
        make: impl Fn(&str, u64) -> Value,
        patch: impl Fn(u64) -> Value,
    ) {
        let mut client = self.client();
        let name = |k: u64| format!("{collection}-{k}");
        let path = ns_path(NAMESPACE, collection);
        self.every(period, |k| {
            client.call("POST", &path, Some(&make(&name(k), k)));
            if let Some(p) = k.checked_sub(patch_behind) {
                client.call("PATCH", &format!("{path}/{}", name(p)), Some(&patch(k)));
            }
            if let Some(d) = k.checked_sub(delete_behind) {
                client.call("DELETE", &format!("{path}/{}", name(d)), None);
            }
        });
    }

    fn configmaps(&self) {
        self.rolling_set(
            Duration::from_millis(250),
            "configmaps",
            (10, 20),
            |name, _| configmap(name),
            |k| json!({"data": {"patched": k.to_string()}}),
        );
    }

    fn widgets(&self) {
        self.rolling_set(
            Duration::from_millis(500),
            PLURAL,
            (5, 10),
            widget,
            |k| json!({"spec": {"size": k}}),
        );
    }

    fn pods(&self) {
        self.rolling_set(
            Duration::from_secs(2),
            "pods",
            (3, 5),
            |name, _| json!({"metadata": {"name": name}, "spec": pod_spec("nginx")}),
            |k| json!({"metadata": {"labels": {"tick": k.to_string()}}}),
        );
    }

    /// Three Deployments in turn: roll, scale, roll, delete (recreated the next round). A
    /// rollout is looked at when its Deployment's turn comes again (12 s later).
    fn deployments(&self) {
        let mut client = self.client();
        let path = ns_path(NAMESPACE, "deployments");
        let mut live = [false; DEPLOYMENTS as usize];
        let mut changed = [false; DEPLOYMENTS as usize];
        self.every(Duration::from_secs(4), |k| {
            let i = (k % DEPLOYMENTS) as usize;
            let name = format!("web-{i}");
            let one = format!("{path}/{name}");
            if !live[i] {
                let created = client.call("POST", &path, Some(&deployment(&name, 2, "nginx:1.0")));
                live[i] = matches!(created, Outcome::Ok(_));
                return;
            }
            if changed[i] {
                if let Some(d) = client.call("GET", &one, None).ok() {
                    Tally::add(&self.tally.rollouts_checked, 1);
                    Tally::add(&self.tally.rollouts_complete, u64::from(rolled_out(&d)));
                }
            }
            changed[i] = true;
            match (k / DEPLOYMENTS) % 4 {
                1 => {
                    let replicas = 1 + k % 3;
                    client.call("PATCH", &one, Some(&json!({"spec": {"replicas": replicas}})));
                }
                3 => {
                    let background = format!("{one}?propagationPolicy=Background");
                    client.call("DELETE", &background, None);
                    live[i] = false;
                    changed[i] = false;
                }
                _ => {
                    let image = format!("nginx:1.{k}");
                    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}});
                    client.call("PATCH", &one, Some(&patch));
                }
            }
        });
    }

    /// A namespace with content every 8 s; the one made two rounds earlier deleted; each
    /// deleted one must be gone within [`NAMESPACE_GONE_WITHIN`].
    fn namespaces(&self) {
        let mut client = self.client();
        let mut deleted: VecDeque<(String, Instant)> = VecDeque::new();
        self.every(Duration::from_secs(8), |k| {
            let ns = format!("{NAMESPACE_PREFIX}{k}");
            let made = client.call("POST", "/api/v1/namespaces", Some(&json!({"metadata": {"name": ns}})));
            if matches!(made, Outcome::Ok(_)) {
                Tally::add(&self.tally.namespaces_created, 1);
                for i in 0..2 {
                    let cm = configmap(&format!("cm-{i}"));
                    client.call("POST", &ns_path(&ns, "configmaps"), Some(&cm));
                }
                let secret = json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}});
                client.call("POST", &ns_path(&ns, "secrets"), Some(&secret));
                client.call("POST", &ns_path(&ns, "deployments"), Some(&deployment("app", 1, "nginx")));
                client.call("POST", &ns_path(&ns, PLURAL), Some(&widget("w", 1)));
            }
            if let Some(old) = k.checked_sub(2) {
                let old = format!("{NAMESPACE_PREFIX}{old}");
                if matches!(client.call("DELETE", &format!("/api/v1/namespaces/{old}"), None), Outcome::Ok(_)) {
                    deleted.push_back((old, Instant::now()));
                }
            }
            // The oldest deleted ones: gone, or overdue.
            while let Some((old, since)) = deleted.front().cloned() {
                match client.exists(&format!("/api/v1/namespaces/{old}")) {
                    Some(false) => {
                        Tally::add(&self.tally.namespaces_gone, 1);
                        deleted.pop_front();
                    }
                    Some(true) if since.elapsed() > NAMESPACE_GONE_WITHIN => {
                        self.tally.error(format!("namespace {old} still there {NAMESPACE_GONE_WITHIN:?} after its deletion"));
                        deleted.pop_front();
                    }
                    _ => break,
                }
            }
        });
    }

    /// List a collection, then watch it from the list's resourceVersion (a third of the time
    /// from none: the initial events first); end it by `timeoutSeconds` or drop it.
    fn watcher(&self, seed: u64) {
        let mut client = self.client();
        let mut dice = Dice(0x9E37_79B9_7F4A_7C15 ^ (seed + 1).wrapping_mul(0xA24B_AED4_963E_E407));
        let collections = [
            ns_path(NAMESPACE, "configmaps"),
            "/api/v1/pods".to_string(),
            ns_path(NAMESPACE, PLURAL),
            "/apis/apps/v1/deployments".to_string(),
            "/api/v1/namespaces".to_string(),
        ];
        while !self.stopped() {
            let collection = &collections[dice.below(collections.len() as u64) as usize];
            let Some(list) = client.call("GET", collection, None).ok() else {
                std::thread::sleep(Duration::from_secs(1));
                continue;
            };
            let rv = list["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default();
            let from = if dice.below(3) == 0 || rv.is_empty() {
                String::new()
            } else {
                format!("&resourceVersion={rv}")
            };
            let (timeout, abandon) = if dice.below(2) == 0 {
                (2 + dice.below(7), None)
            } else {
                (
                    600,
                    Some(Duration::from_millis(1000 + 500 * dice.below(10))),
                )
            };
            let path = format!(
                "{collection}?watch=1&allowWatchBookmarks=true&timeoutSeconds={timeout}{from}"
            );
            Tally::add(&self.tally.requests, 1);
            Tally::add(&self.tally.watches, 1);
            match watch(self.port, &path, abandon, Duration::from_secs(timeout + 15)) {
                Ok(seen) => {
                    Tally::add(&self.tally.watch_events, seen.events);
                    if matches!(seen.end, WatchEnd::Abandoned) {
                        Tally::add(&self.tally.watches_abandoned, 1);
                    }
                    for e in seen.errors {
                        self.tally.error(format!("watch {path}: ERROR event {e}"));
                    }
                }
                Err(e) => self.tally.error(e),
            }
        }
    }
}

/// A Deployment whose last change is done: observed, every replica updated and available.
fn rolled_out(d: &Value) -> bool {
    let want = d["spec"]["replicas"].as_u64().unwrap_or(1);
    let status = &d["status"];
    status["observedGeneration"].as_i64() >= d["metadata"]["generation"].as_i64()
        && status["updatedReplicas"].as_u64().unwrap_or(0) == want
        && status["availableReplicas"].as_u64().unwrap_or(0) == want
        && status["replicas"].as_u64().unwrap_or(0) == want
}
