//! Deployments end to end through the real binary and the real kubectl, on the embedded store
//! and on etcd: the Deployment and ReplicaSet controllers together take `kubectl create
//! deployment` to ready pods, and `rollout status | history | undo`, `set image`, `scale` and a
//! foreground delete behave as on a real cluster. The server's node (the default `--nodes 1`)
//! runs the pods: the scheduler binds them and its kubelet reports them Running and Ready.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{live, start, start_on_etcd, Kubectl, Server, PODS};
use test_support::wait_until;

const LONG: Duration = Duration::from_secs(60);
fn replica_sets(s: &Server) -> Vec<Value> {
    live(s.json(&["get", "rs", "-l", "app=web"]))
}

fn rollout_status(s: &Server) {
    let out = s.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
}

fn deployment_lifecycle(s: &Server) {
    s.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1",
        "--replicas=3",
    ]);
    rollout_status(s);
    let d = s.json(&["get", "deployment", "web"]);
    assert_eq!(d["status"]["availableReplicas"], 3, "{d}");
    assert_eq!(
        d["status"]["observedGeneration"],
        d["metadata"]["generation"]
    );
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    let available = d["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Available").cloned())
        .expect("Available condition");
    assert_eq!(available["status"], "True");
    assert_eq!(available["reason"], "MinimumReplicasAvailable");

    s.kubectl(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    rollout_status(s);
    let sets = replica_sets(s);
    assert_eq!(sets.len(), 2, "{sets:?}");
    let by_image = |image: &str| {
        sets.iter()
            .find(|rs| rs["spec"]["template"]["spec"]["containers"][0]["image"] == image)
            .cloned()
            .expect("replica set of the image")
    };
    assert_eq!(by_image("nginx:2")["spec"]["replicas"], 3);
    assert_eq!(by_image("nginx:1")["spec"]["replicas"], 0);
    let history = s.kubectl(&["rollout", "history", "deployment/web"]);
    assert!(history.contains('1') && history.contains('2'), "{history}");

    s.kubectl(&["rollout", "undo", "deployment/web"]);
    rollout_status(s);
    let d = s.json(&["get", "deployment", "web"]);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1"
    );
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    // The first ReplicaSet was reused, not a third one made.
    assert_eq!(replica_sets(s).len(), 2);

    s.kubectl(&["scale", "deployment", "web", "--replicas=5"]);
    rollout_status(s);
    wait_until("5 pods", LONG, || live(s.get(PODS).json()).len() == 5);
    let events = s.kubectl(&["describe", "deployment", "web"]);
    assert!(events.contains("ScalingReplicaSet"), "{events}");

    s.kubectl(&["delete", "deployment", "web", "--cascade=foreground"]);
    wait_until("replica sets and pods gone", LONG, || {
        replica_sets(s).is_empty() && live(s.get(PODS).json()).is_empty()
    });
}

#[test]
fn deployment_rollouts_with_kubectl_on_embedded() {
    deployment_lifecycle(&start());
}

#[test]
fn deployment_rollouts_with_kubectl_on_etcd() {
    deployment_lifecycle(&start_on_etcd());
}

/// A Deployment whose pods have an init container and a sidecar (an init container with
/// `restartPolicy: Always`) becomes Available: the init container runs once to completion,
/// the sidecar keeps running beside the app, and neither is restarted.
fn init_container_and_sidecar(s: &Server) {
    s.with_manifest(
        "apply",
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: sided}
spec:
  replicas: 2
  selector: {matchLabels: {app: sided}}
  template:
    metadata: {labels: {app: sided}}
    spec:
      initContainers:
      - {name: setup, image: busybox}
      - {name: proxy, image: envoy, restartPolicy: Always}
      containers:
      - {name: app, image: nginx}
"#,
    );
    let out = s.kubectl(&["rollout", "status", "deployment/sided", "--timeout=60s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let pods = live(s.json(&["get", "pods", "-l", "app=sided"]));
    assert_eq!(pods.len(), 2);
    for pod in &pods {
        let init = &pod["status"]["initContainerStatuses"];
        assert_eq!(init[0]["name"], "setup", "{pod}");
        assert_eq!(init[0]["restartCount"], 0, "{pod}");
        assert_eq!(init[0]["state"]["terminated"]["exitCode"], 0, "{pod}");
        assert_eq!(init[1]["name"], "proxy", "{pod}");
        assert!(init[1]["state"]["running"].is_object(), "{pod}");
        assert_eq!(pod["status"]["phase"], "Running", "{pod}");
    }
}

#[test]
fn init_container_and_sidecar_on_embedded() {
    init_container_and_sidecar(&start());
}

#[test]
fn init_container_and_sidecar_on_etcd() {
    init_container_and_sidecar(&start_on_etcd());
}
