//! The repair of Services' range allocations over a real registry (embedded store and etcd):
//! a value the record holds but no Service uses is freed on the third repair that sees it
//! leaked; a Service's value missing from the record is marked again, with upstream's events.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use controllers::service_repair::ServiceRepairController;
use registry::service::REPAIRS_BEFORE_LEAK_CLEANUP;
use serde_json::{json, Value};
use storage::{Interface, ReadRevision, Update, UpdateOptions};
use support::batch::{create, event_reasons, informers, wait_for};
use support::Harness;
use tokio_util::sync::CancellationToken;

const NS: &str = "repair";
const IPS: &str = "/ranges/serviceips";
const PORTS: &str = "/ranges/servicenodeports";

test_support::both_backends!(crate::Harness;
    leaks_are_freed_after_three_repairs_and_missing_values_marked,
    the_repair_loop_reports_on_the_services);

async fn allocated(h: &Harness, key: &str) -> BTreeSet<String> {
    let kv = h
        .registry
        .root()
        .get(key, ReadRevision::Latest)
        .await
        .expect("range record");
    let record: Value = serde_json::from_slice(&kv.value).unwrap_or_default();
    record["allocated"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

/// Adds `leaked` to the record and takes `lost` out of it, as a crash between a write and
/// its allocation (or a bug) would leave it.
async fn tamper(h: &Harness, key: &str, leaked: &str, lost: &str) {
    h.registry
        .root()
        .guaranteed_update(key, UpdateOptions::default(), &mut |current| {
            let mut record: Value = current
                .and_then(|kv| serde_json::from_slice(&kv.value).ok())
                .unwrap_or_else(|| json!({"allocated": []}));
            let mut set: BTreeSet<String> =
                serde_json::from_value(record["allocated"].clone()).unwrap_or_default();
            set.insert(leaked.to_string());
            set.remove(lost);
            record["allocated"] = json!(set);
            Ok(Update::Write(Bytes::from(record.to_string())))
        })
        .await
        .expect("tamper with the range record");
}

async fn node_port_service(h: &Harness) -> (String, String) {
    let svc = create(
        &h.store("", "services"),
        NS,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"type": "NodePort", "selector": {"app": "web"},
                        "ports": [{"port": 80}]}}),
    )
    .await;
    let ip = svc["spec"]["clusterIP"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let port = svc["spec"]["ports"][0]["nodePort"]
        .as_i64()
        .unwrap_or_default()
        .to_string();
    (ip, port)
}

async fn leaks_are_freed_after_three_repairs_and_missing_values_marked(h: &Harness) {
    h.namespace(NS).await;
    let (ip, port) = node_port_service(h).await;
    assert!(allocated(h, IPS).await.contains(&ip));
    tamper(h, IPS, "10.96.200.200", &ip).await;
    tamper(h, PORTS, "32000", &port).await;

    let repair = h.registry.service_repair();
    let services = h.store("", "services");
    for round in 1..=REPAIRS_BEFORE_LEAK_CLEANUP {
        let problems = repair.run_once(&services).await.expect("repair");
        let (ips, ports) = (allocated(h, IPS).await, allocated(h, PORTS).await);
        // The Service's values are marked again at once, and reported the first time only.
        assert!(ips.contains(&ip) && ports.contains(&port), "round {round}");
        let reasons: Vec<&str> = problems.iter().map(|p| p.reason).collect();
        if round == 1 {
            assert_eq!(reasons, ["ClusterIPNotAllocated", "PortNotAllocated"]);
            assert_eq!(
                problems[0].message,
                format!("Cluster IP [IPv4]:{ip} is not allocated; repairing")
            );
            assert_eq!(problems[0].service["metadata"]["name"], "web");
        } else {
            assert!(reasons.is_empty(), "round {round}: {reasons:?}");
        }
        // The leaked values stay until the last round.
        let freed = round == REPAIRS_BEFORE_LEAK_CLEANUP;
        assert_eq!(
            !ips.contains("10.96.200.200"),
            freed,
            "round {round}: {ips:?}"
        );
        assert_eq!(!ports.contains("32000"), freed, "round {round}: {ports:?}");
    }
}

async fn the_repair_loop_reports_on_the_services(h: &Harness) {
    h.namespace(NS).await;
    let (ip, port) = node_port_service(h).await;
    tamper(h, IPS, "10.96.200.201", &ip).await;
    tamper(h, PORTS, "32001", &port).await;
    // A Service stored without going through the allocator (as a restored backup or another
    // server's bug might leave it): web's cluster IP again, and a port outside the range.
    let stray = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "zz-stray", "namespace": NS, "uid": "3a0f7a52-stray",
                     "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"type": "NodePort", "clusterIP": ip, "clusterIPs": [ip],
                 "ports": [{"port": 82, "protocol": "TCP", "nodePort": 29999}]}});
    h.registry
        .root()
        .create(
            &format!("/services/specs/{NS}/zz-stray"),
            Bytes::from(stray.to_string()),
        )
        .await
        .expect("store the stray service");

    let stop = CancellationToken::new();
    let controller = ServiceRepairController::new(&informers(h), Duration::from_millis(50))
        .expect("repair controller");
    tokio::spawn(controller.run(stop.clone()));
    wait_for("the leaks freed", || async {
        let (ips, ports) = (allocated(h, IPS).await, allocated(h, PORTS).await);
        !ips.contains("10.96.200.201")
            && !ports.contains("32001")
            && ips.contains(&ip)
            && ports.contains(&port)
    })
    .await;
    wait_for("the repair events", || async {
        let reasons = event_reasons(h, NS, "web").await;
        reasons.contains(&"ClusterIPNotAllocated".to_string())
            && reasons.contains(&"PortNotAllocated".to_string())
    })
    .await;
    let events = support::batch::list(&h.store("", "events"), NS).await;
    let by = |reason: &str| {
        events
            .iter()
            .find(|e| e["reason"] == reason)
            .map(|e| e["source"]["component"].clone())
            .unwrap_or_default()
    };
    assert_eq!(by("ClusterIPNotAllocated"), "ipallocator-repair-controller");
    assert_eq!(by("PortNotAllocated"), "portallocator-repair-controller");
    wait_for("the stray service's events", || async {
        let reasons = event_reasons(h, NS, "zz-stray").await;
        reasons.contains(&"ClusterIPAlreadyAllocated".to_string())
            && reasons.contains(&"PortOutOfRange".to_string())
    })
    .await;
    stop.cancel();
}
