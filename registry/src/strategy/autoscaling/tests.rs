//! HorizontalPodAutoscalers across versions: v1 ⇄ v2 with nothing lost, v2's defaults, and
//! upstream's validation messages on v2 paths for both versions.

use serde_json::{json, Value};

use super::v1::{to_v1, to_v2, BEHAVIOR_ANNOTATION, METRICS_ANNOTATION};
use super::{set_v2_defaults, HorizontalPodAutoscalerStrategy};
use crate::strategy::Strategy;

fn v2(spec: Value) -> Value {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"}, "spec": spec,
    })
}

fn messages(causes: Vec<crate::error::Cause>) -> Vec<String> {
    causes.iter().map(|c| c.full_message()).collect()
}

#[test]
fn v2_defaults_fill_what_upstream_fills() {
    let mut hpa = v2(
        json!({"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
        "maxReplicas": 5, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}),
    );
    set_v2_defaults(&mut hpa);
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    assert_eq!(
        hpa["spec"]["behavior"]["scaleUp"]["policies"][0],
        json!({"type": "Pods", "value": 4, "periodSeconds": 15})
    );
    assert_eq!(
        hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        60
    );
    assert_eq!(hpa["spec"]["behavior"]["scaleDown"]["selectPolicy"], "Max");
}

#[test]
fn v1_keeps_the_cpu_target_and_carries_the_rest_in_annotations() {
    let mut hpa = v2(json!({
        "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
        "minReplicas": 2, "maxReplicas": 10,
        "metrics": [
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
        ],
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 30, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}},
    }));
    hpa["status"] = json!({"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 70, "averageValue": "140m"}}}
    ], "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]});
    set_v2_defaults(&mut hpa);
    let served = to_v1(&hpa);
    assert_eq!(served["apiVersion"], "autoscaling/v1");
    assert_eq!(served["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(served["status"]["currentCPUUtilizationPercentage"], 70);
    let annotations = &served["metadata"]["annotations"];
    assert_eq!(
        annotations[METRICS_ANNOTATION],
        r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]"#
    );
    assert_eq!(
        annotations[BEHAVIOR_ANNOTATION],
        r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null},"ScaleDown":{"StabilizationWindowSeconds":30,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":60}],"Tolerance":null}}"#
    );
    // And back: the same v2 object (other metrics first, then the CPU one, as upstream
    // rebuilds them).
    let mut back = to_v2(&served);
    set_v2_defaults(&mut back);
    assert_eq!(back["spec"]["metrics"], hpa["spec"]["metrics"]);
    assert_eq!(back["spec"]["behavior"], hpa["spec"]["behavior"]);
    assert_eq!(back["status"]["conditions"], hpa["status"]["conditions"]);
    assert_eq!(
        back["status"]["currentMetrics"],
        hpa["status"]["currentMetrics"]
    );
    assert!(back["metadata"].get("annotations").is_none(), "{back}");
}

#[test]
fn both_versions_are_judged_on_v2_paths() {
    let check = |s: &HorizontalPodAutoscalerStrategy, obj: &Value| messages(s.validate(obj));
    let v2s = HorizontalPodAutoscalerStrategy { v1: false };
    let bad = v2(
        json!({"scaleTargetRef": {"kind": "", "name": "a/b"}, "minReplicas": 0, "maxReplicas": 0,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}}]}),
    );
    assert_eq!(
        check(&v2s, &bad),
        [
            "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
            "spec.maxReplicas: Invalid value: 0: must be greater than 0",
            "spec.scaleTargetRef.kind: Required value",
            "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
            "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
            "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
        ]
    );
    let v1s = HorizontalPodAutoscalerStrategy { v1: true };
    let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3, "targetCPUUtilizationPercentage": 0}});
    assert_eq!(
        check(&v1s, &v1),
        ["spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"]
    );
    let both = v2(
        json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
        "metrics": [{"type": "Pods", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5}}}],
        "behavior": {"scaleUp": {"selectPolicy": "Sometimes", "policies": [{"type": "Pods", "value": 0, "periodSeconds": 2000}]}}}),
    );
    assert_eq!(
        check(&v2s, &both),
        [
            "spec.metrics[0].pods: Required value: must populate information for the given metric source",
            "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Sometimes\": supported values: \"Disabled\", \"Max\", \"Min\"",
            "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
            "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 2000: must be less than or equal to 1800",
        ]
    );
}
