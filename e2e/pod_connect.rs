//! Pods' attach, exec, portforward and proxy, and services' proxy, as kube-apiserver
//! answers them for pods on a node whose kubelet cannot be reached (the simulated nodes run
//! no streaming server: their InternalIP 127.1.0.N refuses port 10250), on the embedded
//! store and on etcd, with the real kubectl.
//!
//! Where each expectation comes from (kubernetes/kubernetes):
//! - container and host checks: pkg/registry/core/pod/strategy.go (validateContainer,
//!   streamLocation, PortForwardLocation), in its order: pod, container, node;
//! - `Upgrade request required` and `error dialing backend: <dial error>` (500, no reason):
//!   staging/.../apimachinery/pkg/util/proxy/upgradeaware.go (ServeHTTP, dial), the error
//!   passed through ErrorToAPIStatus;
//! - exec/attach over WebSocket: staging/.../apiserver/pkg/util/proxy/streamtranslator.go
//!   writes NewInternalError of client-go's SPDY dial error (`error sending request: Post
//!   "<url>": <dial error>`, transport/spdy Negotiate) on the error channel;
//! - proxy dial failures: staging/.../apimachinery/pkg/util/proxy/transport.go
//!   (`error trying to reach service: <err>`, 503 ServiceUnavailable);
//! - no endpoints: pkg/registry/core/service/storage (ResourceLocation);
//! - discovery: api/discovery/api__v1.json.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{start_with_args, Kubectl, Server};
use test_support::{wait_until, EtcdServer};

const LONG: Duration = Duration::from_secs(60);
const NODE_SIDE: [&str; 3] = ["--nodes", "1", "--scheduler"];
const KUBELET: &str = "127.1.0.1:10250";
const REFUSED: &str = "dial tcp 127.1.0.1:10250: connect: connection refused";

const TWO_CONTAINERS: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: two
spec:
  initContainers:
  - name: setup
    image: busybox
  containers:
  - name: app
    image: nginx
  - name: sidecar
    image: busybox
"#;

/// Never scheduled: no scheduler is called `nobody`.
const UNBOUND: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: unbound
spec:
  schedulerName: nobody
  containers:
  - name: app
    image: nginx
"#;

