//! DaemonSets end to end through the real binary and the real kubectl, on the embedded store
//! and on etcd: three simulated nodes (`--nodes 3`), two of them labelled workers with
//! `kubectl label`, run the daemon pods, and `kubectl create`, `set image`, `rollout status |
//! history | undo` and a foreground delete behave as on a real cluster.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{live, start_embedded_with, start_on_etcd_with, Kubectl, Server, PODS};
use test_support::wait_until;

const LONG: Duration = Duration::from_secs(60);

const DAEMON_SET: &str = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 1}
  template:
    metadata:
      labels: {app: agent}
    spec:
      nodeSelector: {role: worker}
      containers:
      - name: agent
        image: agent:1
"#;

const THREE_NODES: [&str; 2] = ["--nodes", "3"];

fn label_nodes(s: &Server) {
    wait_until("three nodes", LONG, || {
        s.json(&["get", "nodes"])["items"]
            .as_array()
            .is_some_and(|n| n.len() == 3)
    });
    for (name, role) in [
        ("node-0", "worker"),
        ("node-1", "worker"),
        ("node-2", "control"),
    ] {
        s.kubectl(&["label", "node", name, &format!("role={role}")]);
    }
}

fn rollout_status(s: &Server) {
    let out = s.kubectl(&["rollout", "status", "daemonset/agent", "--timeout=60s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
}

fn images(s: &Server) -> Vec<String> {
    live(s.get(PODS).json())
        .iter()
        .filter_map(|p| {
            p["spec"]["containers"][0]["image"]
                .as_str()
                .map(String::from)
        })
        .collect()
}

fn daemon_set_lifecycle(s: &Server) {
    label_nodes(s);
    let file = s.dir.path().join("ds.yaml");
    std::fs::write(&file, DAEMON_SET).expect("write manifest");
    s.kubectl(&["create", "-f", file.to_str().unwrap_or_default()]);
    rollout_status(s);
    let ds: Value = s.json(&["get", "daemonset", "agent"]);
    let status = &ds["status"];
    assert_eq!(status["desiredNumberScheduled"], 2, "{ds}");
    assert_eq!(status["currentNumberScheduled"], 2);
    assert_eq!(status["numberReady"], 2);
    assert_eq!(status["numberAvailable"], 2);
    assert_eq!(status["updatedNumberScheduled"], 2);
    assert_eq!(status["numberMisscheduled"], 0);
    assert_eq!(status["observedGeneration"], ds["metadata"]["generation"]);

    s.kubectl(&["set", "image", "daemonset/agent", "agent=agent:2"]);
    rollout_status(s);
    wait_until("pods on agent:2", LONG, || {
        images(s) == ["agent:2", "agent:2"]
    });
    let history = s.kubectl(&["rollout", "history", "daemonset/agent"]);
    assert!(history.contains('1') && history.contains('2'), "{history}");

    s.kubectl(&["rollout", "undo", "daemonset/agent"]);
    rollout_status(s);
    wait_until("pods back on agent:1", LONG, || {
        images(s) == ["agent:1", "agent:1"]
    });
    let revisions = live(s.json(&["get", "controllerrevisions", "-l", "app=agent"]));
    assert_eq!(revisions.len(), 2, "{revisions:?}");
    let events = s.kubectl(&["describe", "daemonset", "agent"]);
    assert!(events.contains("SuccessfulCreate"), "{events}");

    s.kubectl(&["delete", "daemonset", "agent", "--cascade=foreground"]);
    wait_until("daemon set and pods gone", LONG, || {
        live(s.get(PODS).json()).is_empty()
            && s.get("/apis/apps/v1/namespaces/default/daemonsets/agent")
                .status
                == 404
    });
}

#[test]
fn daemon_set_rollouts_with_kubectl_on_embedded() {
    daemon_set_lifecycle(&start_embedded_with(&THREE_NODES));
}

#[test]
fn daemon_set_rollouts_with_kubectl_on_etcd() {
    daemon_set_lifecycle(&start_on_etcd_with(&THREE_NODES));
}
