//! The Job controller over a real registry (embedded store and etcd), with the test standing
//! in for the kubelet: pods are driven to Succeeded or Failed through their status.

mod support;

use std::time::Duration;

use controllers::job::JOB_TRACKING_FINALIZER;
use controllers::ttl_after_finished::TtlAfterFinishedController;
use registry::options::WriteOptions;
use registry::patch::PatchType;
use registry::Subresource;
use serde_json::{json, Value};
use support::batch::{
    create, event_reasons, finish_job, get, has_condition, informers, job, list, running_pods,
    set_phase, start_job_controller, true_conditions, wait_for, wait_running,
};
use support::Harness;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

fn start(h: &Harness) -> CancellationToken {
    start_job_controller(h)
}

async fn get_job(h: &Harness, name: &str) -> Value {
    support::batch::get_job(h, NS, name).await
}

async fn patch_job(h: &Harness, name: &str, patch: Value) {
    h.store("batch", "jobs")
        .patch(
            Some(NS),
            name,
            PatchType::Merge,
            patch.to_string().as_bytes(),
            Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .expect("patch job");
}

async fn completions_run_at_most_parallelism_pods(h: &Harness) {
    let stop = start(h);
    let pods = h.store("", "pods");
    create(
        &h.store("batch", "jobs"),
        NS,
        job("work", json!({"completions": 3, "parallelism": 2})),
    )
    .await;
    let mut finished = 0;
    while finished < 3 {
        let running = wait_running(&pods, NS, "work").await;
        assert!(
            running.len() <= 2,
            "at most parallelism pods run: {running:?}"
        );
        for pod in &running {
            let finalizers = &pod["metadata"]["finalizers"];
            assert_eq!(finalizers, &json!([JOB_TRACKING_FINALIZER]));
        }
        set_phase(&pods, &running[0], "Succeeded").await;
        finished += 1;
        // No more pods than the completions left are ever started.
        let left = 3 - finished;
        let now_running = running_pods(&pods, NS, "work").await.len();
        assert!(
            now_running <= left.min(2),
            "{now_running} running, {left} left"
        );
    }
    wait_for("the job to complete", || async {
        has_condition(&get_job(h, "work").await, "Complete")
    })
    .await;
    let done = get_job(h, "work").await;
    let status = &done["status"];
    assert_eq!(status["succeeded"], 3);
    assert!(status["active"].is_null(), "{status}");
    assert!(status["completionTime"].is_string() && status["startTime"].is_string());
    assert_eq!(status["uncountedTerminatedPods"], json!({}));
    let types: Vec<String> = true_conditions(&done).into_iter().map(|c| c.0).collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
    // Counted pods lose the tracking finalizer.
    wait_for("finalizers to go", || async {
        list(&pods, NS).await.iter().all(|p| {
            !p["metadata"]["finalizers"]
                .to_string()
                .contains(JOB_TRACKING_FINALIZER)
        })
    })
    .await;
    assert_eq!(
        list(&pods, NS).await.len(),
        3,
        "exactly three pods were made"
    );
    wait_for("events", || async {
        let reasons = event_reasons(h, NS, "work").await;
        reasons.contains(&"Completed".to_string())
            && reasons.contains(&"SuccessfulCreate".to_string())
    })
    .await;
    stop.cancel();
}

async fn failures_past_the_backoff_limit_fail_the_job(h: &Harness) {
    let stop = start(h);
    let pods = h.store("", "pods");
    create(
        &h.store("batch", "jobs"),
        NS,
        job("flaky", json!({"backoffLimit": 1, "parallelism": 1})),
    )
    .await;
    for attempt in 0..2 {
        let running = wait_running(&pods, NS, "flaky").await;
        assert_eq!(running.len(), 1, "attempt {attempt}");
        set_phase(&pods, &running[0], "Failed").await;
    }
    wait_for("the job to fail", || async {
        has_condition(&get_job(h, "flaky").await, "Failed")
    })
    .await;
    let failed = get_job(h, "flaky").await;
    assert_eq!(
        true_conditions(&failed),
        [
            (
                "FailureTarget".to_string(),
                "BackoffLimitExceeded".to_string()
            ),
            ("Failed".to_string(), "BackoffLimitExceeded".to_string()),
        ]
    );
    let condition = &failed["status"]["conditions"][1];
    assert_eq!(
        condition["message"],
        "Job has reached the specified backoff limit"
    );
    assert_eq!(failed["status"]["failed"], 2);
    assert!(running_pods(&pods, NS, "flaky").await.is_empty());
    stop.cancel();
}

async fn suspend_deletes_pods_and_resume_starts_over(h: &Harness) {
    let stop = start(h);
    let pods = h.store("", "pods");
    create(
        &h.store("batch", "jobs"),
        NS,
        job("paused", json!({"completions": 4, "parallelism": 2})),
    )
    .await;
    wait_for("two pods", || async {
        running_pods(&pods, NS, "paused").await.len() == 2
    })
    .await;
    let started = get_job(h, "paused").await["status"]["startTime"].clone();
    patch_job(h, "paused", json!({"spec": {"suspend": true}})).await;
    wait_for("the pods to go and the job to be suspended", || async {
        let job = get_job(h, "paused").await;
        list(&pods, NS).await.is_empty()
            && true_conditions(&job).contains(&("Suspended".into(), "JobSuspended".into()))
            && job["status"]["active"].is_null()
    })
    .await;
    // A second apart, so the reset start time shows.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    patch_job(h, "paused", json!({"spec": {"suspend": false}})).await;
    wait_for("two pods again", || async {
        running_pods(&pods, NS, "paused").await.len() == 2
    })
    .await;
    wait_for("the job to be resumed", || async {
        let job = get_job(h, "paused").await;
        let suspended = job["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Suspended").cloned());
        suspended.is_some_and(|c| c["status"] == "False" && c["reason"] == "JobResumed")
            && job["status"]["startTime"] != started
    })
    .await;
    // Events are written in the background.
    wait_for("the events", || async {
        let reasons = event_reasons(h, NS, "paused").await;
        ["Suspended", "Resumed", "SuccessfulDelete"]
            .iter()
            .all(|r| reasons.contains(&r.to_string()))
    })
    .await;
    stop.cancel();
}

