//! The resource metrics API and the horizontal pod autoscaler on it, with the real binary and
//! kubectl on both backends: `metrics.k8s.io/v1beta1` is registered as a local APIService and
//! listed by discovery; NodeMetrics and PodMetrics carry the simulated usage (requests by
//! default, `kwok.x-k8s.io/usage-cpu` and `-memory` when scripted), with metrics-server's
//! window and Table; `kubectl top nodes|pods` prints them; an autoscaling/v2 autoscaler on
//! 50% CPU utilization scales its Deployment up once the usage is scripted high, with
//! upstream's conditions, status and event.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};
use test_support::wait_until;

const FLAGS: [&str; 1] = ["--horizontal-pod-autoscaler-sync-period=1s"];

fn deployment(cpu_usage: &str) -> String {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "metrics"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"},
                    "annotations": {"kwok.x-k8s.io/usage-cpu": cpu_usage}},
                "spec": {"containers": [{"name": "app", "image": "nginx",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}})
    .to_string()
}

/// A raw GET through kubectl, as JSON.
fn raw(s: &Server, path: &str) -> Value {
    serde_json::from_str(&s.kubectl(&["get", "--raw", path])).unwrap_or_default()
}

fn running_pods(s: &Server) -> Vec<Value> {
    s.json(&["get", "pods", "-n", "metrics", "-l", "app=web"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null()
        })
        .collect()
}

fn metrics_api(s: &Server) {
    // Registered as a local APIService, and discovered.
    wait_until("the metrics APIService", Duration::from_secs(20), || {
        s.kubectl_raw(&["get", "apiservice", "v1beta1.metrics.k8s.io"])
            .status
            .success()
    });
    let api = s.json(&["get", "apiservice", "v1beta1.metrics.k8s.io"]);
    assert_eq!(api["spec"]["service"], Value::Null);
    assert_eq!(api["spec"]["groupPriorityMinimum"], 100);
    let resources = s.kubectl(&["api-resources", "--api-group", "metrics.k8s.io"]);
    assert!(
        resources.contains("nodes") && resources.contains("PodMetrics"),
        "{resources}"
    );

    s.kubectl(&["create", "namespace", "metrics"]);
    s.with_manifest("create", &deployment("20m"));
    wait_until("the pod running", Duration::from_secs(30), || {
        running_pods(s).len() == 1
    });
    let pod = running_pods(s)[0]["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // The raw documents, as metrics-server writes them.
    let list = raw(s, "/apis/metrics.k8s.io/v1beta1/namespaces/metrics/pods");
    assert_eq!(list["kind"], "PodMetricsList");
    let item = &list["items"][0];
    assert_eq!(item["metadata"]["name"], pod.as_str());
    assert_eq!(item["window"], "15s");
    assert_eq!(
        item["containers"][0],
        json!({"name": "app", "usage": {"cpu": "20m", "memory": "64Mi"}})
    );
    let nodes = raw(s, "/apis/metrics.k8s.io/v1beta1/nodes");
    assert_eq!(nodes["kind"], "NodeMetricsList");
    let node = nodes["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(nodes["items"][0]["usage"]["cpu"], "20m");
    let missing = s.kubectl_raw(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/nowhere"]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("NotFound"));

    // kubectl top and kubectl get read them.
    let top = s.kubectl(&["top", "nodes"]);
    let row = top
        .lines()
        .find(|l| l.starts_with(&node))
        .unwrap_or_else(|| panic!("{top}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((cells[1], cells[3]), ("20m", "64Mi"), "{top}");
    let top = s.kubectl(&["top", "pods", "-n", "metrics", "-l", "app=web"]);
    let cells: Vec<&str> = top
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(cells, [pod.as_str(), "20m", "64Mi"], "{top}");
    let top = s.kubectl(&["top", "pods", "-n", "metrics", "--containers"]);
    assert!(
        top.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == [pod.as_str(), "app", "20m", "64Mi"]),
        "{top}"
    );
    let table = s.kubectl(&["get", "podmetrics", "-n", "metrics"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "CPU", "MEMORY", "WINDOW"], "{table}");

    // The autoscaler: 20m of 100m is under 50%; scripted to 200m it scales up.
    s.with_manifest(
        "create",
        &json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "metrics"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50}}}]}})
        .to_string(),
    );
    let hpa = || s.json(&["get", "hpa", "web", "-n", "metrics"]);
    let condition = |hpa: &Value, kind: &str| -> Value {
        hpa["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .cloned()
            .unwrap_or(Value::Null)
    };
    wait_until("the utilization measured", Duration::from_secs(40), || {
        hpa()["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 20
    });
    let now = hpa();
    assert_eq!(
        condition(&now, "ScalingActive")["reason"],
        "ValidMetricFound"
    );
    assert_eq!(
        condition(&now, "ScalingActive")["message"],
        "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"
    );
    assert_eq!(now["status"]["desiredReplicas"], 1);

    s.kubectl(&[
        "patch",
        "deployment",
        "web",
        "-n",
        "metrics",
        "--type=merge",
        "-p",
        r#"{"spec":{"template":{"metadata":{"annotations":{"kwok.x-k8s.io/usage-cpu":"200m"}}}}}"#,
    ]);
    wait_until("the deployment scaled up", Duration::from_secs(90), || {
        s.json(&["get", "deployment", "web", "-n", "metrics"])["spec"]["replicas"]
            .as_i64()
            .unwrap_or(0)
            > 1
    });
    let scaled = hpa();
    assert!(
        scaled["status"]["desiredReplicas"].as_i64().unwrap_or(0) > 1,
        "{scaled}"
    );
    assert!(scaled["status"]["lastScaleTime"].is_string(), "{scaled}");
    let events = s.kubectl(&[
        "get",
        "events",
        "-n",
        "metrics",
        "--field-selector",
        "involvedObject.kind=HorizontalPodAutoscaler",
    ]);
    assert!(
        events.contains("SuccessfulRescale")
            && events
                .contains("reason: cpu resource utilization (percentage of request) above target"),
        "{events}"
    );
}

#[test]
fn metrics_api_and_autoscaling() {
    metrics_api(&start_embedded_with(&FLAGS));
}

#[test]
fn metrics_api_and_autoscaling_on_etcd() {
    metrics_api(&start_on_etcd_with(&FLAGS));
}
