//! `?pretty=true` (and the indented default of curl, Wget and browsers) on Tables,
//! subresources and watches, compared byte for byte with what kube-apiserver writes, on the
//! embedded store and on etcd.
//!
//! Where the expectations come from (kubernetes/kubernetes, staging/src/k8s.io/apimachinery
//! and apiserver):
//! - negotiation.NegotiateOutputMediaType swaps in the pretty serializer for `?pretty` or
//!   those user agents (isPrettyPrint); objects, Tables and subresource answers are all
//!   written through it, and the JSON serializer's pretty Encode is json.MarshalIndent with
//!   two spaces and no trailing newline, i.e. json.Indent of the compact encoding, which
//!   `go_indent` below reproduces;
//! - NegotiateOutputMediaTypeStream (handlers/watch.go) never swaps it: watch events are
//!   written compact, one `{"type":…,"object":…}` and a newline each, whatever is asked.

mod support;

use serde_json::json;
use support::{start, start_on_etcd, Server};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const CURL: &str = "curl/8.5.0";

/// Go's json.Indent(dst, src, "", "  ") of a compact document: a newline and the depth's
/// indent after `{`, `[` and `,`, `": "` after keys, empty objects and arrays kept as `{}`
/// and `[]`, strings untouched.
fn go_indent(compact: &str) -> String {
    let bytes = compact.as_bytes();
    let mut out = String::new();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else {
            match c {
                '"' => {
                    in_string = true;
                    out.push(c);
                }
                '{' | '[' => {
                    let close = if c == '{' { b'}' } else { b']' };
                    if bytes.get(i + 1) == Some(&close) {
                        out.push(c);
                        out.push(close as char);
                        i += 1;
                    } else {
                        out.push(c);
                        depth += 1;
                        newline(&mut out, depth);
                    }
                }
                '}' | ']' => {
                    depth = depth.saturating_sub(1);
                    newline(&mut out, depth);
                    out.push(c);
                }
                ',' => {
                    out.push(c);
                    newline(&mut out, depth);
                }
                ':' => out.push_str(": "),
                _ => out.push(c),
            }
        }
        // Multi-byte characters only occur inside strings and are copied byte by byte.
        if !c.is_ascii() {
            out.pop();
            let end = (i + 1..=bytes.len())
                .find(|&j| compact.is_char_boundary(j))
                .unwrap_or(bytes.len());
            out.push_str(&compact[i..end]);
            i = end;
            continue;
        }
        i += 1;
    }
    out
}

/// A compact answer and its indented twin agree once the compact one is indented as Go
/// does; a Table's age cell may tick between the two requests, so a few tries are allowed.
fn assert_indented_twin(s: &Server, path: &str, accept: &str) {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut last = (String::new(), String::new());
    for _ in 0..5 {
        let compact = s.request("GET", path, &[("Accept", accept)], b"");
        let pretty = s.request(
            "GET",
            &format!("{path}{sep}pretty=true"),
            &[("Accept", accept)],
            b"",
        );
        let by_agent = s.request(
            "GET",
            path,
            &[("Accept", accept), ("User-Agent", CURL)],
            b"",
        );
        assert_eq!(
            (compact.status, pretty.status),
            (200, 200),
            "{path}: {}",
            pretty.body
        );
        assert!(
            compact.body.ends_with('\n'),
            "{path}: compact ends with a newline"
        );
        let expected = go_indent(compact.body.trim_end_matches('\n'));
        if pretty.body == expected && by_agent.body == expected {
            return;
        }
        last = (expected, pretty.body);
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(last.1, last.0, "{path}");
}

fn pretty(s: &Server) {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"app": "x"}}, "data": {"a": "b"}});
    assert_eq!(
        s.send_json("POST", "/api/v1/namespaces/default/configmaps", &cm)
            .status,
        201
    );
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"schedulerName": "nobody", "containers": [{"name": "app", "image": "nginx"}]}});
    assert_eq!(
        s.send_json("POST", "/api/v1/namespaces/default/pods", &pod)
            .status,
        201
    );

    // Tables: one object, and a list.
    assert_indented_twin(s, "/api/v1/namespaces/default/configmaps/c", TABLE);
    assert_indented_twin(s, "/api/v1/namespaces/default/configmaps", TABLE);
    // A subresource read: the pod's status.
    assert_indented_twin(
        s,
        "/api/v1/namespaces/default/pods/p/status",
        "application/json",
    );

    // A subresource write: the eviction's Status, indented, no newline.
    let eviction = serde_json::to_vec(&json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "p", "namespace": "default"}}))
    .unwrap_or_default();
    let r = s.request(
        "POST",
        "/api/v1/namespaces/default/pods/p/eviction?pretty=true",
        &[("Content-Type", "application/json")],
        &eviction,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.body,
        "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Success\",\n  \"code\": 201\n}"
    );

    // A watch is never indented: each event is the compact object in a compact frame.
    let object = s.get("/api/v1/namespaces/default/configmaps/c").body;
    let frame = format!(
        "{{\"type\":\"ADDED\",\"object\":{}}}\n",
        object.trim_end_matches('\n')
    );
    for (query, agent) in [("&pretty=true", "kubectl/v1.35.0"), ("", CURL)] {
        let r = s.request(
            "GET",
            &format!("/api/v1/namespaces/default/configmaps?watch=true&fieldSelector=metadata.name%3Dc&timeoutSeconds=1{query}"),
            &[("User-Agent", agent)],
            b"",
        );
        assert_eq!(r.status, 200);
        assert_eq!(r.body, frame, "{query} {agent}");
    }
    // Nor is a Table watch.
    let r = s.request(
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&fieldSelector=metadata.name%3Dc&timeoutSeconds=1&pretty=true",
        &[("Accept", TABLE)],
        b"",
    );
    assert!(
        r.body
            .starts_with("{\"type\":\"ADDED\",\"object\":{\"kind\":\"Table\""),
        "{}",
        r.body
    );
    assert_eq!(r.body.matches('\n').count(), 1, "{}", r.body);
}

#[test]
fn go_indent_is_json_indent() {
    assert_eq!(
        go_indent(r#"{"a":[],"b":{},"c":[1,{"d":"x,{y}:\"z\""}],"é":"ü"}"#),
        "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": \"x,{y}:\\\"z\\\"\"\n    }\n  ],\n  \"é\": \"ü\"\n}"
    );
}

#[test]
fn pretty_on_embedded() {
    pretty(&start());
}

#[test]
fn pretty_on_etcd() {
    pretty(&start_on_etcd());
}
