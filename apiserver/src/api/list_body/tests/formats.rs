//! Hand-picked objects: what each format must get exactly right.

use axum::body::HttpBody;
use futures::StreamExt;
use registry::store::ListStream;
use registry::RegistryError;
use serde_json::{json, Value};

use super::*;
use crate::api::list_body::CHUNK;

fn configmap(name: &str, data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "resourceVersion": "12",
            "creationTimestamp": "2024-05-01T11:58:20Z",
            "labels": {"app": "web", "tier": "front end"},
        },
        "data": data,
    })
}

fn varied() -> Vec<Value> {
    vec![
        configmap("plain", json!({"a": "b"})),
        configmap(
            "nested",
            json!({"deep": {"er": {"est": [1, [2, [3, {"x": []}]], {}]}}}),
        ),
        configmap(
            "unicode",
            json!({"ключ": "значение", "emoji": "😀 ok", "cjk": "中文", "nbsp": "a\u{a0}b"}),
        ),
        configmap(
            "escapes",
            json!({
                "quote": "say \"hi\"", "single": "it's", "backslash": "C:\\dir",
                "tab": "a\tb", "cr": "a\rb", "nul": "a\u{0}b", "del": "\u{7f}",
                "bom": "\u{feff}x", "control": "\u{1b}[0m", "slash": "a/b",
            }),
        ),
        configmap(
            "multiline",
            json!({
                "script": "#!/bin/sh\necho hi\n",
                "keep": "trailing\n\n\n",
                "strip": "no\nnewline",
                "blank lines": "a\n\n\nb\n",
                "leading": "  indented\nfirst\n",
                "only newline": "\n",
                "space before break": "a \nb",
                "break then space": "a\n b",
                "crlf": "a\r\nb",
                "tabs": "\tx\n\ty",
                "separators": "a\u{2028}b c\u{2029}d",
                "next line": "a\u{85}b",
                "document markers": "---\n...\n",
                "key\nwith break": "v",
            }),
        ),
        configmap(
            "yaml-lookalikes",
            json!({
                "t": "true", "n": "null", "y": "yes", "tilde": "~", "num": "012",
                "float": "1e3", "hex": "0x1f", "colon": "a: b", "hash": "a #b",
                "dash": "- x", "star": "*ref", "amp": "&anchor", "bang": "!tag",
                "empty": "", "spaces": "  ", "brace": "{a}", "pct": "%x", "at": "@x",
                "backtick": "`x`", "pipe": "|", "gt": ">", "q": "?",
                "long": "x".repeat(200),
            }),
        ),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "numbers", "annotations": {}},
            "binaryData": {},
            "numbers": [0, -1, 1.5, -0.0, 1e300, 2.5e-8, 18446744073709551615u64,
                        -9223372036854775808i64, 0.1, 100.0],
            "flags": [true, false, null],
            "empty": {"map": {}, "list": [], "string": ""},
            "!single": "tag-like key",
            "tagged": {"!only": "key"},
            ("k".repeat(140)): "a key too long to be simple",
        }),
        json!({}),
        json!({"metadata": {"name": "no-kind", "creationTimestamp": "not a time"}}),
        json!({"metadata": {"name": "future", "creationTimestamp": "2030-01-01T00:00:00Z"}}),
    ]
}

#[tokio::test]
async fn varied_objects_stream_as_the_whole_list_encodes() {
    let metadata = json!({"resourceVersion": "12345"});
    let parts = Parts::new("ConfigMapList", metadata, varied());
    assert_identical(&parts, &info("configmaps")).await;
}

#[tokio::test]
async fn pods_stream_as_the_whole_list_encodes() {
    let pods: Vec<Value> = (0..5)
        .map(|i| {
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": format!("web-{i}"),
                    "namespace": "default",
                    "creationTimestamp": "2024-05-01T10:00:00Z",
                    "labels": {"app": "web"},
                },
                "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "nginx"}]},
                "status": {
                    "phase": "Running",
                    "podIP": format!("10.0.0.{i}"),
                    "containerStatuses": [{"name": "app", "ready": i % 2 == 0, "restartCount": i}],
                },
            })
        })
        .collect();
    let parts = Parts::new("PodList", json!({"resourceVersion": "7"}), pods);
    assert_identical(&parts, &info("pods")).await;
    assert_protobuf_identical(&parts, &info("pods")).await;
}

#[tokio::test]
async fn paged_list_metadata_streams_as_the_whole_list_encodes() {
    let metadata = json!({
        "resourceVersion": "99",
        "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTksInN0YXJ0IjoiYlx1MDAwMCJ9",
        "remainingItemCount": 41,
    });
    let parts = Parts::new("ConfigMapList", metadata, varied()[..3].to_vec());
    assert_identical(&parts, &info("configmaps")).await;
}

#[tokio::test]
async fn empty_lists_stream_as_the_whole_list_encodes() {
    let cases = [
        json!({"resourceVersion": "1"}),
        json!({"resourceVersion": "1", "continue": "abc", "remainingItemCount": 3}),
        json!({}),
    ];
    for metadata in cases {
        let parts = Parts::new("ConfigMapList", metadata, Vec::new());
        assert_identical(&parts, &info("configmaps")).await;
    }
}

