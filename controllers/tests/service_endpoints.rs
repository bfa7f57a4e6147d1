//! The EndpointSlice and Endpoints controllers over a real registry (embedded store and
//! etcd). There is no kubelet: tests give pods their IPs and Ready condition through the
//! status subresource.

mod support;

use controllers::endpoints::{EndpointsController, EndpointsControllerConfig};
use controllers::endpointslice::{EndpointSliceController, EndpointSliceControllerConfig};
use registry::options::{DeleteOptions, ListOptions};
use registry::{object, Store};
use serde_json::{json, Value};
use support::batch::{create, get, informers, set_status, wait_for};
use support::Harness;
use tokio_util::sync::CancellationToken;

const NS: &str = "net";

test_support::both_backends!(crate::Harness; slices_and_endpoints_follow_ready_pods);

fn start(h: &Harness) -> CancellationToken {
    let factory = informers(h);
    let stop = CancellationToken::new();
    let slices = EndpointSliceController::new(&factory, EndpointSliceControllerConfig::default())
        .expect("endpointslice controller");
    let endpoints = EndpointsController::new(&factory, EndpointsControllerConfig::default())
        .expect("endpoints controller");
    tokio::spawn(slices.run(stop.clone()));
    tokio::spawn(endpoints.run(stop.clone()));
    stop
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "web"}},
           "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx",
                    "ports": [{"name": "http", "containerPort": 8080}]}]}})
}

async fn run(pods: &Store, pod: &Value, ip: &str, ready: bool) {
    let status = if ready { "True" } else { "False" };
    set_status(
        pods,
        pod,
        json!({"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
               "conditions": [{"type": "Ready", "status": status,
                               "lastTransitionTime": object::now()}]}),
    )
    .await;
}

async fn slices(h: &Harness) -> Vec<Value> {
    let list = h
        .store("discovery.k8s.io", "endpointslices")
        .list(Some(NS), &ListOptions::default())
        .await
        .expect("list slices");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// (address, ready) of every endpoint of the Service's slices, sorted.
fn endpoints_of(slices: &[Value]) -> Vec<(String, bool)> {
    let mut all: Vec<(String, bool)> = slices
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .map(|e| {
            let ip = e["addresses"][0].as_str().unwrap_or_default().to_string();
            (ip, e["conditions"]["ready"] == true)
        })
        .collect();
    all.sort();
    all
}

fn ips(list: &Value) -> Vec<&str> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["ip"].as_str())
        .collect()
}

async fn slices_and_endpoints_follow_ready_pods(h: &Harness) {
    h.namespace(NS).await;
    let stop = start(h);
    let pods = h.store("", "pods");
    let svc = create(
        &h.store("", "services"),
        NS,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"selector": {"app": "web"},
                        "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
    )
    .await;
    let mut made = Vec::new();
    for i in 0..3 {
        made.push(create(&pods, NS, pod(&format!("web-{i}"))).await);
    }
    // A pod without an address is no endpoint yet; a placeholder slice stands meanwhile.
    wait_for("a placeholder slice", || async {
        slices(h).await.len() == 1
    })
    .await;
    for (i, p) in made.iter().enumerate() {
        run(&pods, p, &format!("10.244.0.{}", i + 10), i < 2).await;
    }
    let expected = vec![
        ("10.244.0.10".to_string(), true),
        ("10.244.0.11".to_string(), true),
        ("10.244.0.12".to_string(), false),
    ];
    wait_for("slice endpoints of the pods", || async {
        endpoints_of(&slices(h).await) == expected
    })
    .await;
    let all = slices(h).await;
    assert_eq!(all.len(), 1, "{all:?}");
    let slice = &all[0];
    let first_name = object::name(slice).to_string();
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    );
    assert_eq!(
        slice["metadata"]["labels"]["kubernetes.io/service-name"],
        "web"
    );
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(
        slice["metadata"]["ownerReferences"][0]["uid"],
        svc["metadata"]["uid"]
    );
    let endpoint = slice["endpoints"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["addresses"][0] == "10.244.0.10"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(endpoint["nodeName"], "node-1");
    assert_eq!(endpoint["targetRef"]["name"], "web-0");
    assert_eq!(
        endpoint["conditions"],
        json!({"ready": true, "serving": true, "terminating": false})
    );

    let endpoints = h.store("", "endpoints");
    wait_for("endpoints of the ready pods", || async {
        let Some(ep) = get(&endpoints, NS, "web").await else {
            return false;
        };
        ips(&ep["subsets"][0]["addresses"]) == ["10.244.0.10", "10.244.0.11"]
            && ips(&ep["subsets"][0]["notReadyAddresses"]) == ["10.244.0.12"]
    })
    .await;
    let ep = get(&endpoints, NS, "web").await.unwrap_or_default();
    assert_eq!(
        ep["subsets"][0]["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    );

    // Readiness changes and a deleted pod: the same slice is updated in place.
    run(&pods, &made[2], "10.244.0.12", true).await;
    // A pod on a node is deleted gracefully: while it terminates it serves but is not ready,
    // and it leaves the Endpoints.
    pods.delete(Some(NS), "web-0", DeleteOptions::default())
        .await
        .expect("delete pod");
    wait_for("a terminating endpoint", || async {
        slices(h).await.iter().any(|s| {
            s["endpoints"].as_array().into_iter().flatten().any(|e| {
                e["conditions"] == json!({"ready": false, "serving": true, "terminating": true})
            })
        })
    })
    .await;
    wait_for("the terminating pod out of the endpoints", || async {
        let Some(ep) = get(&endpoints, NS, "web").await else {
            return false;
        };
        ips(&ep["subsets"][0]["addresses"]) == ["10.244.0.11", "10.244.0.12"]
    })
    .await;
    let gone = DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    pods.delete(Some(NS), "web-0", gone)
        .await
        .expect("delete pod");
    let expected = vec![
        ("10.244.0.11".to_string(), true),
        ("10.244.0.12".to_string(), true),
    ];
    wait_for("slice endpoints after the changes", || async {
        endpoints_of(&slices(h).await) == expected
    })
    .await;
    let all = slices(h).await;
    assert_eq!(all.len(), 1);
    assert_eq!(object::name(&all[0]), first_name);
    wait_for("endpoints after the changes", || async {
        let Some(ep) = get(&endpoints, NS, "web").await else {
            return false;
        };
        ips(&ep["subsets"][0]["addresses"]) == ["10.244.0.11", "10.244.0.12"]
            && ep["subsets"][0].get("notReadyAddresses").is_none()
    })
    .await;

    // The Service goes: its Endpoints go with it.
    h.store("", "services")
        .delete(Some(NS), "web", DeleteOptions::default())
        .await
        .expect("delete service");
    wait_for("endpoints removed", || async {
        get(&endpoints, NS, "web").await.is_none()
    })
    .await;
    stop.cancel();
}