/// kubectl's stderr without its own klog diagnostics (`E1127 21:54:05.181913 ...`): its
/// WebSocket client sometimes logs a frame that reaches it before it set up that stream, a
/// race inside kubectl, not part of the server's answer.
fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|line| !is_klog(line))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// A klog line: severity letter, month and day, then a time (`E1127 21:54:05.181913`).
fn is_klog(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 15
        && matches!(b[0], b'I' | b'W' | b'E' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' '
        && b[8] == b':'
        && b[11] == b':'
}

/// The body kube-apiserver writes for a failure Status (compact, a newline).
fn status_body(message: &str, reason: &str, code: u16) -> String {
    let reason = if reason.is_empty() {
        String::new()
    } else {
        format!(r#""reason":"{reason}","#)
    };
    let message = message.replace('"', "\\\"");
    format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{message}",{reason}"code":{code}}}"#
    ) + "\n"
}

fn pod_ip(s: &Server, name: &str) -> String {
    let pod = s.json(&["get", "pod", name]);
    pod["status"]["podIP"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn setup(s: &Server) {
    wait_until("node-0 healthy", LONG, || {
        let out = s.kubectl_raw(&["get", "--raw", "/api/v1/nodes/node-0/proxy/healthz"]);
        out.status.success()
    });
    s.kubectl(&["run", "one", "--image=nginx", "--port=80"]);
    s.with_manifest("apply", TWO_CONTAINERS);
    s.with_manifest("apply", UNBOUND);
    s.kubectl(&[
        "wait",
        "--for=condition=Ready",
        "pod/one",
        "pod/two",
        "--timeout=60s",
    ]);
}

fn kubectl_streams(s: &Server) {
    let exec = s.kubectl_raw(&["exec", "one", "--", "date"]);
    assert!(!exec.status.success());
    assert_eq!(
        stderr(&exec),
        format!(
            "error: Internal error occurred: error sending request: Post \"https://{KUBELET}/exec/default/one/one?command=date&error=1&output=1\": {REFUSED}\n"
        )
    );

    let attach = s.kubectl_raw(&["attach", "one"]);
    assert!(!attach.status.success());
    assert_eq!(
        stderr(&attach),
        // kubectl's own line once the WebSocket is up (kube-apiserver upgrades before it
        // dials the kubelet), then the error channel's Status.
        format!(
            "If you don't see a command prompt, try pressing enter.\nerror: Internal error occurred: error sending request: Post \"https://{KUBELET}/attach/default/one/one?error=1&output=1\": {REFUSED}\n"
        )
    );

    // A container the pod does not have: refused before any upgrade, on the WebSocket
    // attempt and on kubectl's SPDY fallback alike.
    let wrong = s.kubectl_raw(&["exec", "two", "-c", "nope", "--", "date"]);
    assert!(!wrong.status.success());
    assert_eq!(
        stderr(&wrong),
        "Error from server (BadRequest): container nope is not valid for pod two\n"
    );

    let forward = s.kubectl_raw(&["port-forward", "pod/one", "0:80"]);
    assert!(!forward.status.success());
    assert_eq!(
        stderr(&forward),
        format!("error: error upgrading connection: error dialing backend: {REFUSED}\n")
    );
}

fn kubectl_proxies(s: &Server) {
    let ip = pod_ip(s, "one");
    assert!(ip.starts_with("10."), "{ip}");
    let out = s.kubectl_raw(&["get", "--raw", "/api/v1/namespaces/default/pods/one/proxy/"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        format!(
            "Error from server (ServiceUnavailable): error trying to reach service: dial tcp {ip}:80: connect: connection refused\n"
        )
    );

    s.kubectl(&["expose", "pod", "one", "--port=8080", "--target-port=80"]);
    wait_until("endpoints of one", LONG, || {
        let eps = s.json(&["get", "endpoints", "one"]);
        eps["subsets"][0]["addresses"][0]["ip"] == ip.as_str()
    });
    let out = s.kubectl_raw(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/one:8080/proxy/index.html",
    ]);
    assert_eq!(
        stderr(&out),
        format!(
            "Error from server (ServiceUnavailable): error trying to reach service: dial tcp {ip}:80: connect: connection refused\n"
        )
    );

    s.kubectl(&["create", "service", "clusterip", "empty", "--tcp=80:80"]);
    wait_until("endpoints of empty", LONG, || {
        s.kubectl_raw(&["get", "endpoints", "empty"])
            .status
            .success()
    });
    let out = s.kubectl_raw(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/empty/proxy/",
    ]);
    assert_eq!(
        stderr(&out),
        "Error from server (ServiceUnavailable): no endpoints available for service \"empty\"\n"
    );
}

/// A ready endpoint that answers: the request goes through to it and its answer comes back
/// as it is. The endpoint is a pod whose status says 127.0.0.1 (a server of this test), named
/// by a selector-less Service's own Endpoints, since simulated pods run no servers.
fn service_proxy_reaches_a_backend(s: &Server) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let backend = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("a proxied request");
        let mut reader = BufReader::new(stream);
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            head.push(line.trim_end().to_string());
        }
        let mut stream = reader.into_inner();
        let body = "hello from the backend";
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        head
    });
    s.with_manifest(
        "apply",
        UNBOUND.replace("name: unbound", "name: backend").as_str(),
    );
    s.kubectl(&[
        "patch",
        "pod",
        "backend",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status": {"podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}}"#,
    ]);
    s.kubectl(&[
        "create",
        "service",
        "clusterip",
        "backend",
        &format!("--tcp={port}:{port}"),
    ]);
    // Its own Endpoints, so no selector may take them over.
    s.kubectl(&[
        "patch",
        "service",
        "backend",
        "--type=json",
        "-p",
        r#"[{"op": "remove", "path": "/spec/selector"}]"#,
    ]);
    let endpoints = format!(
        r#"{{"apiVersion": "v1", "kind": "Endpoints", "metadata": {{"name": "backend"}},
            "subsets": [{{"addresses": [{{"ip": "127.0.0.1",
                "targetRef": {{"kind": "Pod", "namespace": "default", "name": "backend"}}}}],
              "ports": [{{"name": "{port}-{port}", "port": {port}}}]}}]}}"#
    );
    s.with_manifest("apply", &endpoints);
    let out = s.kubectl_raw(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/default/services/backend:{port}/proxy/hello?x=1"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hello from the backend"
    );
    let head = backend.join().unwrap_or_default();
    assert_eq!(
        head.first().map(String::as_str),
        Some("GET /hello?x=1 HTTP/1.1"),
        "{head:?}"
    );
    assert!(
        head.iter().any(|h| h.eq_ignore_ascii_case(&format!(
            "x-forwarded-uri: /api/v1/namespaces/default/services/backend:{port}/proxy/hello"
        ))),
        "{head:?}"
    );
    assert!(
        !head
            .iter()
            .any(|h| h.to_ascii_lowercase().starts_with("authorization")),
        "{head:?}"
    );
}

