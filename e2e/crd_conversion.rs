//! CustomResourceDefinition conversion webhooks through the real binary and kubectl, on both
//! backends, against a real HTTPS webhook on loopback that converts v1 `spec.host` +
//! `spec.port` to v2 `spec.address: "host:port"` and back: objects written in one version read
//! in the other (get, list in one review, watch), updates, server-side apply and deletes
//! through the other version, the storage version changed with `status.storedVersions`
//! following; a webhook answering a
//! changed name, a Failure, or not at all fails the request in upstream's words; the
//! definition's conversion settings are validated as upstream validates them.

mod support;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use support::webhook_server::WebhookServer;
use support::{output_text, start, start_on_etcd, Kubectl, Server};
use test_support::wait_until;

const CRD: &str = "widgets.conv.example.com";
const V1: &str = "widgets.v1.conv.example.com";
const V2: &str = "widgets.v2.conv.example.com";

/// How the test webhook answers.
const CONVERT: u8 = 0;
const RENAME: u8 = 1;
const REFUSE: u8 = 2;

/// One object of a review in `desired`: v1's host and port are v2's address.
fn converted(object: &Value, desired: &str) -> Value {
    let mut out = object.clone();
    let spec = &object["spec"];
    out["spec"] = if desired.ends_with("/v2") {
        json!({"address": format!("{}:{}", spec["host"].as_str().unwrap_or_default(), spec["port"])})
    } else {
        let address = spec["address"].as_str().unwrap_or_default();
        let (host, port) = address.rsplit_once(':').unwrap_or((address, "0"));
        json!({"host": host, "port": port.parse::<i64>().unwrap_or_default()})
    };
    out["apiVersion"] = json!(desired);
    out
}

fn webhook(mode: Arc<AtomicU8>) -> WebhookServer {
    WebhookServer::start(
        "convert.conversion.svc",
        Arc::new(move |_path, review| {
            let request = &review["request"];
            let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
            let mut objects: Vec<Value> = request["objects"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| converted(o, desired))
                .collect();
            let mut result = json!({"status": "Success"});
            match mode.load(Ordering::SeqCst) {
                RENAME => objects
                    .iter_mut()
                    .for_each(|o| o["metadata"]["name"] = json!("renamed")),
                REFUSE => result = json!({"status": "Failure", "message": "no thanks"}),
                _ => {}
            }
            json!({"apiVersion": review["apiVersion"], "kind": "ConversionReview",
                "response": {"uid": request["uid"], "result": result, "convertedObjects": objects}})
        }),
    )
}

/// The webhook by URL, as the definition names it.
fn by_url(hooks: &WebhookServer) -> Value {
    json!({"url": format!("https://127.0.0.1:{}/convert", hooks.port), "caBundle": hooks.ca_bundle})
}

fn definition(client_config: Value, review_versions: &[&str], storage: &str) -> String {
    let schema = |spec: Value| {
        json!({"openAPIV3Schema": {"type": "object",
        "properties": {"spec": {"type": "object", "properties": spec}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": {
            "group": "conv.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": storage == "v1",
                 "schema": schema(json!({"host": {"type": "string"}, "port": {"type": "integer"}}))},
                {"name": "v2", "served": true, "storage": storage == "v2",
                 "schema": schema(json!({"address": {"type": "string"}}))},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": review_versions,
                "clientConfig": client_config}},
        },
    })
    .to_string()
}

