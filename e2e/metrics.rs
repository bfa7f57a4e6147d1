//! `/metrics` in the Prometheus text format with upstream's names and labels, and the
//! request filters: in-flight limits (429 with Retry-After), long-running requests outside
//! them, and the request timeout (504).

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;
use support::Server;

/// The sample lines of `name` (`name{...} value`) that carry every one of `labels`.
fn samples<'a>(text: &'a str, name: &str, labels: &[(&str, &str)]) -> Vec<&'a str> {
    let prefix = format!("{name}{{");
    text.lines()
        .filter(|line| line.starts_with(&prefix))
        .filter(|line| {
            labels
                .iter()
                .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
        .collect()
}

fn value(line: &str) -> f64 {
    line.rsplit(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no value in {line:?}"))
}

fn scrape(server: &Server) -> String {
    let response = server.get("/metrics");
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response
            .headers
            .to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{}",
        response.headers
    );
    response.body
}

fn requests_are_counted(server: Server) {
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "counted"}, "data": {"a": "b"}
    });
    let created = server.send_json("POST", "/api/v1/namespaces/default/configmaps", &cm);
    assert_eq!(created.status, 201, "{}", created.body);
    let got = server.get("/api/v1/namespaces/default/configmaps/counted");
    assert_eq!(got.status, 200, "{}", got.body);
    let missing = server.get("/api/v1/namespaces/default/configmaps/absent");
    assert_eq!(missing.status, 404);
    // A watch that ends by itself, after the ADDED event of the ConfigMap.
    let watched = server.get("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1");
    assert!(watched.body.contains("\"ADDED\""), "{}", watched.body);
    // A path that names no resource gives no label.
    assert_eq!(
        server.get("/api/v1/namespaces/default/nosuchthings").status,
        404
    );

    let text = scrape(&server);
    let common = [
        ("component", "apiserver"),
        ("group", ""),
        ("version", "v1"),
        ("resource", "configmaps"),
        ("subresource", ""),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut labels = common.to_vec();
        labels.extend_from_slice(extra);
        labels
    };
    for (verb, scope, code) in [
        ("POST", "resource", "201"),
        ("GET", "resource", "200"),
        ("GET", "resource", "404"),
        ("WATCH", "namespace", "200"),
    ] {
        let lines = samples(
            &text,
            "apiserver_request_total",
            &with(&[("verb", verb), ("scope", scope), ("code", code)]),
        );
        assert_eq!(lines.len(), 1, "{verb} {code}:\n{text}");
        assert!(value(lines[0]) >= 1.0, "{}", lines[0]);
    }
    assert!(samples(
        &text,
        "apiserver_request_total",
        &[("resource", "nosuchthings")]
    )
    .is_empty());
    // The histogram, with upstream's buckets, for the GET; none for the WATCH.
    let get = with(&[("verb", "GET"), ("scope", "resource")]);
    let buckets = samples(&text, "apiserver_request_duration_seconds_bucket", &get);
    assert_eq!(buckets.len(), 24, "{buckets:#?}");
    assert!(buckets.iter().any(|l| l.contains("le=\"0.005\"")));
    assert!(buckets.iter().any(|l| l.contains("le=\"60\"")));
    let inf: Vec<_> = buckets
        .iter()
        .filter(|l| l.contains("le=\"+Inf\""))
        .collect();
    assert!(value(inf[0]) >= 2.0, "{}", inf[0]);
    let count = samples(&text, "apiserver_request_duration_seconds_count", &get);
    assert!(value(count[0]) >= 2.0);
    assert!(samples(
        &text,
        "apiserver_request_duration_seconds_count",
        &[("verb", "WATCH")]
    )
    .is_empty());
    // Stored objects, per resource: the ConfigMap, and the system namespaces.
    let configmaps = samples(
        &text,
        "apiserver_storage_objects",
        &[("resource", "configmaps")],
    );
    assert!(value(configmaps[0]) >= 1.0, "{text}");
    let namespaces = samples(
        &text,
        "apiserver_storage_objects",
        &[("resource", "namespaces")],
    );
    assert!(value(namespaces[0]) >= 4.0, "{text}");
    let deployments = samples(
        &text,
        "apiserver_storage_objects",
        &[("resource", "deployments.apps")],
    );
    assert_eq!(deployments.len(), 1, "{text}");
    // Watch events sent, per kind.
    let events = samples(
        &text,
        "apiserver_watch_events_total",
        &[("group", ""), ("version", "v1"), ("kind", "ConfigMap")],
    );
    assert!(value(events[0]) >= 1.0, "{text}");
    // Both in-flight kinds; this scrape itself is a read-only request in flight.
    for kind in ["readOnly", "mutating"] {
        assert_eq!(
            samples(
                &text,
                "apiserver_current_inflight_requests",
                &[("request_kind", kind)]
            )
            .len(),
            1,
            "{text}"
        );
    }
    assert!(text.contains("# TYPE apiserver_request_duration_seconds histogram"));
    assert!(text.contains("# TYPE apiserver_request_total counter"));
}

