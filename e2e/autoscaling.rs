//! HorizontalPodAutoscalers with the real kubectl on both backends: `kubectl autoscale`, the
//! autoscaler printed as upstream prints it, and one object served as autoscaling/v2 and
//! autoscaling/v1 with nothing lost when a v1 client reads, changes and writes it back.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{start, start_on_etcd, Kubectl, Server};
use test_support::wait_until;

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
    let v1 = s.get(&path("v1", "web")).json();
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(v1["spec"]["minReplicas"], 2);
    // The controller brings the one replica up to minReplicas, then has no metrics to go by
    // (no metrics API is served), and says so as upstream does without metrics-server.
    wait_until("scaled to minReplicas", Duration::from_secs(30), || {
        s.kubectl(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ]) == "2"
    });
    let condition = |kind: &str| -> Value {
        let hpa = s.get(&path("v2", "web")).json();
        hpa["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .cloned()
            .unwrap_or(Value::Null)
    };
    wait_until("metrics judged", Duration::from_secs(40), || {
        condition("ScalingActive")["reason"] == "FailedGetResourceMetric"
    });
    // The pods request no CPU, so no utilization can be computed (upstream's words).
    wait_until(
        "the missing request reported",
        Duration::from_secs(40),
        || {
            condition("ScalingActive")["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container nginx of Pod web-")
        },
    );
    assert_eq!(condition("AbleToScale")["status"], "True");
    let described = s.kubectl(&["describe", "hpa", "web"]);
    assert!(
        described
            .contains("New size: 2; reason: Current number of replicas below Spec.MinReplicas"),
        "{described}"
    );
    let v2 = s.get(&path("v2", "web")).json();
    assert_eq!(v2["status"]["currentReplicas"], 2);
    assert_eq!(v2["status"]["currentMetrics"], json!([{"type": ""}]));
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

    // Read as v1, changed and written back as v1: the v2-only parts ride in annotations. The
    // controller writes the status meanwhile, so the write is retried on a conflict, as
    // clients do.
    let mut written = false;
    for _ in 0..20 {
        let mut as_v1 = s.get(&path("v1", "queue")).json();
        assert_eq!(as_v1["spec"]["targetCPUUtilizationPercentage"], 60);
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
        if updated.status == 409 {
            continue;
        }
        assert_eq!(updated.status, 200, "{}", updated.body);
        written = true;
        break;
    }
    assert!(written, "the v1 update kept conflicting");
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