/// Raw requests as curl sends them (no user agent here, so compact answers).
fn raw_requests(s: &Server) {
    let base = "/api/v1/namespaces/default/pods";
    for (path, message, reason, code) in [
        (
            format!("{base}/two/exec?command=ls"),
            "a container name must be specified for pod two, choose one of: [setup app sidecar]"
                .to_string(),
            "BadRequest",
            400,
        ),
        (
            format!("{base}/two/attach?container=nope"),
            "container nope is not valid for pod two".to_string(),
            "BadRequest",
            400,
        ),
        (
            format!("{base}/unbound/exec?command=ls"),
            "pod unbound does not have a host assigned".to_string(),
            "BadRequest",
            400,
        ),
        (
            format!("{base}/unbound/portforward?ports=80"),
            "pod unbound does not have a host assigned".to_string(),
            "BadRequest",
            400,
        ),
        (
            format!("{base}/one/exec?command=ls"),
            "Upgrade request required".to_string(),
            "BadRequest",
            400,
        ),
        (
            format!("{base}/one/portforward?ports=http"),
            r#"cannot convert to []int32: strconv.ParseUint: parsing "http": invalid syntax"#
                .to_string(),
            "BadRequest",
            400,
        ),
        (
            format!("{base}/one/exec?command=ls&dryRun=All"),
            "dryRun is not supported".to_string(),
            "BadRequest",
            400,
        ),
        (
            format!("{base}/unbound/proxy/"),
            "address not allowed".to_string(),
            "BadRequest",
            400,
        ),
    ] {
        let r = s.request("POST", &path, &[], b"");
        assert_eq!(r.status, code, "{path}: {}", r.body);
        assert_eq!(r.body, status_body(&message, reason, code), "{path}");
    }
    let r = s.request("POST", &format!("{base}/ghost/exec?command=ls"), &[], b"");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["message"], r#"pods "ghost" not found"#);

    // A SPDY upgrade (kubectl before WebSockets) is dialed through: 500 without reason.
    let r = s.request(
        "POST",
        &format!("{base}/one/exec?command=ls&stdout=true"),
        &[("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1")],
        b"",
    );
    assert_eq!(r.status, 500, "{}", r.body);
    assert_eq!(
        r.body,
        status_body(&format!("error dialing backend: {REFUSED}"), "", 500)
    );

    // A GET for a backend's root without its slash is sent to the slash.
    let r = s.get(&format!("{base}/one/proxy?x=1"));
    assert_eq!(r.status, 301, "{}", r.headers);
    assert!(
        r.headers
            .to_ascii_lowercase()
            .contains(&format!("location: {base}/one/proxy/?x=1")),
        "{}",
        r.headers
    );
}

/// A user who may only `get` pods/exec: the WebSocket upgrade (a GET) passes the filter,
/// then kube-apiserver asks for `create` too (AuthorizePodWebsocketUpgradeCreatePermission,
/// pkg/registry/core/pod/rest/subresources.go ensureAuthorizedForVerb) and refuses with 403;
/// kubectl then falls back to SPDY, a POST the filter refuses as `create`.
fn exec_needs_create(s: &Server) {
    // kubectl reads the pod first.
    s.kubectl(&[
        "create",
        "role",
        "exec-get",
        "--verb=get",
        "--resource=pods,pods/exec",
    ]);
    s.kubectl(&[
        "create",
        "rolebinding",
        "jane-exec-get",
        "--role=exec-get",
        "--user=jane",
    ]);
    let r = s.request(
        "GET",
        "/api/v1/namespaces/default/pods/one/exec?command=date&stdout=true",
        &[
            ("Impersonate-User", "jane"),
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Protocol", "v5.channel.k8s.io"),
        ],
        b"",
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let status = r.json();
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["message"], r#"pods "one" is forbidden: "#);
    assert_eq!(
        status["details"],
        serde_json::json!({"name": "one", "kind": "pods"})
    );

    let out = s.kubectl_raw(&["exec", "one", "--as=jane", "--", "date"]);
    assert_eq!(
        stderr(&out),
        "Error from server (Forbidden): pods \"one\" is forbidden: User \"jane\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"default\"\n"
    );
}

fn discovery(s: &Server) {
    let out = s.kubectl_raw(&["get", "--raw", "/api/v1"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let entry = |name: &str| {
        list["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
    let connect = ["create", "delete", "get", "patch", "update"];
    for (name, kind, verbs) in [
        ("pods/attach", "PodAttachOptions", &["create", "get"][..]),
        ("pods/exec", "PodExecOptions", &["create", "get"][..]),
        (
            "pods/portforward",
            "PodPortForwardOptions",
            &["create", "get"][..],
        ),
        ("pods/proxy", "PodProxyOptions", &connect[..]),
        ("services/proxy", "ServiceProxyOptions", &connect[..]),
    ] {
        let found = entry(name);
        assert_eq!(
            found,
            serde_json::json!({"name": name, "singularName": "", "namespaced": true,
                "kind": kind, "verbs": verbs}),
            "{name}"
        );
    }
}

fn pod_connect(s: &Server) {
    setup(s);
    kubectl_streams(s);
    kubectl_proxies(s);
    service_proxy_reaches_a_backend(s);
    raw_requests(s);
    exec_needs_create(s);
    discovery(s);
}

#[test]
fn pod_connect_on_embedded() {
    pod_connect(&start_with_args(None, None, &NODE_SIDE));
}

#[test]
fn pod_connect_on_etcd() {
    let etcd = EtcdServer::start_blocking();
    let endpoint = etcd.endpoint();
    pod_connect(&start_with_args(Some(etcd), Some(endpoint), &NODE_SIDE));
}
