//! Services' cluster IPs and node ports (upstream's service REST storage with its allocators)
//! on both backends: random and requested values, 422s when taken, release on delete and on
//! type changes, headless and ExternalName Services, dry runs, and allocations that outlive
//! the server holding them.

mod support;

use std::net::Ipv4Addr;
use std::sync::Arc;

use registry::options::DeleteOptions;
use registry::patch::PatchType;
use registry::service::ServiceCidr;
use registry::{Catalogue, Registry, Store, Subresource};
use serde_json::{json, Value};
use storage::CacherConfig;
use support::workloads::{has, NS};
use support::{dry_run, write, Harness};

test_support::both_backends!(crate::Harness;
    random_cluster_ips_come_from_the_range,
    requested_cluster_ips_are_honoured_or_refused,
    node_ports_are_honoured_or_refused,
    deletes_release,
    type_changes_allocate_and_release,
    headless_and_external_name_take_nothing,
    dry_runs_allocate_nothing,
    cluster_ips_do_not_change_and_updates_keep_them,
    allocations_outlive_the_server,
    names_are_dns_1035_labels
);

fn service(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("ports").is_none() && spec["type"] != "ExternalName" {
        spec["ports"] = json!([{"port": 80}]);
    }
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

async fn create(store: &Store, name: &str, spec: Value) -> Value {
    store
        .create(NS, service(name, spec), &write())
        .await
        .expect("create service")
}

fn ip(svc: &Value) -> &str {
    svc["spec"]["clusterIP"].as_str().unwrap_or_default()
}

fn node_port(svc: &Value, i: usize) -> i64 {
    svc["spec"]["ports"][i]["nodePort"]
        .as_i64()
        .unwrap_or_default()
}

async fn delete(store: &Store, name: &str) {
    store
        .delete(NS, name, DeleteOptions::default())
        .await
        .expect("delete service");
}

async fn patch(store: &Store, name: &str, body: Value) -> Value {
    store
        .patch(
            NS,
            name,
            PatchType::Merge,
            body.to_string().as_bytes(),
            Subresource::Main,
            &write(),
        )
        .await
        .expect("patch service")
}

async fn random_cluster_ips_come_from_the_range(h: &Harness) {
    let store = h.store("", "services");
    let range: ServiceCidr = "10.96.0.0/12".parse().expect("range");
    let mut seen = Vec::new();
    for i in 0..5 {
        let svc = create(&store, &format!("web-{i}"), json!({})).await;
        let addr: Ipv4Addr = ip(&svc).parse().expect("an address");
        // Random draws stay above the static band while it has room.
        assert!(range.offset(addr).is_some_and(|o| o >= 256), "{addr}");
        assert_eq!(svc["spec"]["clusterIPs"], json!([ip(&svc)]));
        assert!(!seen.contains(&addr));
        seen.push(addr);
    }
}

async fn requested_cluster_ips_are_honoured_or_refused(h: &Harness) {
    let store = h.store("", "services");
    let svc = create(&store, "dns", json!({"clusterIP": "10.96.0.10"})).await;
    assert_eq!(svc["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    let err = store
        .create(
            NS,
            service("dns2", json!({"clusterIPs": ["10.96.0.10"]})),
            &write(),
        )
        .await
        .expect_err("taken");
    has(
        &err,
        "spec.clusterIPs",
        "Invalid value: []string{\"10.96.0.10\"}: failed to allocate IP 10.96.0.10: provided IP is already allocated",
    );
    let err = store
        .create(
            NS,
            service("far", json!({"clusterIP": "10.0.0.1"})),
            &write(),
        )
        .await
        .expect_err("out of range");
    has(
        &err,
        "spec.clusterIPs",
        "Invalid value: []string{\"10.0.0.1\"}: failed to allocate IP 10.0.0.1: the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12",
    );
}

async fn node_ports_are_honoured_or_refused(h: &Harness) {
    let store = h.store("", "services");
    let svc = create(
        &store,
        "np",
        json!({"type": "NodePort", "ports": [
            {"name": "a", "port": 80, "nodePort": 30080},
            {"name": "b", "port": 443},
            {"name": "c", "port": 443, "protocol": "UDP"}]}),
    )
    .await;
    assert_eq!(node_port(&svc, 0), 30080);
    assert!((30000..=32767).contains(&node_port(&svc, 1)));
    // TCP and UDP of one port share a node port.
    assert_eq!(node_port(&svc, 1), node_port(&svc, 2));
    let err = store
        .create(
            NS,
            service(
                "np2",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
            ),
            &write(),
        )
        .await
        .expect_err("taken");
    has(
        &err,
        "spec.ports[0].nodePort",
        "Invalid value: 30080: provided port is already allocated",
    );
    let err = store
        .create(
            NS,
            service(
                "np3",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}),
            ),
            &write(),
        )
        .await
        .expect_err("out of range");
    has(
        &err,
        "spec.ports[0].nodePort",
        "Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767",
    );
    // The refused create gave back the cluster IP it had drawn: nothing leaks.
    let err = store
        .create(
            NS,
            service("np4", json!({"clusterIP": "10.96.0.20", "type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]})),
            &write(),
        )
        .await
        .expect_err("taken");
    assert_eq!(err.code(), 422);
    create(&store, "np5", json!({"clusterIP": "10.96.0.20"})).await;
}

async fn deletes_release(h: &Harness) {
    let store = h.store("", "services");
    let spec = json!({"clusterIP": "10.96.0.30", "type": "NodePort", "ports": [{"port": 80, "nodePort": 30090}]});
    create(&store, "a", spec.clone()).await;
    delete(&store, "a").await;
    let again = create(&store, "b", spec).await;
    assert_eq!((ip(&again), node_port(&again, 0)), ("10.96.0.30", 30090));
}

async fn type_changes_allocate_and_release(h: &Harness) {
    let store = h.store("", "services");
    create(&store, "t", json!({})).await;
    let np = patch(&store, "t", json!({"spec": {"type": "NodePort"}})).await;
    let port = node_port(&np, 0);
    assert!((30000..=32767).contains(&port), "{np}");
    let back = patch(&store, "t", json!({"spec": {"type": "ClusterIP"}})).await;
    assert_eq!(back["spec"]["ports"][0].get("nodePort"), None, "{back}");
    // The released port is free for another Service.
    let other = create(
        &store,
        "u",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": port}]}),
    )
    .await;
    assert_eq!(node_port(&other, 0), port);
    // To ExternalName and back: the address goes, and another comes.
    let before = ip(&np).to_string();
    let ext = patch(
        &store,
        "t",
        json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
    )
    .await;
    assert_eq!(ext["spec"].get("clusterIP"), None, "{ext}");
    create(&store, "v", json!({"clusterIP": before})).await;
    let again = patch(
        &store,
        "t",
        json!({"spec": {"type": "ClusterIP", "externalName": null}}),
    )
    .await;
    assert!(!ip(&again).is_empty() && ip(&again) != before, "{again}");
}

async fn headless_and_external_name_take_nothing(h: &Harness) {
    let store = h.store("", "services");
    let headless = create(&store, "h", json!({"clusterIP": "None"})).await;
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    let ext = create(
        &store,
        "e",
        json!({"type": "ExternalName", "externalName": "example.com"}),
    )
    .await;
    assert_eq!(ext["spec"].get("clusterIP"), None);
    assert_eq!(ext["spec"].get("clusterIPs"), None);
    delete(&store, "h").await;
    delete(&store, "e").await;
}

async fn dry_runs_allocate_nothing(h: &Harness) {
    let store = h.store("", "services");
    let spec = json!({"clusterIP": "10.96.0.40", "type": "NodePort", "ports": [{"port": 80, "nodePort": 30100}]});
    let dry = store
        .create(NS, service("d", spec.clone()), &dry_run())
        .await
        .expect("dry run");
    assert_eq!((ip(&dry), node_port(&dry, 0)), ("10.96.0.40", 30100));
    let random = store
        .create(NS, service("d", json!({"type": "NodePort"})), &dry_run())
        .await
        .expect("dry run");
    assert!(!ip(&random).is_empty() && node_port(&random, 0) != 0);
    create(&store, "d", spec.clone()).await;
    let err = store
        .create(NS, service("d2", spec), &dry_run())
        .await
        .expect_err("a dry run is refused as the create would be");
    assert_eq!(err.code(), 422);
}

async fn cluster_ips_do_not_change_and_updates_keep_them(h: &Harness) {
    let store = h.store("", "services");
    let svc = create(&store, "k", json!({"type": "NodePort"})).await;
    // A PUT of the manifest without the allocated values keeps them.
    let (kept, _) = store
        .update(
            NS,
            "k",
            service("k", json!({"type": "NodePort"})),
            Subresource::Main,
            &write(),
        )
        .await
        .expect("update");
    assert_eq!(
        (ip(&kept), node_port(&kept, 0)),
        (ip(&svc), node_port(&svc, 0))
    );
    let err = store
        .update(
            NS,
            "k",
            service("k", json!({"clusterIP": "10.96.0.50", "type": "NodePort"})),
            Subresource::Main,
            &write(),
        )
        .await
        .expect_err("immutable");
    has(
        &err,
        "spec.clusterIPs[0]",
        "Invalid value: \"10.96.0.50\": may not change once set",
    );
    // The refused update took nothing.
    create(&store, "k2", json!({"clusterIP": "10.96.0.50"})).await;
}

async fn allocations_outlive_the_server(h: &Harness) {
    let store = h.store("", "services");
    create(&store, "kept", json!({"clusterIP": "10.96.0.60", "type": "NodePort", "ports": [{"port": 80, "nodePort": 30200}]})).await;
    // Another server over the same storage (or this one restarted) knows nothing in memory.
    let root = storage::KvStore::new(h.registry.root().backend().clone(), "/registry");
    let other = Registry::new(
        root,
        Arc::new(Catalogue::builtin()),
        CacherConfig::default(),
    );
    let other_store = other.store("", "v1", "services").expect("services");
    let err = other_store
        .create(
            NS,
            service("copy", json!({"clusterIP": "10.96.0.60"})),
            &write(),
        )
        .await
        .expect_err("taken before the restart");
    assert_eq!(err.code(), 422);
    let err = other_store
        .create(
            NS,
            service(
                "copy",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30200}]}),
            ),
            &write(),
        )
        .await
        .expect_err("taken before the restart");
    assert_eq!(err.code(), 422);
    delete(&other_store, "kept").await;
    let again = create(&store, "again", json!({"clusterIP": "10.96.0.60", "type": "NodePort", "ports": [{"port": 80, "nodePort": 30200}]})).await;
    assert_eq!(ip(&again), "10.96.0.60");
}

/// Upstream validates Service names as DNS-1035 labels (at most 63 characters, starting with
/// a letter), not as the DNS subdomains most kinds take.
async fn names_are_dns_1035_labels(h: &Harness) {
    let store = h.store("", "services");
    let long = "a".repeat(66);
    let err = store
        .create(NS, service(&long, json!({})), &write())
        .await
        .expect_err("too long");
    has(
        &err,
        "metadata.name",
        &format!("Invalid value: \"{long}\": must be no more than 63 characters"),
    );
    let err = store
        .create(NS, service("1web", json!({})), &write())
        .await
        .expect_err("starts with a digit");
    has(
        &err,
        "metadata.name",
        "Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    );
    create(&store, "web-1", json!({})).await;
}