#[tokio::test]
async fn odd_list_heads_stream_as_the_whole_list_encodes() {
    // A group's apiVersion and a custom list kind that YAML would quote.
    let mut parts = Parts::new(
        "yes",
        json!({"resourceVersion": "0012"}),
        varied()[..2].to_vec(),
    );
    parts.api_version = "example.com/v1: \"x\"".into();
    assert_identical(&parts, &info("configmaps")).await;
}

/// Lists larger than a chunk leave in several chunks, without a length, and still equal the
/// whole list's encoding; a list that fits in one chunk goes out whole, with its length (hyper
/// sends a body of exact size with a Content-Length).
#[tokio::test]
async fn large_lists_leave_in_chunks() {
    let items: Vec<Value> = (0..400)
        .map(|i| configmap(&format!("cm-{i:04}"), json!({"payload": "x".repeat(500)})))
        .collect();
    let parts = Parts::new("ConfigMapList", json!({"resourceVersion": "5"}), items);
    let info = info("configmaps");
    assert_identical(&parts, &info).await;
    assert_protobuf_identical(&parts, &info).await;

    let response = streamed_response(parts.clone().stream(), &info, Encoding::Json)
        .await
        .expect("a list response");
    assert_eq!(response.body().size_hint().exact(), None);
    let mut body = response.into_body().into_data_stream();
    let mut sizes = Vec::new();
    while let Some(chunk) = body.next().await {
        sizes.push(chunk.expect("a chunk").len());
    }
    assert!(sizes.len() > 2, "{sizes:?}");
    let (last, full) = sizes.split_last().unwrap_or((&0, &[]));
    assert!(
        full.iter().all(|s| (CHUNK..CHUNK + 1024).contains(s)),
        "{sizes:?}"
    );
    assert!(*last <= CHUNK + 1024);

    let small = Parts::new("ConfigMapList", json!({"resourceVersion": "5"}), varied());
    let response = streamed_response(small.stream(), &info, Encoding::Json)
        .await
        .expect("a list response");
    let length = response.body().size_hint().exact();
    let body = body_of(response).await;
    assert_eq!(length, Some(body.len() as u64));
}

fn failing_after(items: usize) -> ListStream {
    let good = (0..items).map(|i| Ok(configmap(&format!("cm-{i}"), json!({"p": "x".repeat(500)}))));
    let bad = std::iter::once(Err(RegistryError::Internal("the disk caught fire".into())));
    ListStream {
        api_version: "v1".into(),
        kind: "ConfigMapList".into(),
        metadata: Default::default(),
        items: futures::stream::iter(good.chain(bad)).boxed(),
    }
}

/// An error before the first chunk is full is still a Status.
#[tokio::test]
async fn an_error_in_the_first_chunk_is_a_status() {
    let info = info("configmaps");
    for encoding in ENCODINGS {
        match streamed_response(failing_after(3), &info, encoding).await {
            Err(RegistryError::Internal(message)) => assert_eq!(message, "the disk caught fire"),
            Err(e) => panic!("{encoding:?}: unexpected error {e}"),
            Ok(_) => panic!("{encoding:?}: the error was swallowed"),
        }
    }
}

/// An error once the response has begun ends the body with the error (the connection is
/// aborted), never with a well-formed list.
#[tokio::test]
async fn an_error_after_the_first_chunk_ends_the_body_with_it() {
    let info = info("configmaps");
    // An indented Table is written whole once its rows are all in, and protobuf once its
    // items are: an error is a Status (see `a_whole_list_fails_with_a_status`).
    let streamed = ENCODINGS
        .into_iter()
        .filter(|e| !matches!(e, Encoding::PrettyTable(_) | Encoding::Protobuf));
    for encoding in streamed {
        let response = streamed_response(failing_after(5000), &info, encoding)
            .await
            .expect("the response begins");
        let mut body = response.into_body().into_data_stream();
        let mut received = 0;
        let error = loop {
            match body.next().await {
                Some(Ok(chunk)) => received += chunk.len(),
                Some(Err(e)) => break e,
                None => panic!("{encoding:?}: the body ended cleanly after {received} bytes"),
            }
        };
        assert!(received >= CHUNK, "{encoding:?}: {received}");
        assert!(
            error.to_string().contains("the disk caught fire"),
            "{error}"
        );
        assert!(body.next().await.is_none());
    }
}

/// A protobuf list is built whole (the rest of a large one on the low-priority runtime), so an
/// error after its first chunk is still a Status.
#[tokio::test]
async fn a_whole_list_fails_with_a_status() {
    let info = info("configmaps");
    match streamed_response(failing_after(5000), &info, Encoding::Protobuf).await {
        Err(RegistryError::Internal(message)) => assert_eq!(message, "the disk caught fire"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("the error was swallowed"),
    }
}
