//! Idle pods cost no task (issue 30): a pod's worker is state stepped from a shared queue, so
//! once pods are Running with nothing left to happen, no step runs, nothing is queued, no
//! pod waits on a timer, and the process runs as many tasks as before they came. Pods with
//! something ahead (a crash-looping container's restart) keep one timer; a grace period is a
//! timer that a shorter second delete brings forward.

mod support;

use std::time::{Duration, Instant};

use kubelet::pod_workers::{PodWorkStats, WORKERS};
use kubelet::Nodes;
use registry::options::DeleteOptions;
use serde_json::{json, Value};
use support::{condition, config, create, get, pods, start_nodes, wait_for, Harness, NS};

fn ready(p: &Value) -> bool {
    condition(p, "Ready")["status"] == "True"
}

/// Creates `count` pods spread over two nodes, some with probes that settle, and waits until
/// every one is Ready.
async fn run_pods(h: &Harness, prefix: &str, count: usize) {
    for i in 0..count {
        let probes = if i % 3 == 0 {
            json!([{"name": "app", "image": "nginx",
                "readinessProbe": {"periodSeconds": 1},
                "livenessProbe": {"periodSeconds": 1},
                "startupProbe": {"periodSeconds": 1}}])
        } else {
            json!([{"name": "app", "image": "nginx"}])
        };
        let node = format!("node-{}", i % 2);
        let extra = json!({"spec": {"nodeName": node, "containers": probes}});
        create(h, &format!("{prefix}-{i}"), extra).await;
    }
    for i in 0..count {
        wait_for(h, &format!("{prefix}-{i}"), "Ready", ready).await;
    }
}

/// Waits until the pod workers hold `pods` pods and nothing else is in flight.
async fn settled(nodes: &Nodes, pods: usize, timers: usize) -> PodWorkStats {
    let want = PodWorkStats {
        pods,
        stepping: 0,
        queued: 0,
        timers,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = nodes.pod_work();
        if now == want {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "never settled: {now:?}, want {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

async fn idle_pods_hold_no_task(h: &Harness) {
    let (_stop, nodes) = start_nodes(h, config(2));
    run_pods(h, "few", 4).await;
    settled(&nodes, 4, 0).await;
    // Whatever else runs (watches, informers, heartbeats) settles too.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = alive_tasks();

    let more = 60;
    run_pods(h, "many", more).await;
    settled(&nodes, 4 + more, 0).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = alive_tasks();
    println!(
        "alive tasks with 4 idle pods: {before}; with {}: {after}",
        4 + more
    );
    // A task per pod would add `more`; the steps' tasks are a fixed set started with the
    // nodes (the slack is for transient tasks of the harness: none were seen).
    assert!(
        after < before + 10,
        "{more} more idle pods took {} more tasks ({before} -> {after}; {WORKERS} step tasks)",
        after.saturating_sub(before)
    );

    // A pod with a restart ahead keeps exactly one timer, and only while it has.
    create(
        h,
        "crash",
        json!({"metadata": {"annotations": {"sim.kube.io/behavior":
        r#"{"app": {"runSeconds": 0, "exitCode": 2}}"#}}}),
    )
    .await;
    wait_for(h, "crash", "CrashLoopBackOff", |p| {
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    })
    .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while nodes.pod_work().timers != 1 {
        assert!(
            Instant::now() < deadline,
            "the crash-looping pod's timer: {:?}",
            nodes.pod_work()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Deleted pods' workers go once the informer sees them gone.
    for i in 0..4 {
        pods(h)
            .delete(Some(NS), &format!("few-{i}"), DeleteOptions::default())
            .await
            .expect("delete");
    }
    for i in 0..4 {
        let deadline = Instant::now() + Duration::from_secs(20);
        while get(h, &format!("few-{i}")).await.is_some() {
            assert!(Instant::now() < deadline, "few-{i} never went away");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    settled(&nodes, more + 1, 1).await;
}

async fn a_shorter_second_delete_ends_the_grace_period_sooner(h: &Harness) {
    let (_stop, nodes) = start_nodes(h, config(1));
    create(
        h,
        "stubborn",
        json!({"metadata": {"annotations": {"sim.kube.io/behavior":
        r#"{"*": {"ignoreSigterm": true}}"#}}, "spec": {"terminationGracePeriodSeconds": 60}}),
    )
    .await;
    wait_for(h, "stubborn", "Ready", ready).await;
    pods(h)
        .delete(Some(NS), "stubborn", DeleteOptions::default())
        .await
        .expect("delete");
    // Waiting out the grace period is a timer, not a task.
    let deadline = Instant::now() + Duration::from_secs(20);
    while nodes.pod_work()
        != (PodWorkStats {
            pods: 1,
            stepping: 0,
            queued: 0,
            timers: 1,
        })
    {
        assert!(Instant::now() < deadline, "{:?}", nodes.pod_work());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let shortened = Instant::now();
    pods(h)
        .delete(
            Some(NS),
            "stubborn",
            DeleteOptions {
                grace_period_seconds: Some(2),
                ..Default::default()
            },
        )
        .await
        .expect("second delete");
    while get(h, "stubborn").await.is_some() {
        assert!(
            shortened.elapsed() < Duration::from_secs(15),
            "the shorter grace period was not heeded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    settled(&nodes, 0, 0).await;
}

test_support::both_backends!(crate::support::Harness; idle_pods_hold_no_task,
    a_shorter_second_delete_ends_the_grace_period_sooner);
