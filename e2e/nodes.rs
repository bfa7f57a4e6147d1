//! The node side through the real binary and the real kubectl, on the embedded store and on
//! etcd: `--nodes 2 --scheduler` registers two Ready nodes whose kubelets run what the scheduler
//! binds to them. A Deployment becomes ready by itself, a deleted pod goes through its kubelet
//! (seed 004) and its DELETED event carries the final status, `kubectl logs` prints the
//! simulated output, a Service gets a ClusterIP and an EndpointSlice of the ready pods' IPs,
//! a Job completes, and a pod that fits nowhere stays Pending with upstream's
//! FailedScheduling event.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{start_with_args, Kubectl, Server, PODS};
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
}

#[test]
fn a_whole_cluster_on_embedded() {
    whole_cluster(&start_with_args(None, None, &NODE_SIDE));
}

#[test]
fn a_whole_cluster_on_etcd() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    whole_cluster(&start_with_args(Some(etcd), Some(endpoint), &NODE_SIDE));
}
