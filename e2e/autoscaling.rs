//! HorizontalPodAutoscalers with the real kubectl on both backends: `kubectl autoscale`, the
//! autoscaler printed as upstream prints it, and one object served as autoscaling/v2 and
//! autoscaling/v1 with nothing lost when a v1 client reads, changes and writes it back.

mod support;

use serde_json::{json, Value};
use support::{start, start_on_etcd, Kubectl, Server};

#[test]
fn autoscalers_with_kubectl() {
    autoscalers(&start());
}

#[test]
fn autoscalers_with_kubectl_on_etcd() {
    autoscalers(&start_on_etcd());
}

const HPAS: &str = "/apis/autoscaling/{v}/namespaces/default/horizontalpodautoscalers";

fn path(version: &str, name: &str) -> String {
    format!("{}/{name}", HPAS.replace("{v}", version))
}

fn autoscalers(s: &Server) {
    s.kubectl(&["create", "deployment", "web", "--image=nginx"]);
    assert_eq!(
        s.kubectl(&[
            "autoscale",
            "deployment",
            "web",
            "--cpu-percent=50",
            "--min=2",
            "--max=5"
        ])
        .trim(),
        "horizontalpodautoscaler.autoscaling/web autoscaled"
    );
    let table = s.kubectl(&["get", "hpa", "web"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    let row = lines.next().unwrap_or_default();
    assert!(
        row.starts_with("web")
            && row.contains("Deployment/web")
            && row.contains("cpu: <unknown>/50%"),
        "{row}"
    );
    // kubectl autoscale writes through autoscaling/v1; v2 shows no zero currentReplicas.
    assert_eq!(
        s.get(&path("v2", "web")).json()["status"],
        json!({"desiredReplicas": 0})
    );
    let v1 = s.get(&path("v1", "web")).json();
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(v1["spec"]["minReplicas"], 2);
    let v2 = s.get(&path("v2", "web")).json();
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}])
    );

    // A v2-only autoscaler: a Pods metric and a behavior.
    let created = s.send_json(
        "POST",
        &HPAS.replace("{v}", "v2"),
        &json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "queue"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 8,
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "jobs"}, "target": {"type": "AverageValue", "averageValue": "30"}}},
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}},
            },
        }),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let original: Value = created.json();
    assert_eq!(original["status"], json!({"desiredReplicas": 0}));

    // Read as v1, changed and written back as v1: the v2-only parts ride in annotations.
    let mut as_v1 = s.get(&path("v1", "queue")).json();
    assert_eq!(as_v1["spec"]["targetCPUUtilizationPercentage"], 60);
    assert_eq!(
        as_v1["status"],
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
    let annotations = &as_v1["metadata"]["annotations"];
    assert_eq!(
        annotations["autoscaling.alpha.kubernetes.io/metrics"],
        r#"[{"type":"Pods","pods":{"metricName":"jobs","targetAverageValue":"30"}}]"#
    );
    assert!(annotations["autoscaling.alpha.kubernetes.io/behavior"]
        .as_str()
        .is_some_and(|b| b.contains(r#""ScaleDown":{"StabilizationWindowSeconds":120"#)));
    as_v1["spec"]["maxReplicas"] = json!(9);
    let updated = s.send_json("PUT", &path("v1", "queue"), &as_v1);
    assert_eq!(updated.status, 200, "{}", updated.body);
    let after = s.get(&path("v2", "queue")).json();
    assert_eq!(after["spec"]["maxReplicas"], 9);
    assert_eq!(after["spec"]["metrics"], original["spec"]["metrics"]);
    assert_eq!(after["spec"]["behavior"], original["spec"]["behavior"]);
    assert!(after["metadata"].get("annotations").is_none(), "{after}");

    // Both versions list the same objects; kubectl's default (v2) and v1 by name.
    let names = |version: &str| -> Vec<String> {
        s.get(&HPAS.replace("{v}", version)).json()["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| {
                i["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(names("v1"), ["queue", "web"]);
    assert_eq!(names("v2"), ["queue", "web"]);
    // The v1 Table prints what v2 prints (upstream prints the internal object). kubectl drops
    // the version of a short name, so the full resource name asks for v1.
    let v1_table = s.kubectl(&[
        "get",
        "horizontalpodautoscalers.v1.autoscaling",
        "queue",
        "--no-headers",
    ]);
    assert!(
        v1_table.contains("Deployment/web   <unknown>/30, cpu: <unknown>/60%"),
        "{v1_table}"
    );

    // Validation in upstream's words, on v2 paths even for a v1 request.
    let refused = s.send_json(
        "POST",
        &HPAS.replace("{v}", "v1"),
        &json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "bad"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 1, "minReplicas": 3}}),
    );
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        refused.json()["message"],
        "HorizontalPodAutoscaler.autoscaling \"bad\" is invalid: spec.maxReplicas: Invalid value: 1: must be greater than or equal to `minReplicas`"
    );
}
