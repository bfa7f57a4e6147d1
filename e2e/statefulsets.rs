//! StatefulSets end to end through the real binary and the real kubectl, on the embedded
//! store and on etcd: `kubectl apply` to ready ordinal pods, `scale`, `set image` with
//! `rollout status`, `rollout history` / `undo` through ControllerRevisions, and a foreground
//! delete. The server's default node runs the pods (scheduler and kubelet in the process).

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{live, start, start_on_etcd, Kubectl, Server, PODS};
use test_support::wait_until;

const LONG: Duration = Duration::from_secs(60);

const MANIFEST: &str = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  replicas: 3
  serviceName: nginx
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1
"#;

fn pod_names(s: &Server) -> Vec<String> {
    let mut names: Vec<String> = live(s.get(PODS).json())
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

fn rollout_status(s: &Server) -> String {
    let out = s.kubectl(&["rollout", "status", "statefulset/web", "--timeout=60s"]);
    // kubectl reports a RollingUpdate with a partition (defaulted to 0) as partitioned.
    assert!(out.contains("roll out complete"), "{out}");
    out
}

fn image(set: &Value) -> &str {
    set["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
}

fn statefulset_lifecycle(s: &Server) {
    s.with_manifest("apply", MANIFEST);
    rollout_status(s);
    assert_eq!(pod_names(s), ["web-0", "web-1", "web-2"]);
    let set = s.json(&["get", "statefulset", "web"]);
    let status = &set["status"];
    assert_eq!(status["readyReplicas"], 3, "{set}");
    assert_eq!(status["availableReplicas"], 3);
    assert_eq!(status["currentReplicas"], 3);
    assert_eq!(status["updatedReplicas"], 3);
    assert_eq!(status["observedGeneration"], set["metadata"]["generation"]);
    assert_eq!(status["currentRevision"], status["updateRevision"]);
    let pod = s.json(&["get", "pod", "web-1"]);
    assert_eq!(pod["spec"]["hostname"], "web-1");
    assert_eq!(pod["spec"]["subdomain"], "nginx");

    s.kubectl(&["scale", "statefulset", "web", "--replicas=4"]);
    rollout_status(s);
    wait_until("web-3", LONG, || pod_names(s).len() == 4);

    s.kubectl(&["set", "image", "statefulset/web", "nginx=nginx:2"]);
    rollout_status(s);
    let set = s.json(&["get", "statefulset", "web"]);
    assert_eq!(image(&set), "nginx:2");
    assert_eq!(set["status"]["updatedReplicas"], 4, "{set}");
    let revisions = s.json(&["get", "controllerrevisions"]);
    assert_eq!(
        revisions["items"].as_array().map(Vec::len),
        Some(2),
        "{revisions}"
    );
    let history = s.kubectl(&["rollout", "history", "statefulset/web"]);
    assert!(history.contains('1') && history.contains('2'), "{history}");

    s.kubectl(&["rollout", "undo", "statefulset/web"]);
    rollout_status(s);
    let set = s.json(&["get", "statefulset", "web"]);
    assert_eq!(image(&set), "nginx:1");
    let pod = s.json(&["get", "pod", "web-0"]);
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1");
    let events = s.kubectl(&["describe", "statefulset", "web"]);
    assert!(
        events.contains("create Pod web-0 in StatefulSet web successful"),
        "{events}"
    );

    s.kubectl(&["delete", "statefulset", "web", "--cascade=foreground"]);
    wait_until("pods gone", LONG, || pod_names(s).is_empty());
    let sets = s.json(&["get", "statefulsets"]);
    assert_eq!(sets["items"].as_array().map(Vec::len), Some(0), "{sets}");
}

#[test]
fn statefulset_rollouts_with_kubectl_on_embedded() {
    statefulset_lifecycle(&start());
}

#[test]
fn statefulset_rollouts_with_kubectl_on_etcd() {
    statefulset_lifecycle(&start_on_etcd());
}
