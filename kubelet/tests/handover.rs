//! A kubelet that takes over running pods (its server restarted, or another server won the
//! leader election) picks them up where their status left them: nothing restarts, readiness
//! and addresses stay, and new pods get addresses of their own.

mod support;

use serde_json::{json, Value};
use support::{condition, config, create, get, start, wait_for, Harness};

fn ready(p: &Value) -> bool {
    condition(p, "Ready")["status"] == "True"
}

async fn takes_over_running_pods(h: &Harness) {
    let first = start(h, config(1));
    create(h, "web", json!({})).await;
    let before = wait_for(h, "web", "Ready", ready).await;
    first.cancel();
    // Status times have a resolution of a second: a restart would show in startedAt.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;

    let _second = start(h, config(1));
    create(h, "next", json!({})).await;
    let next = wait_for(h, "next", "Ready", ready).await;
    let after = get(h, "web").await.expect("web still exists");
    let container = |p: &Value| p["status"]["containerStatuses"][0].clone();
    assert_eq!(container(&after), container(&before), "nothing restarted");
    assert_eq!(
        condition(&after, "Ready"),
        condition(&before, "Ready"),
        "readiness kept, with its transition time"
    );
    assert_eq!(after["status"]["podIP"], before["status"]["podIP"]);
    assert_ne!(
        next["status"]["podIP"], after["status"]["podIP"],
        "a new pod does not get an address still in use"
    );

    // The new kubelet runs the deletion of a pod it took over (seed 004's final DELETE).
    support::pods(h)
        .delete(
            Some(support::NS),
            "web",
            registry::options::DeleteOptions::default(),
        )
        .await
        .expect("delete");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while get(h, "web").await.is_some() {
        assert!(std::time::Instant::now() < deadline, "web never went away");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

test_support::both_backends!(crate::support::Harness; takes_over_running_pods);