#[test]
fn requests_are_counted_on_the_embedded_store() {
    requests_are_counted(support::start());
}

#[test]
fn requests_are_counted_on_etcd() {
    requests_are_counted(support::start_on_etcd());
}

/// A request whose head is sent but whose body is only partly sent: the server holds it (and
/// its in-flight slot) until the rest comes.
struct Held {
    stream: TcpStream,
    rest: Vec<u8>,
}

impl Held {
    fn post(port: u16, path: &str, body: &serde_json::Value) -> Held {
        let body = serde_json::to_vec(body).expect("json");
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).expect("head");
        stream.write_all(&body[..10]).expect("first bytes");
        stream.flush().expect("flush");
        Held {
            stream,
            rest: body[10..].to_vec(),
        }
    }

    /// Sends the rest of the body; the response's status and body.
    fn finish(mut self) -> (u16, String) {
        let _ = self.stream.write_all(&self.rest);
        self.response()
    }

    fn response(mut self) -> (u16, String) {
        let mut raw = Vec::new();
        let _ = self.stream.read_to_end(&mut raw);
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let status = raw
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, raw)
    }
}

fn configmap(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

#[test]
fn inflight_limits_refuse_with_429_and_long_running_requests_do_not_count() {
    // The max-in-flight gates are the limits only without API Priority and Fairness (with
    // it, the flags are the server's seats; see priority_fairness.rs).
    let server = support::start_embedded_with(&[
        "--enable-priority-and-fairness=false",
        "--max-requests-inflight=1",
        "--max-mutating-requests-inflight=1",
    ]);
    // A watch held open takes no read-only slot.
    let mut watch = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    watch
        .write_all(
            b"GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: localhost\r\n\r\n",
        )
        .expect("watch");
    watch
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut head = [0u8; 12];
    watch.read_exact(&mut head).expect("watch response");
    assert_eq!(&head, b"HTTP/1.1 200");
    for _ in 0..3 {
        let listed = server.get("/api/v1/namespaces/default/configmaps");
        assert_eq!(listed.status, 200, "{}", listed.body);
    }

    // A create whose body is still on its way holds the one mutating slot.
    let held = Held::post(
        server.port,
        "/api/v1/namespaces/default/configmaps",
        &configmap("held"),
    );
    let dry_run = "/api/v1/namespaces/default/configmaps?dryRun=All";
    let deadline = Instant::now() + Duration::from_secs(10);
    let refused = loop {
        let response = server.send_json("POST", dry_run, &configmap("probe"));
        if response.status == 429 {
            break response;
        }
        assert_eq!(response.status, 201, "{}", response.body);
        assert!(Instant::now() < deadline, "never refused");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        refused
            .headers
            .to_ascii_lowercase()
            .contains("retry-after: 1\r"),
        "{}",
        refused.headers
    );
    // Go's http.Error text, as upstream's filter writes it (not a Status).
    assert_eq!(refused.body, "Too many requests, please try again later.\n");
    assert!(refused
        .headers
        .to_ascii_lowercase()
        .contains("content-type: text/plain; charset=utf-8\r"));
    // Reads have their own limit.
    assert_eq!(
        server.get("/api/v1/namespaces/default/configmaps").status,
        200
    );

    // Once the held create ends, writes go through again.
    let (code, raw) = held.finish();
    assert_eq!(code, 201, "{raw}");
    let created = server.send_json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &configmap("after"),
    );
    assert_eq!(created.status, 201, "{}", created.body);

    // The refusal is a termination, not a served request.
    let text = scrape(&server);
    let terminated = samples(
        &text,
        "apiserver_request_terminations_total",
        &[
            ("verb", "POST"),
            ("resource", "configmaps"),
            ("code", "429"),
        ],
    );
    assert!(value(terminated[0]) >= 1.0, "{text}");
    assert!(samples(&text, "apiserver_request_total", &[("code", "429")]).is_empty());

    // A request that does not complete within its timeout (here its own, shorter than
    // --request-timeout) is answered 504 and frees its slot.
    let started = Instant::now();
    let slow = Held::post(
        server.port,
        "/api/v1/namespaces/default/configmaps?timeout=1s",
        &configmap("slow"),
    );
    let (code, raw) = slow.response();
    assert_eq!(code, 504, "{raw}");
    assert!(started.elapsed() >= Duration::from_millis(900));
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    let status: serde_json::Value = serde_json::from_str(body.trim()).expect("Status");
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(status["code"], 504);
    assert_eq!(
        status["message"],
        "Timeout: request did not complete within requested timeout - context deadline exceeded"
    );
    let created = server.send_json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &configmap("after-timeout"),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    drop(watch);
}