fn widget(version: &str, name: &str, spec: Value) -> String {
    json!({"apiVersion": format!("conv.example.com/{version}"), "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec})
    .to_string()
}

/// The reviews the webhook got so far.
fn reviews(hooks: &WebhookServer) -> Vec<Value> {
    hooks.received("/convert")
}

#[test]
fn conversion_webhooks_on_the_embedded_store() {
    conversions(&start());
}

#[test]
fn conversion_webhooks_on_etcd() {
    conversions(&start_on_etcd());
}

fn conversions(s: &Server) {
    let mode = Arc::new(AtomicU8::new(CONVERT));
    let hooks = webhook(mode.clone());
    s.with_manifest("apply", &definition(by_url(&hooks), &["v1"], "v1"));
    s.kubectl(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{CRD}"),
        "--timeout=30s",
    ]);
    wait_until("both versions served", Duration::from_secs(20), || {
        s.kubectl_raw(&["get", V2]).status.success()
    });

    // Written in v1 (the storage version: nothing to convert), read in v2.
    s.with_manifest(
        "create",
        &widget("v1", "w1", json!({"host": "a", "port": 80})),
    );
    assert!(
        reviews(&hooks).is_empty(),
        "a write in the storage version converts nothing"
    );
    let read = s.json(&["get", V2, "w1"]);
    assert_eq!(read["apiVersion"], "conv.example.com/v2");
    assert_eq!(read["spec"], json!({"address": "a:80"}));
    let sent = reviews(&hooks).pop().unwrap_or_default();
    assert_eq!(sent["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(sent["request"]["desiredAPIVersion"], "conv.example.com/v2");
    assert_eq!(
        sent["request"]["objects"][0]["apiVersion"],
        "conv.example.com/v1"
    );
    assert_eq!(
        s.json(&["get", V1, "w1"])["spec"],
        json!({"host": "a", "port": 80})
    );

    // Written in v2: stored in v1.
    s.with_manifest("create", &widget("v2", "w2", json!({"address": "b:81"})));
    assert_eq!(
        s.json(&["get", V1, "w2"])["spec"],
        json!({"host": "b", "port": 81})
    );
    let to_storage = reviews(&hooks).into_iter().any(|r| {
        r["request"]["desiredAPIVersion"] == "conv.example.com/v1"
            && r["request"]["objects"][0]["spec"]["address"] == "b:81"
    });
    assert!(to_storage, "the v2 body was converted to v1 to be stored");

    // A list converts its objects in one review.
    let before = reviews(&hooks).len();
    let listed = s.json(&["get", V2]);
    let addresses: Vec<&Value> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| &o["spec"]["address"])
        .collect();
    assert_eq!(addresses, [&json!("a:80"), &json!("b:81")], "{listed}");
    let list_reviews = &reviews(&hooks)[before..];
    assert_eq!(list_reviews.len(), 1, "{list_reviews:?}");
    assert_eq!(
        list_reviews[0]["request"]["objects"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    // Unpaged (read whole, page by page from one snapshot) as well as kubectl's chunks.
    let whole = s
        .get("/apis/conv.example.com/v2/namespaces/default/widgets")
        .json();
    assert_eq!(whole["kind"], "WidgetList");
    assert_eq!(
        whole["items"][1]["spec"],
        json!({"address": "b:81"}),
        "{whole}"
    );
    let in_v1 = s.json(&["get", V1]);
    assert_eq!(in_v1["items"][1]["spec"], json!({"host": "b", "port": 81}));

    // Watches in either version: each event's object in the version watched.
    for (version, expected) in [
        ("v2", json!({"address": "a:80"})),
        ("v1", json!({"host": "a", "port": 80})),
    ] {
        let r = s.get(&format!(
            "/apis/conv.example.com/{version}/namespaces/default/widgets?watch=true&timeoutSeconds=2"
        ));
        assert_eq!(r.status, 200, "{}", r.body);
        let events: Vec<Value> = r
            .body
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        assert_eq!(events.len(), 2, "{}", r.body);
        assert_eq!(events[0]["type"], "ADDED");
        assert_eq!(
            events[0]["object"]["apiVersion"],
            format!("conv.example.com/{version}")
        );
        assert_eq!(events[0]["object"]["spec"], expected);
    }

    // An update through v2 lands in v1.
    s.kubectl(&[
        "patch",
        V2,
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"address":"c:90"}}"#,
    ]);
    assert_eq!(
        s.json(&["get", V1, "w1"])["spec"],
        json!({"host": "c", "port": 90})
    );

    // Server-side apply through v2 creates, then changes, an object stored in v1.
    for port in [5, 6] {
        let out = s.manifest_output(
            &["apply", "--server-side", "-f", "-"],
            &widget("v2", "w4", json!({"address": format!("e:{port}")})),
        );
        assert!(out.status.success(), "{}", output_text(&out));
        assert_eq!(
            s.json(&["get", V1, "w4"])["spec"],
            json!({"host": "e", "port": port})
        );
    }

    // A delete through v2 answers the marked object in v2; the update that takes its last
    // finalizer away removes it.
    s.with_manifest(
        "create",
        &json!({"apiVersion": "conv.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w5", "namespace": "default", "finalizers": ["conv.example.com/hold"]},
            "spec": {"host": "f", "port": 6}})
        .to_string(),
    );
    let path = "/apis/conv.example.com/v2/namespaces/default/widgets/w5";
    let r = s.request("DELETE", path, &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let marked = r.json();
    assert_eq!(marked["spec"], json!({"address": "f:6"}), "{marked}");
    assert!(
        marked["metadata"]["deletionTimestamp"].is_string(),
        "{marked}"
    );
    s.kubectl(&[
        "patch",
        V2,
        "w5",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    assert_eq!(s.get(path).status, 404);

    // v2 becomes the storage version: storedVersions keeps v1, new writes are stored in v2.
    s.with_manifest("apply", &definition(by_url(&hooks), &["v1"], "v2"));
    wait_until("v2 stored", Duration::from_secs(20), || {
        s.json(&["get", "crd", CRD])["status"]["storedVersions"] == json!(["v1", "v2"])
    });
    wait_until(
        "the converter storing in v2",
        Duration::from_secs(20),
        || {
            let name = format!("w3-{}", reviews(&hooks).len());
            s.with_manifest(
                "create",
                &widget("v1", &name, json!({"host": "d", "port": 7})),
            );
            reviews(&hooks).iter().any(|r| {
                r["request"]["desiredAPIVersion"] == "conv.example.com/v2"
                    && r["request"]["objects"][0]["metadata"]["name"] == name.as_str()
            })
        },
    );
    let before = reviews(&hooks).len();
    let w2 = s.json(&["get", V1, "w2"]);
    assert_eq!(
        w2["spec"],
        json!({"host": "b", "port": 81}),
        "still stored in v1: read as is"
    );
    assert_eq!(
        reviews(&hooks).len(),
        before,
        "an object in the version asked for is not sent"
    );

    // The webhook by Service (its EndpointSlice names the server, whose certificate is for
    // the Service's DNS name), sent v1beta1 reviews as the definition lists that first.
    s.kubectl(&["create", "namespace", "conversion"]);
    s.with_manifest(
        "create",
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "convert", "namespace": "conversion"},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hooks.port}]}})
        .to_string(),
    );
    s.with_manifest(
        "create",
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "convert-1", "namespace": "conversion",
                "labels": {"kubernetes.io/service-name": "convert"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": hooks.port, "protocol": "TCP"}]})
        .to_string(),
    );
    let service = json!({"service": {"namespace": "conversion", "name": "convert", "path": "/by-service"},
        "caBundle": hooks.ca_bundle});
    s.with_manifest("apply", &definition(service, &["v1beta1", "v1"], "v2"));
    wait_until(
        "conversions through the Service",
        Duration::from_secs(20),
        || {
            s.json(&["get", V2, "w1"])["spec"] == json!({"address": "c:90"})
                && !hooks.received("/by-service").is_empty()
        },
    );
    let review = hooks.received("/by-service").pop().unwrap_or_default();
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1beta1");
    s.with_manifest("apply", &definition(by_url(&hooks), &["v1"], "v2"));
    wait_until("conversions by URL again", Duration::from_secs(20), || {
        let before = reviews(&hooks).len();
        s.kubectl(&["get", V2, "w1"]);
        reviews(&hooks).len() > before
    });

    // A webhook that renames, refuses, or cannot be reached: the request fails as upstream's.
    mode.store(RENAME, Ordering::SeqCst);
    let out = s.kubectl_raw(&["get", V2, "w2"]);
    let said = output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("Error from server: conversion webhook for conv.example.com/v1, Kind=Widget returned invalid object: must have the same name: w2 != renamed"),
        "{said}"
    );
    mode.store(REFUSE, Ordering::SeqCst);
    let r = s.get("/apis/conv.example.com/v2/namespaces/default/widgets/w2");
    assert_eq!(r.status, 500, "{}", r.body);
    let status = r.json();
    assert_eq!(
        status["message"],
        "conversion webhook for conv.example.com/v1, Kind=Widget failed: no thanks"
    );
    assert_eq!(status.get("reason"), None, "{status}");
    let r = s.get("/apis/conv.example.com/v2/namespaces/default/widgets");
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(
        r.body.contains(
            "conversion webhook for conv.example.com/v1, Kind=WidgetList failed: no thanks"
        ),
        "{}",
        r.body
    );

    let metrics = s.get("/metrics").body;
    for failure in [
        "conversion_webhook_invalid_converted_object_failure",
        "conversion_webhook_malformed_response_failure",
    ] {
        let line = format!(
            r#"apiserver_conversion_webhook_request_total{{failure_type="{failure}",result="failure"}}"#
        );
        assert!(metrics.contains(&line), "{line} missing");
    }
    assert!(
        metrics.contains(r#"apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="widgets.conv.example.com",from_version="v1",succeeded="true",to_version="v2"}"#),
        "{}",
        metrics.lines().filter(|l| l.contains("crd_conversion")).collect::<Vec<_>>().join("\n")
    );

    let port = hooks.port;
    drop(hooks);
    let out = s.kubectl_raw(&["get", V2, "w2"]);
    let said = output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "conversion webhook for conv.example.com/v1, Kind=Widget failed: Post \"https://127.0.0.1:{port}/convert?timeout=30s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )),
        "{said}"
    );
}