async fn an_active_deadline_fails_the_job(h: &Harness) {
    let stop = start(h);
    create(
        &h.store("batch", "jobs"),
        NS,
        job("slow", json!({"activeDeadlineSeconds": 1})),
    )
    .await;
    wait_for("the deadline to fail the job", || async {
        has_condition(&get_job(h, "slow").await, "Failed")
    })
    .await;
    let failed = get_job(h, "slow").await;
    assert!(true_conditions(&failed).contains(&("Failed".into(), "DeadlineExceeded".into())));
    let pods = h.store("", "pods");
    wait_for("its pod to go", || async {
        list(&pods, NS).await.is_empty()
    })
    .await;
    stop.cancel();
}

async fn a_finished_job_is_deleted_after_its_ttl(h: &Harness) {
    let controller =
        TtlAfterFinishedController::new(&informers(h), Default::default()).expect("ttl controller");
    let stop = CancellationToken::new();
    tokio::spawn(controller.run(stop.clone()));
    let jobs = h.store("batch", "jobs");
    create(
        &jobs,
        NS,
        job("brief", json!({"ttlSecondsAfterFinished": 1})),
    )
    .await;
    create(&jobs, NS, job("kept", json!({}))).await;
    create(
        &jobs,
        NS,
        job("later", json!({"ttlSecondsAfterFinished": 3600})),
    )
    .await;
    for name in ["brief", "kept", "later"] {
        finish_job(&jobs, NS, name, "Complete").await;
    }
    wait_for("the expired job to go", || async {
        get(&jobs, NS, "brief").await.is_none()
    })
    .await;
    assert!(get(&jobs, NS, "kept").await.is_some());
    assert!(get(&jobs, NS, "later").await.is_some());
    stop.cancel();
}

test_support::both_backends!(
    crate::support::Harness, worker_threads = 2;
    completions_run_at_most_parallelism_pods,
    failures_past_the_backoff_limit_fail_the_job,
    suspend_deletes_pods_and_resume_starts_over,
    an_active_deadline_fails_the_job,
    a_finished_job_is_deleted_after_its_ttl,
);
