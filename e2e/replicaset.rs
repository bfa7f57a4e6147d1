//! The ReplicaSet controller through the real binary and the real kubectl, on the embedded
//! store and on etcd: apply, scale up and down, the DESIRED/CURRENT/READY columns once the
//! node's kubelet reports the pods ready, the events `describe` shows, and a
//! foreground cascading delete.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{start, start_on_etcd, Kubectl, Server};
use test_support::wait_until;

const LONG: Duration = Duration::from_secs(30);

const MANIFEST: &str = r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx
"#;

fn pods(s: &Server) -> Vec<Value> {
    let list = s.json(&["get", "pods", "-l", "app=web"]);
    let mut items = list["items"].as_array().cloned().unwrap_or_default();
    items.retain(|p| p["metadata"]["deletionTimestamp"].is_null());
    items
}

fn wait_for_pods(s: &Server, n: usize) {
    wait_until(&format!("{n} pods"), LONG, || pods(s).len() == n);
}

/// The DESIRED, CURRENT and READY columns of `kubectl get rs web`.
fn columns(s: &Server) -> Vec<String> {
    let out = s.kubectl(&["get", "rs", "web", "--no-headers"]);
    out.split_whitespace()
        .skip(1)
        .take(3)
        .map(str::to_string)
        .collect()
}

fn replica_set_lifecycle(s: &Server) {
    s.with_manifest("apply", MANIFEST);
    wait_for_pods(s, 3);
    for pod in pods(s) {
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "ReplicaSet");
        assert_eq!(owner["controller"], true);
        assert_eq!(pod["metadata"]["generateName"], "web-");
    }

    s.kubectl(&["scale", "rs", "web", "--replicas=5"]);
    wait_for_pods(s, 5);
    wait_until("get rs shows 5/5/5", LONG, || columns(s) == ["5", "5", "5"]);
    let header = s.kubectl(&["get", "rs", "web"]);
    assert!(
        header.starts_with("NAME") && header.contains("DESIRED") && header.contains("READY"),
        "{header}"
    );

    s.kubectl(&["scale", "rs", "web", "--replicas=1"]);
    wait_for_pods(s, 1);
    wait_until("get rs shows 1/1/1", LONG, || columns(s) == ["1", "1", "1"]);

    wait_until("describe shows the events", LONG, || {
        let described = s.kubectl(&["describe", "rs", "web"]);
        described.contains("SuccessfulCreate")
            && described.contains("Created pod: web-")
            && described.contains("SuccessfulDelete")
    });

    s.kubectl(&[
        "delete",
        "rs",
        "web",
        "--cascade=foreground",
        "--timeout=30s",
    ]);
    wait_until("rs gone", LONG, || {
        !s.kubectl_raw(&["get", "rs", "web"]).status.success()
    });
    wait_for_pods(s, 0);
}

#[test]
fn replica_set_with_kubectl_on_embedded() {
    replica_set_lifecycle(&start());
}

#[test]
fn replica_set_with_kubectl_on_etcd() {
    replica_set_lifecycle(&start_on_etcd());
}
