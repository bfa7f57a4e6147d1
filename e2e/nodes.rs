//! The node side through the real binary and the real kubectl, on the embedded store and on
//! etcd: `--nodes 2 --scheduler` registers two Ready nodes whose kubelets run what the scheduler
//! binds to them. A Deployment becomes ready by itself, a deleted pod goes through its kubelet
//! (seed 004) and its DELETED event carries the final status, `kubectl logs` prints the
//! simulated output, a Service gets a ClusterIP and an EndpointSlice of the ready pods' IPs,
//! a Job completes, a pod that fits nowhere stays Pending with upstream's FailedScheduling
//! event, and one bound to a node that does not exist stays Pending with a NodeNotFound event.
//! With two servers on one etcd the default node is served once, by the leader, and its
//! running pods survive a hand-over to the other server.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{
    start_embedded_with, start_on_etcd_with, start_with_args, Kubectl, Server, FAST_ELECTION, PODS,
};
use test_support::{wait_until, EtcdServer};

const LONG: Duration = Duration::from_secs(60);
const NODE_SIDE: [&str; 3] = ["--nodes", "2", "--scheduler"];

fn whole_cluster(s: &Server) {
    wait_until("two Ready nodes", LONG, || {
        let nodes = s.json(&["get", "nodes"]);
        let items = nodes["items"].as_array().cloned().unwrap_or_default();
        items.len() == 2
            && items.iter().all(|n| {
                n["status"]["conditions"].as_array().is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            })
    });
    let listed = s.kubectl(&["get", "nodes"]);
    assert!(
        listed.contains("node-0") && listed.contains("node-1"),
        "{listed}"
    );

    s.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ]);
    let out = s.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    s.kubectl(&[
        "wait",
        "--for=condition=Ready",
        "pod",
        "-l",
        "app=web",
        "--timeout=60s",
    ]);
    let pods = s.json(&["get", "pods", "-l", "app=web"]);
    let items = pods["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 3);
    for pod in &items {
        assert!(
            pod["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| n.starts_with("node-")),
            "{pod}"
        );
        assert!(
            pod["status"]["podIP"]
                .as_str()
                .is_some_and(|ip| ip.starts_with("10.244.")),
            "{pod}"
        );
        assert_eq!(pod["status"]["phase"], "Running");
    }
    // A Service of the Deployment: a ClusterIP, and a slice of the ready pods' IPs.
    s.kubectl(&["expose", "deployment", "web", "--port=80"]);
    let svc = s.json(&["get", "service", "web"]);
    assert!(
        svc["spec"]["clusterIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("10.")),
        "{svc}"
    );
    let mut pod_ips: Vec<String> = items
        .iter()
        .filter_map(|p| p["status"]["podIP"].as_str().map(str::to_string))
        .collect();
    pod_ips.sort();
    wait_until("an EndpointSlice of the ready pods", LONG, || {
        let slices = s.json(&[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web",
        ]);
        let mut ips: Vec<String> = slices["items"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|slice| slice["endpoints"].as_array().cloned().unwrap_or_default())
            .filter(|e| e["conditions"]["ready"] == true)
            .filter_map(|e| e["addresses"][0].as_str().map(str::to_string))
            .collect();
        ips.sort();
        ips == pod_ips
    });

    let name = items[0]["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let logs = s.kubectl(&["logs", &name]);
    assert!(!logs.trim().is_empty(), "no simulated output");

    // Deletion through the kubelet: quick for a container that stops on SIGTERM, and the
    // DELETED event carries the final status.
    let rv = s.get(PODS).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string();
    let started = Instant::now();
    s.kubectl(&["delete", "pod", &name]);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "kubectl delete pod took {took:?}"
    );
    let watch = s.get(&format!(
        "{PODS}?watch=true&resourceVersion={rv}&timeoutSeconds=1"
    ));
    let deleted = watch
        .body
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "DELETED" && e["object"]["metadata"]["name"] == name.as_str())
        .unwrap_or_else(|| panic!("no DELETED event for {name}: {}", watch.body));
    let terminated = &deleted["object"]["status"]["containerStatuses"][0]["state"]["terminated"];
    assert!(terminated.is_object(), "final status missing: {deleted}");

    // A Job's pod exits 0 after a short run.
    s.kubectl(&["create", "job", "once", "--image=busybox"]);
    s.kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/once",
        "--timeout=60s",
    ]);

    // Nothing fits: Pending, with the scheduler's event.
    s.with_manifest(
        "apply",
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nowhere"},
            "spec": {"nodeSelector": {"disk": "ssd"},
                     "containers": [{"name": "c", "image": "nginx"}]}}"#,
    );
    wait_until("FailedScheduling", LONG, || {
        s.kubectl(&["describe", "pod", "nowhere"])
            .contains("FailedScheduling")
    });
    let pod = s.json(&["get", "pod", "nowhere"]);
    assert_eq!(pod["status"]["phase"], "Pending");
    let described = s.kubectl(&["describe", "pod", "nowhere"]);
    assert!(described.contains("0/2 nodes are available"), "{described}");

    // Bound to a node that does not exist: Pending, with the node controller's event.
    s.with_manifest(
        "apply",
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray"},
            "spec": {"nodeName": "ghost", "containers": [{"name": "c", "image": "nginx"}]}}"#,
    );
    wait_until("NodeNotFound", LONG, || {
        s.kubectl(&["describe", "pod", "stray"])
            .contains("NodeNotFound")
    });
    assert_eq!(
        s.json(&["get", "pod", "stray"])["status"]["phase"],
        "Pending"
    );
}

