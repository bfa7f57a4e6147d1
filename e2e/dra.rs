//! Dynamic resource allocation through the real binary and kubectl, on both backends: a node
//! whose simulated driver publishes two devices (`--node-devices 2`), a DeviceClass and a
//! ResourceClaimTemplate selecting them by CEL, pods whose claims the resource claim
//! controller makes from the template and the scheduler allocates (each its own device), a
//! third pod that waits with upstream's message until a device is freed by a pod's deletion.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};
use test_support::wait_until;

const LONG: Duration = Duration::from_secs(60);
const DEVICES: [&str; 5] = ["--nodes", "1", "--scheduler", "--node-devices", "2"];

const CLASS_AND_TEMPLATE: &str = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.sim.kube.io}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.sim.kube.io"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.sim.kube.io
          selectors:
          - cel: {expression: 'device.attributes["gpu.sim.kube.io"].model == "sim-gpu"'}
"#;

fn pod(name: &str) -> String {
    format!(
        r#"{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "{name}"}},
            "spec": {{"terminationGracePeriodSeconds": 1,
                     "resourceClaims": [{{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}}],
                     "containers": [{{"name": "c", "image": "nginx",
                                     "resources": {{"claims": [{{"name": "gpu"}}]}}}}]}}}}"#
    )
}

fn running(s: &Server, name: &str) -> bool {
    s.json(&["get", "pod", name])["status"]["phase"] == "Running"
}

/// The claim made for the pod, and the device it got.
fn claim_of(s: &Server, pod: &str) -> (Value, String) {
    let p = s.json(&["get", "pod", pod]);
    let name = p["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(name.starts_with(&format!("{pod}-gpu-")), "{p}");
    let claim = s.json(&["get", "resourceclaim", &name]);
    let device = claim["status"]["allocation"]["devices"]["results"][0]["device"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (claim, device)
}

fn allocates(s: &Server) {
    wait_until("the node's devices published", LONG, || {
        s.kubectl(&["get", "resourceslices"])
            .contains("gpu.sim.kube.io")
    });
    let slices = s.kubectl(&["get", "resourceslices"]);
    assert!(slices.starts_with("NAME"), "{slices}");
    assert!(slices.contains("node-0"), "{slices}");
    s.with_manifest("apply", CLASS_AND_TEMPLATE);

    for name in ["a", "b"] {
        s.with_manifest("create", &pod(name));
    }
    wait_until("a and b running", LONG, || {
        running(s, "a") && running(s, "b")
    });
    let (claim_a, device_a) = claim_of(s, "a");
    let (_, device_b) = claim_of(s, "b");
    assert!(device_a.starts_with("gpu-") && device_b.starts_with("gpu-"));
    assert_ne!(device_a, device_b, "each claim has its own device");
    let result = &claim_a["status"]["allocation"]["devices"]["results"][0];
    assert_eq!(result["driver"], "gpu.sim.kube.io", "{claim_a}");
    assert_eq!(result["pool"], "node-0", "{claim_a}");
    assert_eq!(result["request"], "gpu", "{claim_a}");
    assert_eq!(
        claim_a["status"]["reservedFor"][0]["name"], "a",
        "{claim_a}"
    );
    assert_eq!(claim_a["metadata"]["ownerReferences"][0]["name"], "a");
    assert_eq!(
        claim_a["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"],
        "gpu"
    );
    let table = s.kubectl(&["get", "resourceclaims"]);
    assert!(table.contains("allocated,reserved"), "{table}");

    // No third device: c waits, in the scheduler's words.
    s.with_manifest("create", &pod("c"));
    wait_until("c unschedulable", LONG, || {
        s.json(&["get", "pod", "c"])["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "PodScheduled"
                        && c["message"]
                            == "0/1 nodes are available: 1 cannot allocate all claims. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
                })
            })
    });

    // a goes, its claim with it, and c gets the device.
    let claim_name = claim_a["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    s.kubectl(&["delete", "pod", "a"]);
    wait_until("a's claim deleted", LONG, || {
        !s.kubectl_raw(&["get", "resourceclaim", &claim_name])
            .status
            .success()
    });
    wait_until("c running", LONG, || running(s, "c"));
    let (_, device_c) = claim_of(s, "c");
    assert_eq!(device_c, device_a, "c took the device a freed");
}

#[test]
fn claims_are_allocated_from_published_devices() {
    allocates(&start_embedded_with(&DEVICES));
}

#[test]
fn claims_are_allocated_from_published_devices_on_etcd() {
    allocates(&start_on_etcd_with(&DEVICES));
}
