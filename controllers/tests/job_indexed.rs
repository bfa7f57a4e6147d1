//! Indexed Jobs over a real registry (embedded store and etcd): one pod per completion index,
//! `status.completedIndexes`, per-index backoff with `status.failedIndexes`, and success
//! policies. The test plays the kubelet through the pods' status.

mod support;

use controllers::job::{COMPLETION_INDEX, INDEX_FAILURE_COUNT};
use serde_json::{json, Value};
use support::batch::{
    create, get_job, has_condition, job, list, running_pods, set_phase, start_job_controller,
    true_conditions, wait_for, WAIT,
};
use support::Harness;

const NS: &str = "default";

fn index_of(pod: &Value) -> i64 {
    pod["metadata"]["annotations"][COMPLETION_INDEX]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1)
}

/// Waits for the running pod of `index` of the Job `job`.
async fn pod_of_index(h: &Harness, job: &str, index: i64) -> Value {
    let pods = h.store("", "pods");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let running = running_pods(&pods, NS, job).await;
        if let Some(pod) = running.into_iter().find(|p| index_of(p) == index) {
            return pod;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for index {index} of {job}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn indexed(name: &str, extra: Value) -> Value {
    let mut spec = json!({"completionMode": "Indexed"});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    job(name, spec)
}

async fn indexed_pods_complete_every_index(h: &Harness) {
    let stop = start_job_controller(h);
    let pods = h.store("", "pods");
    create(
        &h.store("batch", "jobs"),
        NS,
        indexed("idx", json!({"completions": 4, "parallelism": 2})),
    )
    .await;
    wait_for("two pods", || async {
        running_pods(&pods, NS, "idx").await.len() == 2
    })
    .await;
    // The lowest indexes go first.
    let mut indexes: Vec<i64> = running_pods(&pods, NS, "idx")
        .await
        .iter()
        .map(index_of)
        .collect();
    indexes.sort_unstable();
    assert_eq!(indexes, [0, 1]);
    let first = pod_of_index(h, "idx", 1).await;
    let name = first["metadata"]["name"].as_str().unwrap_or_default();
    assert!(name.starts_with("idx-1-"), "{name}");
    assert_eq!(first["metadata"]["labels"][COMPLETION_INDEX], "1");
    assert_eq!(first["spec"]["hostname"], "idx-1");
    let env = &first["spec"]["containers"][0]["env"][0];
    assert_eq!(env["name"], "JOB_COMPLETION_INDEX");
    assert_eq!(
        env["valueFrom"]["fieldRef"]["fieldPath"],
        format!("metadata.annotations['{COMPLETION_INDEX}']")
    );

    set_phase(&pods, &first, "Succeeded").await;
    wait_for("index 1 recorded", || async {
        let status = get_job(h, NS, "idx").await["status"].clone();
        status["completedIndexes"] == "1" && status["succeeded"] == 1
    })
    .await;
    // Index 2 takes the free slot; 1 is not run again.
    let second = pod_of_index(h, "idx", 2).await;
    set_phase(&pods, &second, "Succeeded").await;
    let third = pod_of_index(h, "idx", 3).await;
    set_phase(&pods, &third, "Succeeded").await;
    wait_for("completedIndexes 1-3", || async {
        get_job(h, NS, "idx").await["status"]["completedIndexes"] == "1-3"
    })
    .await;
    let zero = pod_of_index(h, "idx", 0).await;
    set_phase(&pods, &zero, "Succeeded").await;
    wait_for("the job to complete", || async {
        has_condition(&get_job(h, NS, "idx").await, "Complete")
    })
    .await;
    let done = get_job(h, NS, "idx").await;
    assert_eq!(done["status"]["completedIndexes"], "0-3");
    assert_eq!(done["status"]["succeeded"], 4);
    assert_eq!(list(&pods, NS).await.len(), 4, "one pod per index");
    stop.cancel();
}

async fn a_duplicate_index_pod_is_removed(h: &Harness) {
    let stop = start_job_controller(h);
    let pods = h.store("", "pods");
    create(
        &h.store("batch", "jobs"),
        NS,
        indexed("dup", json!({"completions": 2, "parallelism": 2})),
    )
    .await;
    let original = pod_of_index(h, "dup", 0).await;
    // A second pod for index 0, as a racing controller could leave.
    let mut copy = original.clone();
    let meta = copy["metadata"].as_object_mut().expect("metadata");
    for field in ["name", "uid", "resourceVersion", "creationTimestamp"] {
        meta.remove(field);
    }
    meta.insert("generateName".into(), json!("dup-0-"));
    copy.as_object_mut().map(|o| o.remove("status"));
    create(&pods, NS, copy).await;
    wait_for("one pod per index", || async {
        let running = running_pods(&pods, NS, "dup").await;
        let zeros = running.iter().filter(|p| index_of(p) == 0).count();
        zeros == 1 && running.len() == 2
    })
    .await;
    stop.cancel();
}

async fn backoff_limit_per_index_fails_the_index(h: &Harness) {
    let stop = start_job_controller(h);
    let pods = h.store("", "pods");
    create(
        &h.store("batch", "jobs"),
        NS,
        indexed(
            "per-index",
            json!({"completions": 3, "parallelism": 3, "backoffLimitPerIndex": 1}),
        ),
    )
    .await;
    let first = pod_of_index(h, "per-index", 1).await;
    assert_eq!(first["metadata"]["annotations"][INDEX_FAILURE_COUNT], "0");
    set_phase(&pods, &first, "Failed").await;
    let retry = pod_of_index(h, "per-index", 1).await;
    assert_eq!(retry["metadata"]["annotations"][INDEX_FAILURE_COUNT], "1");
    set_phase(&pods, &retry, "Failed").await;
    wait_for("index 1 to fail", || async {
        get_job(h, NS, "per-index").await["status"]["failedIndexes"] == "1"
    })
    .await;
    // The Job fails only once the other indexes have finished.
    assert!(!has_condition(&get_job(h, NS, "per-index").await, "Failed"));
    for index in [0, 2] {
        let pod = pod_of_index(h, "per-index", index).await;
        set_phase(&pods, &pod, "Succeeded").await;
    }
    wait_for("the job to fail", || async {
        has_condition(&get_job(h, NS, "per-index").await, "Failed")
    })
    .await;
    let failed = get_job(h, NS, "per-index").await;
    assert!(true_conditions(&failed).contains(&("Failed".into(), "FailedIndexes".into())));
    assert_eq!(failed["status"]["completedIndexes"], "0,2");
    assert_eq!(failed["status"]["failedIndexes"], "1");
    assert_eq!(failed["status"]["failed"], 2);
    stop.cancel();
}

async fn max_failed_indexes_ends_the_job_early(h: &Harness) {
    let stop = start_job_controller(h);
    let pods = h.store("", "pods");
    create(
        &h.store("batch", "jobs"),
        NS,
        indexed(
            "capped",
            json!({
                "completions": 4, "parallelism": 4,
                "backoffLimitPerIndex": 0, "maxFailedIndexes": 1,
            }),
        ),
    )
    .await;
    for index in [0, 3] {
        let pod = pod_of_index(h, "capped", index).await;
        set_phase(&pods, &pod, "Failed").await;
    }
    wait_for("the job to fail", || async {
        has_condition(&get_job(h, NS, "capped").await, "Failed")
    })
    .await;
    let failed = get_job(h, NS, "capped").await;
    assert!(
        true_conditions(&failed).contains(&("Failed".into(), "MaxFailedIndexesExceeded".into()))
    );
    // The pods terminated for the failure may count as failed too, as upstream's.
    let failed_indexes = failed["status"]["failedIndexes"]
        .as_str()
        .unwrap_or_default();
    assert!(matches!(failed_indexes, "0,3" | "0-3"), "{failed_indexes}");
    wait_for("the other pods to go", || async {
        running_pods(&pods, NS, "capped").await.is_empty()
    })
    .await;
    stop.cancel();
}

async fn a_success_policy_completes_early(h: &Harness) {
    let stop = start_job_controller(h);
    let pods = h.store("", "pods");
    create(
        &h.store("batch", "jobs"),
        NS,
        indexed(
            "leader",
            json!({
                "completions": 3, "parallelism": 3,
                "successPolicy": {"rules": [{"succeededIndexes": "0", "succeededCount": 1}]},
            }),
        ),
    )
    .await;
    for index in [1, 2] {
        pod_of_index(h, "leader", index).await;
    }
    let leader = pod_of_index(h, "leader", 0).await;
    set_phase(&pods, &leader, "Succeeded").await;
    wait_for("the job to complete", || async {
        has_condition(&get_job(h, NS, "leader").await, "Complete")
    })
    .await;
    let done = get_job(h, NS, "leader").await;
    assert_eq!(
        true_conditions(&done),
        [
            (
                "SuccessCriteriaMet".to_string(),
                "SuccessPolicy".to_string()
            ),
            ("Complete".to_string(), "SuccessPolicy".to_string()),
        ]
    );
    assert_eq!(
        done["status"]["conditions"][1]["message"],
        "Matched rules at index 0"
    );
    assert_eq!(done["status"]["completedIndexes"], "0");
    // The other indexes' pods are terminated, and not counted as failed.
    assert!(running_pods(&pods, NS, "leader").await.is_empty());
    assert!(done["status"]["failed"].is_null(), "{}", done["status"]);
    stop.cancel();
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    indexed_pods_complete_every_index,
    a_duplicate_index_pod_is_removed,
    backoff_limit_per_index_fails_the_index,
    max_failed_indexes_ends_the_job_early,
    a_success_policy_completes_early,
);
