//! Pod failure policies over a real registry (embedded store and etcd): FailJob by exit code,
//! Ignore by a pod condition, Count, and FailIndex. The test plays the kubelet, writing
//! terminated containers' exit codes and pod conditions into the pods' status.

mod support;

use serde_json::{json, Value};
use support::batch::{
    create, exited, get_job, has_condition, job, running_pods, set_status, start_job_controller,
    true_conditions, wait_for, wait_running,
};
use support::Harness;

const NS: &str = "default";

fn with_policy(name: &str, rules: Value, extra: Value) -> Value {
    let mut spec = json!({"podFailurePolicy": {"rules": rules}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    job(name, spec)
}

/// Fails the pod with its container `work` exiting with `code`, plus any `conditions`.
async fn fail_pod(h: &Harness, pod: &Value, code: i64, conditions: Value) {
    let status = json!({
        "phase": "Failed",
        "containerStatuses": [exited("work", code)],
        "conditions": conditions,
    });
    set_status(&h.store("", "pods"), pod, status).await;
}

async fn a_fail_job_rule_fails_the_job(h: &Harness) {
    let stop = start_job_controller(h);
    let pods = h.store("", "pods");
    let rules = json!([
        {"action": "FailJob", "onExitCodes": {"containerName": "work", "operator": "In", "values": [42]}},
    ]);
    create(
        &h.store("batch", "jobs"),
        NS,
        with_policy("fatal", rules, json!({"parallelism": 2, "completions": 2})),
    )
    .await;
    wait_for("two pods", || async {
        running_pods(&pods, NS, "fatal").await.len() == 2
    })
    .await;
    let running = running_pods(&pods, NS, "fatal").await;
    fail_pod(h, &running[0], 42, json!([])).await;
    wait_for("the job to fail", || async {
        has_condition(&get_job(h, NS, "fatal").await, "Failed")
    })
    .await;
    let failed = get_job(h, NS, "fatal").await;
    assert_eq!(
        true_conditions(&failed),
        [
            ("FailureTarget".to_string(), "PodFailurePolicy".to_string()),
            ("Failed".to_string(), "PodFailurePolicy".to_string()),
        ]
    );
    let name = running[0]["metadata"]["name"].as_str().unwrap_or_default();
    let expected = format!(
        "Container work for pod {NS}/{name} failed with exit code 42 matching FailJob rule at index 0"
    );
    assert_eq!(failed["status"]["conditions"][1]["message"], expected);
    // The other pod is terminated and, as the Job failed, counted as failed.
    assert!(running_pods(&pods, NS, "fatal").await.is_empty());
    assert_eq!(failed["status"]["failed"], 2);
    stop.cancel();
}

async fn ignored_failures_do_not_count(h: &Harness) {
    let stop = start_job_controller(h);
    let pods = h.store("", "pods");
    let rules = json!([
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1]}},
    ]);
    create(
        &h.store("batch", "jobs"),
        NS,
        with_policy("tolerant", rules, json!({"backoffLimit": 0})),
    )
    .await;
    // Disrupted twice: ignored, so the Job goes on with a replacement each time.
    for _ in 0..2 {
        let running = wait_running(&pods, NS, "tolerant").await;
        let disrupted = json!([{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]);
        fail_pod(h, &running[0], 137, disrupted).await;
    }
    let running = wait_running(&pods, NS, "tolerant").await;
    let job = get_job(h, NS, "tolerant").await;
    assert!(!has_condition(&job, "Failed"), "{}", job["status"]);
    assert!(job["status"]["failed"].is_null(), "{}", job["status"]);
    // A counted failure past backoffLimit 0 fails it.
    fail_pod(h, &running[0], 3, json!([])).await;
    wait_for("the job to fail", || async {
        has_condition(&get_job(h, NS, "tolerant").await, "Failed")
    })
    .await;
    let failed = get_job(h, NS, "tolerant").await;
    assert!(true_conditions(&failed).contains(&("Failed".into(), "BackoffLimitExceeded".into())));
    assert_eq!(failed["status"]["failed"], 1);
    stop.cancel();
}

async fn a_fail_index_rule_fails_only_that_index(h: &Harness) {
    let stop = start_job_controller(h);
    let pods = h.store("", "pods");
    let rules = json!([{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [7]}}]);
    let extra = json!({
        "completionMode": "Indexed", "completions": 2, "parallelism": 2,
        "backoffLimitPerIndex": 3,
    });
    create(
        &h.store("batch", "jobs"),
        NS,
        with_policy("partial", rules, extra),
    )
    .await;
    wait_for("two pods", || async {
        running_pods(&pods, NS, "partial").await.len() == 2
    })
    .await;
    let running = running_pods(&pods, NS, "partial").await;
    let index = |p: &Value| p["metadata"]["labels"][controllers::job::COMPLETION_INDEX].clone();
    let (zero, one): (Vec<Value>, Vec<Value>) = running.into_iter().partition(|p| index(p) == "0");
    fail_pod(h, &zero[0], 7, json!([])).await;
    wait_for("index 0 to fail", || async {
        get_job(h, NS, "partial").await["status"]["failedIndexes"] == "0"
    })
    .await;
    // No retry for index 0 despite backoffLimitPerIndex.
    let left = running_pods(&pods, NS, "partial").await;
    assert_eq!(left.len(), 1);
    assert_eq!(index(&left[0]), "1");
    set_status(&pods, &one[0], json!({"phase": "Succeeded"})).await;
    wait_for("the job to fail", || async {
        has_condition(&get_job(h, NS, "partial").await, "Failed")
    })
    .await;
    let failed = get_job(h, NS, "partial").await;
    assert!(true_conditions(&failed).contains(&("Failed".into(), "FailedIndexes".into())));
    assert_eq!(failed["status"]["completedIndexes"], "1");
    stop.cancel();
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    a_fail_job_rule_fails_the_job,
    ignored_failures_do_not_count,
    a_fail_index_rule_fails_only_that_index,
);