fn pods_of(s: &Server, app: &str) -> Vec<Value> {
    support::live(s.json(&["get", "pods", "-l", &format!("app={app}")]))
}

/// What a restart of the containers would change: start time, container ID, restarts.
fn run_record(pods: &[Value]) -> Vec<(String, Value)> {
    let mut record: Vec<(String, Value)> = pods
        .iter()
        .map(|p| {
            let c = &p["status"]["containerStatuses"][0];
            (
                p["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                serde_json::json!([
                    c["state"]["running"]["startedAt"],
                    c["containerID"],
                    c["restartCount"],
                    p["status"]["podIP"]
                ]),
            )
        })
        .collect();
    record.sort_by(|a, b| a.0.cmp(&b.0));
    record
}

/// Two servers on one etcd, each with the default single node: only the leader serves it;
/// when the leader dies (SIGKILL), the survivor's kubelet takes the running pods over as they
/// are, keeps the node's lease renewed, and runs the next deletion.
#[test]
fn the_node_is_served_once_and_survives_a_hand_over() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    let mut a = start_with_args(Some(etcd), Some(endpoint.clone()), &FAST_ELECTION);
    let mut b = start_with_args(None, Some(endpoint), &FAST_ELECTION);
    const SERVING: &str = "starting simulated nodes";
    wait_until("one server serving the node", LONG, || {
        a.logged(SERVING) + b.logged(SERVING) == 1
    });
    let (leader, survivor) = if a.logged(SERVING) == 1 {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    survivor.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ]);
    let out = survivor.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let before = run_record(&pods_of(survivor, "web"));
    assert_eq!(before.len(), 2);
    assert_eq!(survivor.logged(SERVING), 0, "the node is served twice");

    let _ = leader.child.kill();
    let _ = leader.child.wait();
    let killed = chrono::Utc::now();
    wait_until("the survivor serves the node", LONG, || {
        survivor.logged(SERVING) == 1
    });
    wait_until("the node's lease renewed by the survivor", LONG, || {
        let lease = survivor.json(&["get", "lease", "node-0", "-n", "kube-node-lease"]);
        lease["spec"]["renewTime"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .is_some_and(|t| t > killed)
    });
    // Let the survivor's kubelet write whatever it would write after taking over.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        run_record(&pods_of(survivor, "web")),
        before,
        "the hand-over restarted or replaced pods"
    );
    let nodes = survivor.json(&["get", "nodes"]);
    assert_eq!(nodes["items"].as_array().map(Vec::len), Some(1), "{nodes}");

    let name = before[0].0.clone();
    let victim = pods_of(survivor, "web")
        .into_iter()
        .find(|p| p["metadata"]["uid"] == name.as_str())
        .and_then(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .unwrap_or_default();
    let started = Instant::now();
    survivor.kubectl(&["delete", "pod", &victim]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "delete took {:?}",
        started.elapsed()
    );
    let out = survivor.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
}

#[test]
fn a_whole_cluster_on_embedded() {
    whole_cluster(&start_embedded_with(&NODE_SIDE));
}

#[test]
fn a_whole_cluster_on_etcd() {
    whole_cluster(&start_on_etcd_with(&NODE_SIDE));
}
