//! Request paths over plain HTTP, sent verbatim (the support's client writes the path into the
//! request line as given; curl and kubectl would clean it first): no spelling of a path — `.`
//! and `..` segments, percent-encoded dots in any case, encoded slashes, empty segments,
//! trailing variants — reaches a resource other than the one its canonical path names, on both
//! backends. And the server's log lines: no ANSI escapes when stdout is not a terminal, and
//! `--log-format json` writes one JSON object per line.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use support::{start, start_embedded_with, start_on_etcd, Response, Server};

/// The secret's data (base64 of `path-traversal-canary`): no refused answer may carry it.
const CANARY: &str = "cGF0aC10cmF2ZXJzYWwtY2FuYXJ5";

/// Spellings and the canonical path each stands for: dot segments removed as RFC 3986 does,
/// `%2e` read as `.`, `%2F` as `/` (as Go's URL.Path reads it), empty segments collapsed.
const SPELLINGS: [(&str, &str); 31] = [
    ("/api/v1/namespaces/../secrets", "/api/v1/secrets"),
    ("/api/v1/namespaces/%2e%2e/secrets", "/api/v1/secrets"),
    ("/api/v1/namespaces/%2E%2E/secrets", "/api/v1/secrets"),
    ("/api/v1/namespaces/%2e%2E/secrets", "/api/v1/secrets"),
    ("/api/v1/namespaces/.%2e/secrets", "/api/v1/secrets"),
    ("/api/v1/namespaces/%2E./secrets", "/api/v1/secrets"),
    (
        "/api/v1/namespaces/a/../b/secrets",
        "/api/v1/namespaces/b/secrets",
    ),
    (
        "/api/v1/namespaces/b/../a/secrets",
        "/api/v1/namespaces/a/secrets",
    ),
    (
        "/api/v1/namespaces/b/%2e%2e/a/secrets/s",
        "/api/v1/namespaces/a/secrets/s",
    ),
    (
        "/api/v1/namespaces/b%2F..%2Fa/secrets/s",
        "/api/v1/namespaces/a/secrets/s",
    ),
    (
        "/api/v1/namespaces/a/secrets/%2e%2e",
        "/api/v1/namespaces/a",
    ),
    (
        "/api/v1/namespaces/a/secrets/s/..",
        "/api/v1/namespaces/a/secrets",
    ),
    (
        "/api/v1/namespaces/a/secrets/s/../",
        "/api/v1/namespaces/a/secrets",
    ),
    (
        "/api/v1/namespaces/a/secrets/s/.",
        "/api/v1/namespaces/a/secrets/s",
    ),
    (
        "/api/v1/namespaces/a/secrets/s/%2e",
        "/api/v1/namespaces/a/secrets/s",
    ),
    (
        "/api/v1/namespaces/a/secrets/.",
        "/api/v1/namespaces/a/secrets",
    ),
    (
        "/api/v1/namespaces/a/secrets/%2e%2e/s",
        "/api/v1/namespaces/a/s",
    ),
    ("/api/v1/namespaces/./secrets", "/api/v1/namespaces/secrets"),
    (
        "/api/v1//namespaces/a/secrets",
        "/api/v1/namespaces/a/secrets",
    ),
    ("/api/v1/namespaces//secrets", "/api/v1/namespaces/secrets"),
    (
        "/api/v1/namespaces/a/secrets//s",
        "/api/v1/namespaces/a/secrets/s",
    ),
    (
        "/api/v1/namespaces/a%2Fb/secrets",
        "/api/v1/namespaces/a/b/secrets",
    ),
    (
        "/api/v1/namespaces/a%2fsecrets%2fs",
        "/api/v1/namespaces/a/secrets/s",
    ),
    ("/api/./v1/secrets", "/api/v1/secrets"),
    ("/api/%2e/v1/secrets", "/api/v1/secrets"),
    ("/apis/../api/v1/secrets", "/api/v1/secrets"),
    ("/healthz/../api/v1/secrets", "/api/v1/secrets"),
    (
        "/openapi/v3/../../api/v1/namespaces/a/secrets",
        "/api/v1/namespaces/a/secrets",
    ),
    ("/version/%2e%2e/api/v1/secrets", "/api/v1/secrets"),
    // Trailing slashes: the same request, as upstream's request info reads it.
    (
        "/api/v1/namespaces/a/secrets/",
        "/api/v1/namespaces/a/secrets",
    ),
    (
        "/api/v1/namespaces/a/secrets/s/",
        "/api/v1/namespaces/a/secrets/s",
    ),
];

fn create(s: &Server, path: &str, body: Value) {
    let r = s.send_json("POST", path, &body);
    assert_eq!(r.status, 201, "POST {path}: {}", r.body);
}

/// Namespaces `a` and `b`, and secret `s` in `a` holding the canary.
fn secret_in_a(s: &Server) {
    for ns in ["a", "b"] {
        create(s, "/api/v1/namespaces", json!({"metadata": {"name": ns}}));
    }
    create(
        s,
        "/api/v1/namespaces/a/secrets",
        json!({"metadata": {"name": "s"}, "data": {"token": CANARY}}),
    );
    let r = s.get("/api/v1/namespaces/a/secrets/s");
    assert!(r.status == 200 && r.body.contains(CANARY), "{}", r.body);
}

