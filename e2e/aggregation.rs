//! API aggregation through the real binary and kubectl, on both backends, against a real
//! aggregated server on loopback (`support::aggregated_server`, the sample `wardle` group):
//! the server publishes its front-proxy trust in `kube-system/extension-apiserver-
//! authentication`; an APIService with a Service (resolved through its EndpointSlice) becomes
//! Available (`Passed`); `kubectl get flunders` goes through the proxy with the user in the
//! front-proxy headers and the front-proxy client certificate, the client's Authorization
//! header stripped; watches stream; an upgrade is spliced; the caBundle verifies the server;
//! discovery (legacy and aggregated, `kubectl api-resources`) lists the group; a
//! metrics-server registered over the in-process metrics API takes it over. Once the server
//! stops, the APIService turns `FailedDiscoveryCheck`, the group answers 503 `service
//! unavailable`, its discovery is marked `Stale`, and `kubectl api-resources` (as the real
//! kubectl does with a stale group-version) leaves it out and lists the rest. The built-in
//! group-versions have their local APIServices (`Local`).

mod support;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::aggregated_server::{AggregatedServer, FAKE_CPU, GROUP, VERSION};
use support::{output_text, start_embedded_with, start_on_etcd_with, Kubectl, Server};

const APISERVICE: &str = "v1alpha1.wardle.example.com";

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn available(s: &Server) -> Value {
    let api = s.json(&["get", "apiservice", APISERVICE]);
    api["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Available")
        .cloned()
        .unwrap_or(Value::Null)
}

/// The published trust: the requestheader CA and what goes with it.
fn authentication_info(s: &Server) -> Value {
    let cm = s.json(&[
        "get",
        "configmap",
        "extension-apiserver-authentication",
        "-n",
        "kube-system",
    ]);
    let data = &cm["data"];
    assert!(data["client-ca-file"]
        .as_str()
        .unwrap_or_default()
        .contains("BEGIN CERTIFICATE"));
    assert_eq!(
        data["requestheader-allowed-names"],
        "[\"front-proxy-client\"]"
    );
    assert_eq!(
        data["requestheader-username-headers"],
        "[\"X-Remote-User\"]"
    );
    assert_eq!(data["requestheader-group-headers"], "[\"X-Remote-Group\"]");
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        "[\"X-Remote-Extra-\"]"
    );
    data.clone()
}

fn register(s: &Server, backend: &AggregatedServer) {
    s.kubectl(&["create", "namespace", "wardle"]);
    s.with_manifest(
        "create",
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "wardle"},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": backend.port}]}})
        .to_string(),
    );
    s.with_manifest(
        "create",
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "api-1", "namespace": "wardle",
                "labels": {"kubernetes.io/service-name": "api"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": backend.port, "protocol": "TCP"}]})
        .to_string(),
    );
    s.with_manifest(
        "create",
        &json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": APISERVICE},
            "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 1000,
                "versionPriority": 15, "caBundle": backend.ca_bundle,
                "service": {"namespace": "wardle", "name": "api", "port": 443}}})
        .to_string(),
    );
}

/// An upgrade request through the loopback port: 101 from the backend, then an echo.
fn upgraded_echo(s: &Server) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let path = format!("/apis/{GROUP}/{VERSION}/namespaces/wardle/flunders/alpha/echo");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: echo-test\r\nContent-Length: 0\r\n\r\n"
    )
    .expect("send");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).unwrap_or(0) == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    stream.write_all(b"ping").expect("write");
    let mut echoed = [0u8; 4];
    stream.read_exact(&mut echoed).expect("echo");
    String::from_utf8_lossy(&echoed).into_owned()
}

