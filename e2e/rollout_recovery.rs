//! A rollout survives the controllers' process going away: a Deployment's rolling update is
//! interrupted by a crash of the server (restarted on the same storage), or by the death of
//! the leader of two servers on one etcd, and finishes with no duplicate pod, no skipped step,
//! and maxSurge / maxUnavailable held throughout, as read from the pods' watch stream.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use support::{start_with_args, Kubectl, Kubelet, Server, FAST_ELECTION, NO_NODES, PODS};
use test_support::{wait_until, EtcdServer};

const LONG: Duration = Duration::from_secs(90);
const REPLICAS: usize = 4;
const HASH: &str = "pod-template-hash";

/// What the pods' watch stream showed while the test ran.
#[derive(Default)]
struct Seen {
    /// name → (template hash, ready), for pods not being deleted.
    live: BTreeMap<String, (String, bool)>,
    /// The template hash of every pod created while recording, in order.
    created: Vec<(String, String)>,
    most_live: usize,
    fewest_ready: usize,
    /// A watch that could not be resumed (410 Gone or an ERROR event).
    broken: Option<String>,
}

impl Seen {
    fn apply(&mut self, event: &Value) {
        self.record(event);
        self.observe();
    }

    /// Counts what is live now against the bounds.
    fn observe(&mut self) {
        self.most_live = self.most_live.max(self.live.len());
        let ready = self.live.values().filter(|(_, r)| *r).count();
        self.fewest_ready = self.fewest_ready.min(ready);
    }

    fn record(&mut self, event: &Value) {
        let pod = &event["object"];
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match event["type"].as_str() {
            Some("ERROR") => self.broken = Some(event.to_string()),
            Some("DELETED") => drop(self.live.remove(&name)),
            Some(kind) => {
                let hash = pod["metadata"]["labels"][HASH].as_str().unwrap_or_default();
                if kind == "ADDED" {
                    self.created.push((name.clone(), hash.to_string()));
                }
                if pod["metadata"]["deletionTimestamp"].is_null() {
                    self.live.insert(name, (hash.to_string(), is_ready(pod)));
                } else {
                    self.live.remove(&name);
                }
            }
            None => {}
        }
    }
}

impl Seen {
    /// Takes the state from a list (pods it shows that were never seen count as created);
    /// returns the list's resourceVersion to watch from.
    fn relist(&mut self, list: &Value) -> String {
        let before = std::mem::take(&mut self.live);
        for pod in list["items"].as_array().into_iter().flatten() {
            let name = pod["metadata"]["name"].as_str().unwrap_or_default();
            let known = before.contains_key(name) || self.created.iter().any(|(n, _)| n == name);
            let kind = if known { "MODIFIED" } else { "ADDED" };
            self.record(&json!({"type": kind, "object": pod}));
        }
        self.observe();
        list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("0")
            .to_string()
    }
}

fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// Follows the pods' watch from the state of a list, resuming from the last resourceVersion
/// whenever the stream ends or the server is away.
struct Recorder {
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Recorder {
    fn start(s: &Server) -> Self {
        let mut seen = Seen {
            fewest_ready: usize::MAX,
            ..Seen::default()
        };
        let mut rv = seen.relist(&s.get(PODS).json());
        seen.created.clear();
        let seen = Arc::new(Mutex::new(seen));
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, flag, port) = (seen.clone(), stop.clone(), s.port);
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let path = format!("{PODS}?watch=true&resourceVersion={rv}&timeoutSeconds=1");
                let r = Server::send(port, "GET", &path, &[], b"");
                let Ok(mut seen) = shared.lock() else { return };
                if r.status == 410 {
                    // A restarted server's watch cache begins at its start, as upstream's:
                    // relist as an informer does.
                    let list = Server::send(port, "GET", PODS, &[], b"");
                    if list.status == 200 {
                        rv = seen.relist(&list.json());
                    }
                    continue;
                }
                if r.status != 200 {
                    if r.status != 0 {
                        seen.broken = Some(format!("{} {}", r.status, r.body));
                    }
                    drop(seen);
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
                for event in r
                    .body
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                {
                    seen.apply(&event);
                    if let Some(v) = event["object"]["metadata"]["resourceVersion"].as_str() {
                        rv = v.to_string();
                    }
                }
            }
        });
        Self {
            seen,
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> Seen {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let seen = self.seen.lock().map(|mut s| std::mem::take(&mut *s));
        seen.unwrap_or_else(|e| panic!("recorder poisoned: {e}"))
    }
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1"}]},
            },
        },
    })
}