/// A response as two reads of one path compare: a list's resourceVersion is the revision it
/// was read at, which writes elsewhere (leases, events) move on.
fn comparable(r: &Response) -> (u16, Value) {
    let mut body = serde_json::from_str(&r.body).unwrap_or_else(|_| Value::String(r.body.clone()));
    if body["kind"].as_str().is_some_and(|k| k.ends_with("List")) {
        if let Some(meta) = body["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
    }
    (r.status, body)
}

/// Refused (a redirect, or a 4xx metav1.Status, with no secret data), or exactly what the
/// canonical path serves.
fn assert_refused_or_canonical(s: &Server, method: &str, spelling: &str, canonical: &str) {
    let r = s.request(method, spelling, &[], b"");
    let refused = (300..500).contains(&r.status) && !r.body.contains(CANARY);
    if refused && r.status >= 400 {
        assert_eq!(
            r.json()["kind"],
            "Status",
            "{method} {spelling}: {}",
            r.body
        );
        return;
    }
    if refused {
        return;
    }
    let expected = s.request(method, canonical, &[], b"");
    assert_eq!(
        comparable(&r),
        comparable(&expected),
        "{method} {spelling} is answered neither with a refusal nor as {canonical}"
    );
}

fn no_spelling_reaches_another_resource(s: Server) {
    secret_in_a(&s);
    for (spelling, canonical) in SPELLINGS {
        assert_refused_or_canonical(&s, "GET", spelling, canonical);
    }
    // The dot segments this server refuses, with a clean 404 Status (no resource is served
    // at a path with a `.`, `..` or empty segment), whatever the spelling.
    for spelling in [
        "/api/v1/namespaces/../secrets",
        "/api/v1/namespaces/%2e%2E/secrets",
        "/api/v1/namespaces/b/../a/secrets",
        "/api/v1/namespaces/b%2F..%2Fa/secrets/s",
        "/api/v1/namespaces/a/secrets/s/%2e",
        "/api/v1//namespaces/a/secrets",
        "/api/v1/watch/namespaces/../secrets",
        "/apis/apps/v1/namespaces/../deployments",
    ] {
        let r = s.get(spelling);
        assert_eq!(r.status, 404, "GET {spelling}: {}", r.body);
        assert_eq!(r.json()["reason"], "NotFound", "GET {spelling}");
    }
    // Writes through a spelling change nothing but what their canonical path names: none of
    // these may delete or replace the secret in `a`.
    for (method, spelling) in [
        ("DELETE", "/api/v1/namespaces/b/../a/secrets/s"),
        ("DELETE", "/api/v1/namespaces/b/%2E%2E/a/secrets/s"),
        ("DELETE", "/api/v1/namespaces/a/secrets/s/.."),
        ("DELETE", "/api/v1/namespaces/../secrets"),
        ("DELETE", "/api/v1/namespaces/a/secrets/%2e"),
    ] {
        let r = s.request(method, spelling, &[], b"");
        assert!(
            (400..500).contains(&r.status) && !r.body.contains(CANARY),
            "{method} {spelling}: {} {}",
            r.status,
            r.body
        );
    }
    let put = s.send_json(
        "PUT",
        "/api/v1/namespaces/b/../a/secrets/s",
        &json!({"metadata": {"name": "s", "namespace": "a"}, "data": {"token": "b3RoZXI="}}),
    );
    assert!((400..500).contains(&put.status), "{}", put.body);
    let r = s.get("/api/v1/namespaces/a/secrets/s");
    assert!(r.status == 200 && r.body.contains(CANARY), "{}", r.body);
    // The canonical spellings still serve: the secret, its list, discovery.
    assert_eq!(s.get("/api/v1/namespaces/a/secrets/").status, 200);
    assert_eq!(s.get("/api/v1/").json()["groupVersion"], "v1");
}

#[test]
fn no_spelling_reaches_another_resource_embedded() {
    no_spelling_reaches_another_resource(start());
}

#[test]
fn no_spelling_reaches_another_resource_on_etcd() {
    no_spelling_reaches_another_resource(start_on_etcd());
}

/// `--log-format json`: every line the server writes is a JSON object a collector can index.
#[test]
fn json_log_lines() {
    let s = start_embedded_with(&["--log-format", "json"]);
    // Something logged while serving, not only at start.
    assert_eq!(s.get("/api/v1/namespaces/default").status, 200);
    let serving: Value = serde_json::from_str(&s.serving_line).expect("serving line is JSON");
    assert!(
        serving["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("serving")),
        "{serving}"
    );
    let lines = s.logs.lock().expect("logs").clone();
    assert!(lines.len() > 1, "{lines:?}");
    for line in lines.iter().filter(|l| !l.trim().is_empty()) {
        assert!(!line.contains("\u{1b}["), "escape in {line:?}");
        let value: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(value["level"].is_string(), "{line}");
        assert!(value["target"].is_string(), "{line}");
        assert!(value["fields"].is_object(), "{line}");
    }
}

/// Text logs written to a pipe (as to a file) have no ANSI escapes, even without NO_COLOR
/// (which the support sets for every other test).
#[test]
fn text_logs_off_a_terminal_have_no_escapes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = test_support::free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args(["--port", &port.to_string(), "--secure-port", "0"])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--write-kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start apiserver");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("serving") {
                let _ = tx.send(());
            }
            lines.push(line);
        }
        lines
    });
    let served = rx.recv_timeout(Duration::from_secs(20));
    if served.is_ok() {
        let r = Server::send(port, "GET", "/api/v1/namespaces/default", &[], b"");
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let _ = child.kill();
    let _ = child.wait();
    let lines = reader.join().expect("reader");
    served.unwrap_or_else(|_| panic!("apiserver serving: {lines:?}"));
    assert!(lines.iter().any(|l| l.contains("INFO")), "{lines:?}");
    for line in &lines {
        assert!(!line.contains("\u{1b}["), "escape in {line:?}");
    }
}
