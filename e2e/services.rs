//! Service networking through the real binary with the real kubectl, on the embedded store and
//! on etcd: cluster IPs from the service range, node ports, the `kubernetes` Service, and
//! EndpointSlices / Endpoints of the ready pods (the default node's kubelet gives each pod an IP
//! from its podCIDR).

mod support;

use std::time::Duration;

use support::{start, start_on_etcd, Kubectl, Server};
use test_support::wait_until;

const WAIT: Duration = Duration::from_secs(60);

fn jsonpath(s: &Server, args: &[&str], path: &str) -> String {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    let output = format!("jsonpath={path}");
    all.extend_from_slice(&["-o", &output]);
    s.kubectl(&all)
}

fn in_service_range(ip: &str) -> bool {
    let octets: Vec<u8> = ip.split('.').filter_map(|o| o.parse().ok()).collect();
    octets.len() == 4 && octets[0] == 10 && (96..112).contains(&octets[1])
}

fn services(s: &Server) {
    // The server's own Service: the first address of the range, 443 to the server's port.
    wait_until("the kubernetes service", WAIT, || {
        s.kubectl_raw(&["get", "svc", "kubernetes"])
            .status
            .success()
    });
    assert_eq!(
        jsonpath(s, &["svc", "kubernetes"], "{.spec.clusterIP}"),
        "10.96.0.1"
    );
    assert_eq!(
        jsonpath(s, &["svc", "kubernetes"], "{.spec.ports[0].port}"),
        "443"
    );
    wait_until("the kubernetes endpoints", WAIT, || {
        s.kubectl_raw(&["get", "endpointslice", "kubernetes"])
            .status
            .success()
    });
    assert_eq!(
        jsonpath(
            s,
            &["endpoints", "kubernetes"],
            "{.subsets[0].ports[0].port}"
        ),
        s.secure_port.to_string()
    );

    // A Deployment exposed: a ClusterIP from the range, slices of its ready pods' IPs.
    s.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
        "--port=8080",
    ]);
    s.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    s.kubectl(&[
        "expose",
        "deployment",
        "web",
        "--port=80",
        "--target-port=8080",
    ]);
    let ip = jsonpath(s, &["svc", "web"], "{.spec.clusterIP}");
    assert!(in_service_range(&ip), "{ip}");
    let table = s.kubectl(&["get", "svc", "web"]);
    assert!(table.contains(&ip) && table.contains("80/TCP"), "{table}");
    let pod_ips = || {
        let mut ips: Vec<String> =
            jsonpath(s, &["pods", "-l", "app=web"], "{.items[*].status.podIP}")
                .split_whitespace()
                .map(str::to_string)
                .collect();
        ips.sort();
        ips
    };
    let mut slice_ips = Vec::new();
    wait_until("an EndpointSlice of the three ready pods", WAIT, || {
        let text = jsonpath(
            s,
            &["endpointslices", "-l", "kubernetes.io/service-name=web"],
            "{.items[*].endpoints[*].addresses[0]}",
        );
        slice_ips = text.split_whitespace().map(str::to_string).collect();
        slice_ips.sort();
        slice_ips.len() == 3 && slice_ips == pod_ips()
    });
    let table = s.kubectl(&[
        "get",
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=web",
    ]);
    assert!(table.contains("IPv4") && table.contains("8080"), "{table}");
    assert!(
        slice_ips.iter().all(|ip| table.contains(ip.as_str())) || table.contains("more"),
        "{table}"
    );
    wait_until("Endpoints of the three ready pods", WAIT, || {
        jsonpath(s, &["endpoints", "web"], "{.subsets[0].addresses[*].ip}")
            .split_whitespace()
            .count()
            == 3
    });

    // kubectl create service: requested addresses and node ports, refused when taken.
    s.kubectl(&[
        "create",
        "service",
        "clusterip",
        "dns",
        "--tcp=53:53",
        "--clusterip=10.96.0.10",
    ]);
    assert_eq!(
        jsonpath(s, &["svc", "dns"], "{.spec.clusterIP}"),
        "10.96.0.10"
    );
    let out = s.kubectl_raw(&[
        "create",
        "service",
        "clusterip",
        "dns2",
        "--tcp=53:53",
        "--clusterip=10.96.0.10",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("spec.clusterIPs: Invalid value: []string{\"10.96.0.10\"}: failed to allocate IP 10.96.0.10: provided IP is already allocated"),
        "{err}"
    );
    s.kubectl(&[
        "create",
        "service",
        "nodeport",
        "np",
        "--tcp=80:8080",
        "--node-port=30080",
    ]);
    assert_eq!(
        jsonpath(s, &["svc", "np"], "{.spec.ports[0].nodePort}"),
        "30080"
    );
    assert!(s.kubectl(&["get", "svc", "np"]).contains("80:30080/TCP"));
    let out = s.kubectl_raw(&[
        "create",
        "service",
        "nodeport",
        "np2",
        "--tcp=80:8080",
        "--node-port=30080",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
        ),
        "{err}"
    );
    // Deleting gives the address back.
    s.kubectl(&["delete", "svc", "dns"]);
    s.kubectl(&[
        "create",
        "service",
        "clusterip",
        "dns2",
        "--tcp=53:53",
        "--clusterip=10.96.0.10",
    ]);
}

#[test]
fn services_on_embedded() {
    services(&start());
}

#[test]
fn services_on_etcd() {
    services(&start_on_etcd());
}