fn rollout_status(s: &Server) {
    let out = s.kubectl(&["rollout", "status", "deployment/web", "--timeout=90s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
}

/// The Deployment's updatedReplicas once its status describes the current spec.
fn updated_replicas(s: &Server) -> i64 {
    let d = s.get("/apis/apps/v1/namespaces/default/deployments/web");
    if d.status != 200 {
        return 0;
    }
    let d = d.json();
    if d["status"]["observedGeneration"] != d["metadata"]["generation"] {
        return 0;
    }
    d["status"]["updatedReplicas"].as_i64().unwrap_or(0)
}

/// Rolls `web` from nginx:1 to nginx:2 through `s`, calling `interrupt` once the rollout is
/// under way, and checks what the watch stream saw and where the rollout ended.
fn interrupted_rollout(s: &mut Server, interrupt: impl FnOnce(&mut Server)) {
    let response = s.send_json(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment(),
    );
    assert_eq!(response.status, 201, "{}", response.body);
    rollout_status(s);

    let recorder = Recorder::start(s);
    s.kubectl(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    wait_until("the rollout under way", LONG, || updated_replicas(s) >= 2);
    assert!(
        updated_replicas(s) < REPLICAS as i64,
        "the rollout ended before the interruption"
    );
    interrupt(s);
    rollout_status(s);
    // Let the last deletions reach the stream.
    std::thread::sleep(Duration::from_secs(2));
    let seen = recorder.finish();
    assert_eq!(seen.broken, None, "the watch could not be resumed");
    let d = s.json(&["get", "deployment", "web"]);
    let template_hash = |image: &str| {
        let sets = s.json(&["get", "rs", "-l", "app=web"]);
        sets["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|rs| rs["spec"]["template"]["spec"]["containers"][0]["image"] == image)
            .map(|rs| {
                rs["metadata"]["labels"][HASH]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_else(|| panic!("no replica set of {image}"))
    };
    let new_hash = template_hash("nginx:2");
    // Every pod made during the rollout is the new template's, and exactly as many as wanted.
    assert!(
        seen.created.iter().all(|(_, h)| *h == new_hash),
        "{:?}",
        seen.created
    );
    assert_eq!(
        seen.created.len(),
        REPLICAS,
        "duplicate pods: {:?}",
        seen.created
    );
    assert!(
        seen.most_live <= REPLICAS + 1,
        "maxSurge exceeded: {} pods",
        seen.most_live
    );
    assert!(
        seen.fewest_ready >= REPLICAS,
        "maxUnavailable exceeded: {} ready",
        seen.fewest_ready
    );
    assert!(seen
        .live
        .values()
        .all(|(h, ready)| *h == new_hash && *ready));
    assert_eq!(seen.live.len(), REPLICAS);
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    assert_eq!(d["status"]["updatedReplicas"], REPLICAS);
    assert_eq!(d["status"]["availableReplicas"], REPLICAS);
    assert_eq!(
        d["status"]["observedGeneration"],
        d["metadata"]["generation"]
    );
    let old = s.json(&[
        "get",
        "rs",
        "-l",
        &format!("{HASH}={}", template_hash("nginx:1")),
    ]);
    assert_eq!(old["items"][0]["spec"]["replicas"], 0, "{old}");
}

fn crash_mid_rollout(mut s: Server) {
    let _kubelet = Kubelet::paced(&s, Duration::from_millis(700));
    interrupted_rollout(&mut s, Server::crash_and_restart);
}

/// No node and no scheduler: the paced stand-in plays the kubelet.
fn flags() -> Vec<&'static str> {
    [&FAST_ELECTION[..], &NO_NODES[..]].concat()
}

#[test]
fn a_crash_mid_rollout_on_embedded_loses_nothing() {
    crash_mid_rollout(start_with_args(None, None, &flags()));
}

#[test]
fn a_crash_mid_rollout_on_etcd_loses_nothing() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    crash_mid_rollout(start_with_args(Some(etcd), Some(endpoint), &flags()));
}

/// Two servers on one etcd; the leader dies (SIGKILL, its lease left to expire) mid-rollout and
/// the other finishes the rollout. Everything is driven through the survivor.
#[test]
fn a_leader_hand_over_mid_rollout_loses_nothing() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    let mut a = start_with_args(Some(etcd), Some(endpoint.clone()), &flags());
    let mut b = start_with_args(None, Some(endpoint), &flags());
    wait_until("a leader", LONG, || {
        a.logged("starting controllers") + b.logged("starting controllers") == 1
    });
    let (leader, survivor) = if a.logged("starting controllers") == 1 {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let _kubelet = Kubelet::paced(survivor, Duration::from_millis(700));
    interrupted_rollout(survivor, |survivor| {
        let _ = leader.child.kill();
        let _ = leader.child.wait();
        wait_until("the survivor leads", LONG, || {
            survivor.logged("starting controllers") == 1
        });
    });
}
