//! Kubelets over a real registry (embedded store and etcd): pods bound to a node run with
//! every status field the kubelet writes, Jobs' pods complete, crashing containers back off,
//! probes delay readiness, and deletion follows seed 004 to the final DELETE.

mod support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use registry::options::{DeleteOptions, ListOptions};
use registry::Store;
use registry::WatchEventType;
use serde_json::json;
use support::{condition, config, create, get, pods, start, wait_for, Harness, NS};

async fn runs_pods_to_ready(h: &Harness) {
    let _stop = start(h, config(2));
    create(h, "web", json!({})).await;
    let pod = wait_for(h, "web", "Ready", |p| {
        condition(p, "Ready")["status"] == "True"
    })
    .await;
    let s = &pod["status"];
    assert_eq!(s["phase"], "Running");
    for c in [
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "Ready",
    ] {
        assert_eq!(condition(&pod, c)["status"], "True", "{c}");
        assert!(condition(&pod, c)["lastTransitionTime"].is_string(), "{c}");
    }
    let ip: std::net::Ipv4Addr = s["podIP"].as_str().unwrap().parse().unwrap();
    assert!(ip.octets()[..3] == [10, 244, 0], "{ip} in node-0's podCIDR");
    assert_eq!(s["podIPs"][0]["ip"], s["podIP"]);
    assert_eq!(s["hostIP"], "127.1.0.1");
    assert_eq!(s["hostIPs"][0]["ip"], "127.1.0.1");
    let c = &s["containerStatuses"][0];
    assert!(c["containerID"].as_str().unwrap().starts_with("sim://"));
    assert!(c["imageID"].as_str().unwrap().starts_with("nginx@sha256:"));
    assert_eq!(
        (
            c["ready"].clone(),
            c["started"].clone(),
            c["restartCount"].clone()
        ),
        (json!(true), json!(true), json!(0))
    );
    assert!(c["state"]["running"]["startedAt"].is_string());
    assert!(s["startTime"].is_string());

    // Unique addresses within the node's range.
    for i in 0..4 {
        create(h, &format!("more-{i}"), json!({})).await;
    }
    let mut ips = vec![ip.to_string()];
    for i in 0..4 {
        let p = wait_for(h, &format!("more-{i}"), "an IP", |p| {
            p["status"]["podIP"].is_string()
        })
        .await;
        ips.push(p["status"]["podIP"].as_str().unwrap().to_string());
    }
    let unique: std::collections::HashSet<_> = ips.iter().collect();
    assert_eq!(unique.len(), ips.len(), "{ips:?}");

    // Nodes and leases.
    let deadline = Instant::now() + Duration::from_secs(10);
    let node = loop {
        let node = h
            .store("", "nodes")
            .get(None, "node-1", &ListOptions::default())
            .await
            .ok();
        let ready = node
            .as_ref()
            .and_then(|n| n["status"]["conditions"].as_array())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            });
        if let Some(node) = node.filter(|_| ready) {
            break node;
        }
        assert!(Instant::now() < deadline, "node-1 Ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(node["spec"]["podCIDR"], "10.244.1.0/24");
    assert_eq!(node["status"]["nodeInfo"]["operatingSystem"], "linux");
    let leases = h.store("coordination.k8s.io", "leases");
    let lease = |leases: std::sync::Arc<Store>| async move {
        leases
            .get(Some("kube-node-lease"), "node-0", &ListOptions::default())
            .await
            .ok()
    };
    let first = loop {
        if let Some(l) = lease(leases.clone()).await {
            break l["spec"]["renewTime"].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    tokio::time::sleep(Duration::from_millis(800)).await;
    let later = lease(leases.clone()).await.expect("lease")["spec"]["renewTime"].clone();
    assert_ne!(first, later, "the lease is renewed");
}

async fn job_pod_succeeds(h: &Harness) {
    let _stop = start(h, config(1));
    create(
        h,
        "job-x",
        json!({"metadata": {"ownerReferences": [{"apiVersion": "batch/v1",
        "kind": "Job", "name": "j", "uid": "u-1", "controller": true}]},
        "spec": {"restartPolicy": "Never"}}),
    )
    .await;
    let pod = wait_for(h, "job-x", "Succeeded", |p| {
        p["status"]["phase"] == "Succeeded"
    })
    .await;
    let t = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(
        (t["exitCode"].clone(), t["reason"].clone()),
        (json!(0), json!("Completed"))
    );
    assert_eq!(condition(&pod, "Ready")["reason"], "PodCompleted");
    assert_eq!(
        condition(&pod, "PodReadyToStartContainers")["status"],
        "False"
    );
}

async fn crash_loop_backs_off(h: &Harness) {
    let _stop = start(h, config(1));
    create(
        h,
        "crash",
        json!({"metadata": {"annotations": {"sim.kube.io/behavior":
        r#"{"app": {"runSeconds": 0, "exitCode": 2}}"#}}}),
    )
    .await;
    let pod = wait_for(h, "crash", "CrashLoopBackOff", |p| {
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    })
    .await;
    let c = &pod["status"]["containerStatuses"][0];
    assert!(
        c["state"]["waiting"]["message"]
            .as_str()
            .unwrap()
            .starts_with("back-off 1s"),
        "{c}"
    );
    assert_eq!(c["lastState"]["terminated"]["exitCode"], 2);
    wait_for(h, "crash", "a longer back-off", |p| {
        p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("back-off 2s"))
    })
    .await;
    assert_eq!(get(h, "crash").await.unwrap()["status"]["phase"], "Running");
}

async fn readiness_probe_delays_ready(h: &Harness) {
    let _stop = start(h, config(1));
    let created = Instant::now();
    create(
        h,
        "probed",
        json!({"spec": {"containers": [{"name": "app", "image": "nginx",
        "readinessProbe": {"initialDelaySeconds": 2, "periodSeconds": 1}}]}}),
    )
    .await;
    let running = wait_for(h, "probed", "Running", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    assert_eq!(condition(&running, "Ready")["status"], "False");
    wait_for(h, "probed", "Ready", |p| {
        condition(p, "Ready")["status"] == "True"
    })
    .await;
    assert!(created.elapsed() >= Duration::from_secs(2));
}

async fn delete(h: &Harness, name: &str) {
    pods(h)
        .delete(Some(NS), name, DeleteOptions::default())
        .await
        .expect("delete");
}

async fn deletion_follows_seed_004(h: &Harness) {
    let _stop = start(h, config(1));
    create(h, "quick", json!({})).await;
    create(
        h,
        "stubborn",
        json!({"metadata": {"annotations": {"sim.kube.io/behavior":
        r#"{"*": {"ignoreSigterm": true}}"#}}, "spec": {"terminationGracePeriodSeconds": 3}}),
    )
    .await;
    for n in ["quick", "stubborn"] {
        wait_for(h, n, "Ready", |p| condition(p, "Ready")["status"] == "True").await;
    }
    let mut watch = pods(h)
        .watch(
            Some(NS),
            None,
            &ListOptions {
                resource_version: Some(object_rv(h).await),
                ..Default::default()
            },
        )
        .await
        .expect("watch");
    let begun = Instant::now();
    delete(h, "quick").await;
    delete(h, "stubborn").await;
    let mut deleted = std::collections::HashMap::new();
    while deleted.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(20), watch.next())
            .await
            .expect("event")
            .expect("open");
        if ev.kind == WatchEventType::Deleted {
            let name = ev.object["metadata"]["name"].as_str().unwrap().to_string();
            deleted.insert(name, (begun.elapsed(), ev.object.clone()));
        }
    }
    let (quick_took, quick) = &deleted["quick"];
    assert!(*quick_took < Duration::from_secs(2), "{quick_took:?}");
    let t = &quick["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(t["exitCode"], 0, "{quick:#}");
    assert_eq!(quick["status"]["phase"], "Succeeded");
    let (stubborn_took, stubborn) = &deleted["stubborn"];
    assert!(
        *stubborn_took >= Duration::from_secs(3),
        "{stubborn_took:?}"
    );
    assert_eq!(
        stubborn["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        137
    );
    assert_eq!(stubborn["status"]["phase"], "Failed");
}

async fn object_rv(h: &Harness) -> String {
    let list = pods(h)
        .list(Some(NS), &ListOptions::default())
        .await
        .expect("list");
    list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

test_support::both_backends!(crate::support::Harness; runs_pods_to_ready, job_pod_succeeds,
    crash_loop_backs_off, readiness_probe_delays_ready, deletion_follows_seed_004);