fn aggregation(s: &Server) {
    // The built-in group-versions are local APIServices, always available.
    let local = s.json(&["get", "apiservice", "v1.apps"]);
    assert_eq!(local["spec"]["service"], Value::Null);
    assert!(
        local["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Available" && c["status"] == "True" && c["reason"] == "Local"),
        "{local}"
    );

    let info = authentication_info(s);
    let ca = info["requestheader-client-ca-file"].as_str().expect("a CA");
    let mut backend = AggregatedServer::start("api.wardle.svc", ca);
    register(s, &backend);
    eventually("the APIService Available", || {
        available(s)["status"] == "True"
    });
    let condition = available(s);
    assert_eq!(condition["reason"], "Passed");
    assert_eq!(condition["message"], "all checks passed");

    // Through the proxy, as the user kubectl authenticates as.
    let out = s.kubectl(&["get", "flunders", "-n", "wardle"]);
    assert!(out.contains("alpha"), "{out}");
    let seen = backend.received(&format!(
        "/apis/{GROUP}/{VERSION}/namespaces/wardle/flunders"
    ));
    let request = seen.last().expect("the list reached the aggregated server");
    assert_eq!(request.client_cn, "front-proxy-client");
    assert_eq!(request.header_values("x-remote-user"), ["system:admin"]);
    let groups = request.header_values("x-remote-group");
    assert!(
        groups.contains(&"system:masters") && groups.contains(&"system:authenticated"),
        "{groups:?}"
    );
    let fl = s.json(&["get", "fl", "beta", "-n", "wardle"]);
    assert_eq!(fl["kind"], "Flunder");
    assert_eq!(fl["metadata"]["name"], "beta");

    // The client's own credentials are not passed on; query and body are.
    let path = format!("/apis/{GROUP}/{VERSION}/namespaces/wardle/flunders?fieldManager=test");
    let created = s.request(
        "POST",
        &path,
        &[
            ("Authorization", "Bearer secret-of-the-client"),
            ("Content-Type", "application/json"),
        ],
        br#"{"kind":"Flunder","metadata":{"name":"posted"}}"#,
    );
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.json()["metadata"]["name"], "posted");
    let posted = backend
        .received(&path)
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("the POST reached the aggregated server");
    assert!(
        posted.header_values("authorization").is_empty(),
        "{posted:?}"
    );
    assert_eq!(posted.header_values("x-remote-user"), ["system:apiserver"]);

    // A watch streams.
    let watched = s.request(
        "GET",
        &format!("/apis/{GROUP}/{VERSION}/namespaces/wardle/flunders?watch=true"),
        &[],
        b"",
    );
    assert_eq!(watched.status, 200);
    let events: Vec<Value> = watched
        .body
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(events.len(), 2, "{}", watched.body);
    assert_eq!(events[1]["object"]["metadata"]["name"], "beta");

    // An upgrade is spliced through.
    assert_eq!(upgraded_echo(s), "ping");

    // The caBundle is what verifies the server: under another CA the proxied request fails.
    let flunders = format!("/apis/{GROUP}/{VERSION}/namespaces/wardle/flunders");
    let set_ca = |bundle: &str| {
        let patch = json!({"spec": {"caBundle": bundle}}).to_string();
        s.kubectl(&[
            "patch",
            "apiservice",
            APISERVICE,
            "--type=merge",
            "-p",
            &patch,
        ]);
    };
    {
        use base64::Engine;
        set_ca(&base64::engine::general_purpose::STANDARD.encode(ca));
    }
    eventually("the unverifiable server refused", || {
        let r = s.get(&flunders);
        r.status == 503 && r.body.contains("x509")
    });
    set_ca(&backend.ca_bundle);
    eventually("the server verified again", || {
        s.get(&flunders).status == 200
    });

    // Discovery: legacy, the group's document, aggregated (kubectl api-resources).
    let groups = s.get("/apis").json();
    assert!(
        groups["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|g| g["name"] == GROUP
                && g["preferredVersion"]["groupVersion"] == format!("{GROUP}/{VERSION}")),
        "{groups}"
    );
    let group = s.get(&format!("/apis/{GROUP}")).json();
    assert_eq!(group["versions"][0]["version"], VERSION);
    let resources = s.kubectl(&["api-resources", "--api-group", GROUP]);
    assert!(
        resources.contains("flunders") && resources.contains(&format!("{GROUP}/{VERSION}")),
        "{resources}"
    );

    // A metrics-server registered over the in-process metrics API takes it over (as its
    // manifest registers it: not verified, insecureSkipTLSVerify).
    let local_top = s.kubectl(&["top", "pods", "-n", "wardle"]);
    assert!(!local_top.contains(FAKE_CPU), "{local_top}");
    s.with_manifest(
        "apply",
        &json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1beta1.metrics.k8s.io"},
            "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                "versionPriority": 100, "insecureSkipTLSVerify": true,
                "service": {"namespace": "wardle", "name": "api", "port": 443}}})
        .to_string(),
    );
    eventually("kubectl top through the metrics-server", || {
        let out = s.kubectl_raw(&["top", "pods", "-n", "wardle"]);
        String::from_utf8_lossy(&out.stdout).contains(FAKE_CPU)
    });
    assert!(!backend
        .received("/apis/metrics.k8s.io/v1beta1/namespaces/wardle/pods")
        .is_empty());
    // Its discovery came from its APIResourceList (it serves no aggregated document for it).
    let resources = s.kubectl(&["api-resources", "--api-group", "metrics.k8s.io"]);
    assert!(resources.contains("PodMetrics"), "{resources}");

    // The server goes away: unavailable in upstream's words, 503 for its group only.
    backend.stop();
    eventually("the APIService unavailable", || {
        available(s)["status"] == "False"
    });
    let condition = available(s);
    assert_eq!(condition["reason"], "FailedDiscoveryCheck");
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "failing or missing response from https://127.0.0.1:{}/apis/{GROUP}/{VERSION}: ",
            backend.port
        )) && message.contains("connection refused"),
        "{message}"
    );
    let refused = s.get(&format!(
        "/apis/{GROUP}/{VERSION}/namespaces/wardle/flunders"
    ));
    assert_eq!(refused.status, 503);
    assert_eq!(refused.body, "service unavailable\n");
    let out = s.kubectl_raw(&["get", "flunders", "-n", "wardle"]);
    assert!(!out.status.success());
    assert!(
        output_text(&out).contains("ServiceUnavailable"),
        "{}",
        output_text(&out)
    );
    // Discovery marks the group-version Stale (upstream's discovery manager), which kubectl
    // (client-go's aggregated discovery) takes as a failed group-version: it is left out and
    // everything else is listed, the command succeeding.
    let doc = s
        .request(
            "GET",
            "/apis",
            &[(
                "Accept",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            )],
            b"",
        )
        .json();
    let wardle = doc["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["metadata"]["name"] == GROUP)
        .expect("the group still listed");
    assert_eq!(wardle["versions"][0]["freshness"], "Stale", "{wardle}");
    let out = s.kubectl_raw(&["api-resources"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        stdout.contains("deployments") && stdout.contains("pods"),
        "{stdout}"
    );
    assert!(!stdout.contains("flunders"), "{stdout}");
    // Legacy discovery of the group-version is proxied, and so unavailable too.
    let out = s.kubectl_raw(&["get", "--raw", &format!("/apis/{GROUP}/{VERSION}")]);
    assert!(!out.status.success());
    assert!(
        output_text(&out).contains("the server is currently unable to handle the request"),
        "{}",
        output_text(&out)
    );
    // Other groups are untouched.
    s.kubectl(&["get", "pods", "-A"]);

    // Once the APIService goes, so does the group.
    s.kubectl(&["delete", "apiservice", APISERVICE]);
    eventually("the group gone from discovery", || {
        !s.get("/apis").body.contains(GROUP)
    });
}

#[test]
fn aggregated_api_servers() {
    aggregation(&start_embedded_with(&["--apiservice-check-period=1s"]));
}

#[test]
fn aggregated_api_servers_on_etcd() {
    aggregation(&start_on_etcd_with(&["--apiservice-check-period=1s"]));
}
