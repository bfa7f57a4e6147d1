//! `kubectl cordon | uncordon | drain` through the real binary and the real kubectl, on the
//! embedded store and on etcd, with two in-process kubelets (`--nodes 2 --scheduler`): drain
//! evicts through the `pods/eviction` subresource, the disruption controller keeps the
//! PodDisruptionBudget's status, the budget is never broken while the pods move to the other
//! node, and an eviction the budget cannot afford is refused with 429.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use support::{start_with_args, Kubectl, Server};
use test_support::{wait_until, EtcdServer};

const LONG: Duration = Duration::from_secs(60);
const NODE_SIDE: [&str; 3] = ["--nodes", "2", "--scheduler"];
const WEB_PODS: &str = "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb";

fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

fn web_pods(s: &Server) -> Vec<Value> {
    s.json(&["get", "pods", "-l", "app=web"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn unschedulable(s: &Server, node: &str) -> bool {
    s.json(&["get", "node", node])["spec"]["unschedulable"] == true
}

fn budget(s: &Server) -> Value {
    s.json(&["get", "pdb", "web"])
}

/// Watches the ready web pods over HTTP from another thread; the fewest it ever saw.
fn watch_ready(
    port: u16,
    stop: Arc<AtomicBool>,
    fewest: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            let response = Server::send(port, "GET", WEB_PODS, &[], b"");
            if response.status == 200 {
                let list: Value = serde_json::from_str(&response.body).unwrap_or(Value::Null);
                let count = list["items"]
                    .as_array()
                    .map_or(0, |items| items.iter().filter(|p| ready(p)).count());
                fewest.fetch_min(count, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    })
}

fn drain(s: &Server) {
    wait_until("two Ready nodes", LONG, || {
        let nodes = s.json(&["get", "nodes"]);
        nodes["items"].as_array().is_some_and(|items| {
            items.len() == 2
                && items.iter().all(|n| {
                    n["status"]["conditions"].as_array().is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
                })
        })
    });

    let out = s.kubectl(&["cordon", "node-0"]);
    assert!(out.contains("node/node-0 cordoned"), "{out}");
    assert!(unschedulable(s, "node-0"));
    let out = s.kubectl(&["uncordon", "node-0"]);
    assert!(out.contains("node/node-0 uncordoned"), "{out}");
    assert!(!unschedulable(s, "node-0"));

    s.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ]);
    let out = s.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    s.kubectl(&[
        "create",
        "pdb",
        "web",
        "--selector=app=web",
        "--min-available=1",
    ]);
    wait_until("the budget allows one disruption", LONG, || {
        let pdb = budget(s);
        pdb["status"]["disruptionsAllowed"] == 1 && pdb["status"]["currentHealthy"] == 2
    });

    let pods = web_pods(s);
    let node = pods[0]["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let other = if node == "node-0" { "node-1" } else { "node-0" };

    let stop = Arc::new(AtomicBool::new(false));
    let fewest = Arc::new(AtomicUsize::new(usize::MAX));
    let watcher = watch_ready(s.port, stop.clone(), fewest.clone());
    let out = s.kubectl(&[
        "drain",
        &node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=60s",
    ]);
    assert!(out.contains(&format!("node/{node} drained")), "{out}");
    assert!(out.contains("evicted"), "{out}");
    assert!(unschedulable(s, &node));

    wait_until("two ready web pods on the other node", LONG, || {
        let pods = web_pods(s);
        pods.len() == 2
            && pods
                .iter()
                .all(|p| ready(p) && p["spec"]["nodeName"] == other)
    });
    stop.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    let fewest = fewest.load(Ordering::SeqCst);
    assert!(
        fewest >= 1 && fewest != usize::MAX,
        "ready web pods fell to {fewest}"
    );

    // A budget needing both pods allows no eviction: kubectl drain gives up on it, and a
    // direct Eviction is answered 429 with upstream's cause.
    s.kubectl(&[
        "patch",
        "pdb",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"minAvailable":2}}"#,
    ]);
    wait_until("the budget allows no disruption", LONG, || {
        let pdb = budget(s);
        pdb["status"]["observedGeneration"] == pdb["metadata"]["generation"]
            && pdb["status"]["disruptionsAllowed"] == 0
            && pdb["status"]["desiredHealthy"] == 2
    });
    let refused = s.kubectl_raw(&["drain", other, "--ignore-daemonsets", "--timeout=8s"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{stderr}"
    );

    let pod = web_pods(s)[0]["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": pod, "namespace": "default"}});
    let response = s.send_json(
        "POST",
        &format!("/api/v1/namespaces/default/pods/{pod}/eviction"),
        &eviction,
    );
    assert_eq!(response.status, 429, "{}", response.body);
    let status = response.json();
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["details"]["causes"][0]["reason"], "DisruptionBudget");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "The disruption budget web needs 2 healthy pods and has 2 currently"
    );
    assert_eq!(web_pods(s).len(), 2);
}

#[test]
fn drain_honours_the_budget_on_embedded() {
    drain(&start_with_args(None, None, &NODE_SIDE));
}

#[test]
fn drain_honours_the_budget_on_etcd() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    drain(&start_with_args(Some(etcd), Some(endpoint), &NODE_SIDE));
}