/// Conversion settings refused in upstream's words.
#[test]
fn conversion_settings_are_validated() {
    let s = start();
    let crd = |conversion: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gizmos.conv.example.com"},
            "spec": {"group": "conv.example.com", "scope": "Cluster",
                "names": {"plural": "gizmos", "kind": "Gizmo"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}],
                "conversion": conversion}})
        .to_string()
    };
    let refused = |conversion: Value| {
        let out = s.manifest_output(&["create", "-f", "-"], &crd(conversion));
        assert!(!out.status.success());
        output_text(&out)
    };
    let said = refused(json!({"strategy": "Webhook"}));
    assert!(said.contains("spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"), "{said}");
    assert!(
        said.contains("spec.conversion.conversionReviewVersions: Required value"),
        "{said}"
    );
    let said = refused(
        json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v9"],
        "clientConfig": {"url": "https://a.example.com", "service": {"name": "s", "namespace": "n"}}}}),
    );
    assert!(said.contains("spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"), "{said}");
    assert!(said.contains(r#"spec.conversion.conversionReviewVersions: Invalid value: []string{"v9"}: must include at least one of v1, v1beta1"#), "{said}");
    let said = refused(
        json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://a.example.com"}}}),
    );
    assert!(said.contains("spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"), "{said}");
    s.with_manifest(
        "create",
        &crd(
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/convert"}}}}),
        ),
    );
    let stored = s.json(&["get", "crd", "gizmos.conv.example.com"]);
    assert_eq!(stored["spec"]["conversion"]["strategy"], "Webhook");
}
