//! A node's kubelet endpoints through the server (`kubectl get --raw
//! /api/v1/nodes/N/proxy/...`), on the embedded store and on etcd, and `kubectl top`'s clear
//! refusal where no metrics API is served.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{start_with_args, Kubectl, Server};
use test_support::{wait_until, EtcdServer};

const LONG: Duration = Duration::from_secs(60);
const NODE_SIDE: [&str; 3] = ["--nodes", "2", "--scheduler"];

fn raw(s: &Server, path: &str) -> std::process::Output {
    s.kubectl_raw(&["get", "--raw", path])
}

fn node_proxy(s: &Server) {
    wait_until("node-0 healthy", LONG, || {
        let out = raw(s, "/api/v1/nodes/node-0/proxy/healthz");
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok"
    });
    s.kubectl(&[
        "run",
        "one",
        "--image=nginx",
        "--overrides",
        r#"{"spec": {"nodeName": "node-1"}}"#,
    ]);
    s.kubectl(&["wait", "--for=condition=Ready", "pod/one", "--timeout=60s"]);

    let out = raw(s, "/api/v1/nodes/node-1/proxy/pods");
    assert!(out.status.success(), "{out:?}");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(list["kind"], "PodList");
    assert_eq!(list["apiVersion"], "v1");
    let names: Vec<&str> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["one"], "{list}");
    let out = raw(s, "/api/v1/nodes/node-0/proxy/pods");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(list["items"], serde_json::json!([]), "{list}");

    let out = raw(s, "/api/v1/nodes/node-0/proxy/configz");
    assert!(out.status.success(), "{out:?}");
    let config: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(config["kubeletconfig"]["maxPods"], 110, "{config}");
    assert_eq!(
        config["kubeletconfig"]["nodeLeaseDurationSeconds"], 40,
        "{config}"
    );

    // What a simulated kubelet cannot answer honestly is not there; nor is a missing node.
    for path in [
        "/api/v1/nodes/node-0/proxy/stats/summary",
        "/api/v1/nodes/node-0/proxy/nonsense",
        "/api/v1/nodes/nowhere/proxy/healthz",
    ] {
        let out = raw(s, path);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("NotFound"),
            "{path}: {err}"
        );
    }

    // Discovery lists the subresource as upstream does.
    let resources: Value = serde_json::from_slice(&raw(s, "/api/v1").stdout).unwrap_or_default();
    let proxy = resources["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "nodes/proxy"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(proxy["kind"], "NodeProxyOptions", "{proxy}");

    // The metrics API (served in-process for the simulated nodes) answers kubectl top.
    let out = s.kubectl(&["top", "node"]);
    assert!(out.starts_with("NAME"), "{out}");
    assert_eq!(out.lines().count(), 3, "{out}");
}

#[test]
fn node_proxy_on_embedded() {
    node_proxy(&start_with_args(None, None, &NODE_SIDE));
}

#[test]
fn node_proxy_on_etcd() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    node_proxy(&start_with_args(Some(etcd), Some(endpoint), &NODE_SIDE));
}
