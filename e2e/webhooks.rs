//! Admission webhooks through the real binary and kubectl, on both backends, against a real
//! HTTPS server on loopback: a mutating webhook by URL patches what namespaces selected by
//! label create and sends a warning; one by Service (resolved through its EndpointSlice, the
//! Service's DNS name verified) patches too; a validating webhook refuses in upstream's words;
//! a webhook that cannot be called fails the request (Fail) or is passed over (Ignore); dry
//! runs reach only side-effect-free webhooks; configurations are never sent to webhooks; a
//! deleted configuration stops acting. A webhook with `reinvocationPolicy: IfNeeded` is called
//! again after a later one changed the object; one slower than its `timeoutSeconds` fails the
//! request; `matchConditions` pass requests over (the authorizer library asks as the requesting
//! user); v1 refuses side effects and long timeouts.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::webhook_server::{allow, deny, patch, WebhookServer};
use support::{output_text, start, start_on_etcd, Kubectl, Server};

const SERVICE_DNS: &str = "hooks.webhooks.svc";

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn server() -> WebhookServer {
    WebhookServer::start(
        SERVICE_DNS,
        Arc::new(|path, review| {
            let labels = &review["request"]["object"]["metadata"]["labels"];
            match path {
                "/mutate" => {
                    let mut extra = patch(json!([{"op": "add", "path": "/metadata/labels",
                        "value": merged(labels, "mutated", "url")}]));
                    extra["warnings"] = json!(["mutated by the test webhook"]);
                    allow(review, extra)
                }
                "/by-service" => allow(
                    review,
                    patch(json!([{"op": "add", "path": "/metadata/labels",
                        "value": merged(labels, "via", "service")}])),
                ),
                // Says whether the second webhook had already acted: reinvoked, it sees it.
                "/first" => {
                    let seen = if labels["second"] == "yes" {
                        "after-second"
                    } else {
                        "before-second"
                    };
                    allow(
                        review,
                        patch(json!([{"op": "add", "path": "/metadata/labels",
                        "value": merged(labels, "first", seen)}])),
                    )
                }
                "/second" => allow(
                    review,
                    patch(json!([{"op": "add", "path": "/metadata/labels",
                        "value": merged(labels, "second", "yes")}])),
                ),
                "/slow" => {
                    std::thread::sleep(Duration::from_millis(2500));
                    allow(review, json!({}))
                }
                // Says which version it saw the object in.
                "/hpa" => {
                    let seen = review["request"]["kind"]["version"]
                        .as_str()
                        .unwrap_or("none");
                    allow(
                        review,
                        patch(json!([{"op": "add", "path": "/metadata/labels",
                        "value": merged(labels, "seen-as", seen)}])),
                    )
                }
                "/exact" => deny(
                    review,
                    json!({"code": 403, "reason": "Forbidden", "message": "exact rules matched"}),
                ),
                "/conditions" => deny(
                    review,
                    json!({"code": 403, "reason": "Forbidden", "message": "matched by its conditions"}),
                ),
                "/validate" if labels["deny"] == "true" => deny(
                    review,
                    json!({"code": 403, "reason": "Forbidden", "message": "no denial labels allowed"}),
                ),
                _ => allow(review, json!({})),
            }
        }),
    )
}

/// The object's labels with one more.
fn merged(labels: &Value, key: &str, value: &str) -> Value {
    let mut out = labels.as_object().cloned().unwrap_or_default();
    out.insert(key.into(), json!(value));
    Value::Object(out)
}

fn hook(name: &str, client: Value, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": client,
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(h), Some(e)) = (hook.as_object_mut(), extra.as_object()) {
        h.extend(e.clone());
    }
    hook
}

fn configuration(kind: &str, name: &str, hooks: Vec<Value>) -> String {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name, "labels": {"deny": "true"}}, "webhooks": hooks})
    .to_string()
}

fn labels_of(s: &Server, ns: &str, name: &str) -> Value {
    s.json(&["get", "configmap", name, "-n", ns])["metadata"]["labels"].clone()
}

fn refused(s: &Server, manifest: &str) -> String {
    let out = s.manifest_output(&["create", "-f", "-"], manifest);
    let said = output_text(&out);
    assert!(!out.status.success(), "should be refused: {said}");
    said
}

fn configmap(ns: &str, name: &str, labels: Value) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels}})
    .to_string()
}

fn webhooks(s: &Server) {
    let hooks = server();
    let url = |path: &str| json!({"url": format!("https://127.0.0.1:{}{path}", hooks.port), "caBundle": hooks.ca_bundle});
    s.kubectl(&["create", "namespace", "hooked"]);
    s.kubectl(&["label", "namespace", "hooked", "hooks=on"]);
    s.kubectl(&["create", "namespace", "plain"]);

    // Mutating by URL, for namespaces labelled hooks=on.
    s.with_manifest(
        "create",
        &configuration(
            "MutatingWebhookConfiguration",
            "mutate",
            vec![hook(
                "mutate.webhooks.test",
                url("/mutate"),
                json!({"namespaceSelector": {"matchLabels": {"hooks": "on"}}}),
            )],
        ),
    );
    let mut n = 0;
    eventually("the mutating webhook acting", || {
        n += 1;
        let name = format!("probe-{n}");
        let out = s.kubectl_raw(&["create", "configmap", &name, "-n", "hooked"]);
        output_text(&out).contains("Warning: mutated by the test webhook")
            && labels_of(s, "hooked", &name)["mutated"] == "url"
    });
    s.kubectl(&["create", "configmap", "untouched", "-n", "plain"]);
    assert!(labels_of(s, "plain", "untouched").get("mutated").is_none());
    let review = hooks.received("/mutate").pop().unwrap_or_default();
    let request = &review["request"];
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(request["namespace"], "hooked");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert!(request["userInfo"]["username"].is_string(), "{request}");
    assert_eq!(request["dryRun"], false);

    // By Service: its EndpointSlice names the server; its DNS name is verified.
    s.kubectl(&["create", "namespace", "webhooks"]);
    s.with_manifest(
        "create",
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks", "namespace": "webhooks"},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hooks.port}]}})
        .to_string(),
    );
    s.with_manifest(
        "create",
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "hooks-1", "namespace": "webhooks",
                "labels": {"kubernetes.io/service-name": "hooks"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": hooks.port, "protocol": "TCP"}]})
        .to_string(),
    );
    s.with_manifest(
        "create",
        &configuration(
            "MutatingWebhookConfiguration",
            "service",
            vec![hook(
                "service.webhooks.test",
                json!({"service": {"namespace": "webhooks", "name": "hooks", "path": "/by-service"},
                    "caBundle": hooks.ca_bundle}),
                json!({"namespaceSelector": {"matchLabels": {"hooks": "on"}}}),
            )],
        ),
    );
    eventually("the Service's webhook acting", || {
        n += 1;
        let name = format!("probe-{n}");
        s.kubectl(&["create", "configmap", &name, "-n", "hooked"]);
        labels_of(s, "hooked", &name)["via"] == "service"
    });

    // Validating: upstream's words, the webhook's code and reason.
    s.with_manifest(
        "create",
        &configuration(
            "ValidatingWebhookConfiguration",
            "validate",
            vec![hook("validate.webhooks.test", url("/validate"), json!({}))],
        ),
    );
    let mut said = String::new();
    eventually("the validating webhook refusing", || {
        n += 1;
        let out = s.manifest_output(
            &["create", "-f", "-"],
            &configmap("plain", &format!("denied-{n}"), json!({"deny": "true"})),
        );
        said = output_text(&out);
        !out.status.success()
    });
    assert!(
        said.contains(r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "validate.webhooks.test" denied the request: no denial labels allowed"#),
        "{said}"
    );
    s.with_manifest(
        "create",
        &configmap("plain", "allowed", json!({"deny": "false"})),
    );
    // Webhooks never see webhook configurations (this one carries deny=true).
    assert!(!hooks
        .received("/validate")
        .iter()
        .any(|r| r["request"]["resource"]["group"] == "admissionregistration.k8s.io"));

    // Dry runs: seen by side-effect-free webhooks, with dryRun set.
    s.kubectl(&[
        "create",
        "configmap",
        "dry",
        "-n",
        "plain",
        "--dry-run=server",
    ]);
    let last = hooks.received("/validate").pop().unwrap_or_default();
    assert_eq!(last["request"]["dryRun"], true, "{last}");
    assert_eq!(last["request"]["name"], "dry");

    // A webhook that cannot be called: Fail refuses, Ignore passes over.
    let down = json!({"url": "https://127.0.0.1:1/", "caBundle": hooks.ca_bundle});
    s.with_manifest(
        "create",
        &configuration(
            "ValidatingWebhookConfiguration",
            "down",
            vec![
                hook("ignored.webhooks.test", down.clone(), json!({"failurePolicy": "Ignore",
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "plain"}}})),
                hook("down.webhooks.test", down, json!({"failurePolicy": "Fail",
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "hooked"}}})),
            ],
        ),
    );
    let mut said = String::new();
    eventually("the unreachable webhook failing", || {
        n += 1;
        let out = s.manifest_output(
            &["create", "-f", "-"],
            &configmap("hooked", &format!("down-{n}"), json!({})),
        );
        said = output_text(&out);
        !out.status.success()
    });
    assert!(
        said.contains(r#"Internal error occurred: failed calling webhook "down.webhooks.test": failed to call webhook: Post "https://127.0.0.1:1/?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused"#),
        "{said}"
    );
    s.with_manifest("create", &configmap("plain", "ignored", json!({})));

    // Reinvocation: the first webhook is called again once the second changed the object.
    s.kubectl(&["create", "namespace", "reinvoked"]);
    let in_namespace = |ns: &str| json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}});
    let mut first = hook(
        "first.webhooks.test",
        url("/first"),
        in_namespace("reinvoked"),
    );
    first["reinvocationPolicy"] = json!("IfNeeded");
    s.with_manifest(
        "create",
        &configuration(
            "MutatingWebhookConfiguration",
            "reinvoked",
            vec![
                first,
                hook(
                    "second.webhooks.test",
                    url("/second"),
                    in_namespace("reinvoked"),
                ),
            ],
        ),
    );
    eventually("the reinvoked webhook", || {
        n += 1;
        let name = format!("again-{n}");
        s.kubectl(&["create", "configmap", &name, "-n", "reinvoked"]);
        let labels = labels_of(s, "reinvoked", &name);
        labels["second"] == "yes" && labels["first"] == "after-second"
    });
    let calls = hooks
        .received("/first")
        .into_iter()
        .filter(|r| r["request"]["name"] == format!("again-{n}").as_str())
        .count();
    assert_eq!(calls, 2, "the IfNeeded webhook is called twice");

    // A webhook slower than its timeout fails the request (Fail).
    s.kubectl(&["create", "namespace", "slow"]);
    let mut slow = hook("slow.webhooks.test", url("/slow"), in_namespace("slow"));
    slow["timeoutSeconds"] = json!(1);
    s.with_manifest(
        "create",
        &configuration("ValidatingWebhookConfiguration", "slow", vec![slow]),
    );
    let mut said = String::new();
    eventually("the slow webhook timing out", || {
        n += 1;
        let out = s.manifest_output(
            &["create", "-f", "-"],
            &configmap("slow", &format!("slow-{n}"), json!({})),
        );
        said = output_text(&out);
        !out.status.success()
    });
    assert!(
        said.contains(&format!(r#"Internal error occurred: failed calling webhook "slow.webhooks.test": failed to call webhook: Post "https://127.0.0.1:{}/slow?timeout=1s": context deadline exceeded"#, hooks.port)),
        "{said}"
    );
    s.kubectl(&["delete", "validatingwebhookconfiguration", "slow"]);

    // matchConditions: only names the condition accepts reach the webhook.
    s.kubectl(&["create", "namespace", "conditions"]);
    let mut conditional = hook(
        "conditions.webhooks.test",
        url("/conditions"),
        in_namespace("conditions"),
    );
    // ... and whose requester may list secrets there (the authorizer library, asked as the
    // requesting user).
    conditional["matchConditions"] = json!([{"name": "prefixed",
        "expression": "object.metadata.name.startsWith('mc-')"},
        {"name": "secret-listers",
        "expression": "authorizer.group('').resource('secrets').namespace('conditions').check('list').allowed()"}]);
    s.with_manifest(
        "create",
        &configuration(
            "ValidatingWebhookConfiguration",
            "conditions",
            vec![conditional],
        ),
    );
    eventually("the conditional webhook refusing", || {
        n += 1;
        let out = s.manifest_output(
            &["create", "-f", "-"],
            &configmap("conditions", &format!("mc-{n}"), json!({})),
        );
        output_text(&out).contains(r#"admission webhook "conditions.webhooks.test" denied the request: matched by its conditions"#)
    });
    s.with_manifest("create", &configmap("conditions", "other", json!({})));
    assert!(!hooks
        .received("/conditions")
        .iter()
        .any(|r| r["request"]["name"] == "other"));
    // jane may create configmaps there but not list secrets: passed over.
    s.kubectl(&[
        "create",
        "role",
        "cm",
        "-n",
        "conditions",
        "--verb=create",
        "--resource=configmaps",
    ]);
    s.kubectl(&[
        "create",
        "rolebinding",
        "jane-cm",
        "-n",
        "conditions",
        "--role=cm",
        "--user=jane",
    ]);
    eventually("jane's configmap created", || {
        s.manifest_output(
            &["--as=jane", "create", "-f", "-"],
            &configmap("conditions", "mc-jane", json!({})),
        )
        .status
        .success()
    });
    assert!(!hooks
        .received("/conditions")
        .iter()
        .any(|r| r["request"]["name"] == "mc-jane"));

    // matchPolicy: rules naming autoscaling/v1 take an autoscaling/v2 request in through v1
    // (Equivalent, the default): the webhook sees the object in v1 and its patch lands;
    // with Exact they do not.
    s.kubectl(&["create", "namespace", "hpa"]);
    let hpa_rules = json!({"rules": [{"operations": ["CREATE"], "apiGroups": ["autoscaling"],
        "apiVersions": ["v1"], "resources": ["horizontalpodautoscalers"]}]});
    let mut equivalent = hook("equivalent.webhooks.test", url("/hpa"), in_namespace("hpa"));
    equivalent["rules"] = hpa_rules["rules"].clone();
    let mut exact = hook("exact.webhooks.test", url("/exact"), in_namespace("hpa"));
    exact["rules"] = hpa_rules["rules"].clone();
    exact["matchPolicy"] = json!("Exact");
    s.with_manifest(
        "create",
        &configuration(
            "MutatingWebhookConfiguration",
            "equivalent",
            vec![equivalent],
        ),
    );
    s.with_manifest(
        "create",
        &configuration("ValidatingWebhookConfiguration", "exact", vec![exact]),
    );
    let hpa = |name: &str| {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "hpa"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60}}}]}})
        .to_string()
    };
    let mut name = String::new();
    eventually("the equivalent webhook acting", || {
        n += 1;
        name = format!("scaler-{n}");
        s.with_manifest("create", &hpa(&name));
        let got = s.json(&["get", "hpa.v2.autoscaling", &name, "-n", "hpa"]);
        got["metadata"]["labels"]["seen-as"] == "v1"
    });
    let review = hooks
        .received("/hpa")
        .into_iter()
        .find(|r| r["request"]["name"] == name.as_str())
        .unwrap_or_default();
    let request = &review["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"})
    );
    assert_eq!(
        request["requestKind"],
        json!({"group": "autoscaling", "version": "v2", "kind": "HorizontalPodAutoscaler"})
    );
    assert_eq!(request["resource"]["version"], "v1");
    assert_eq!(request["requestResource"]["version"], "v2");
    assert_eq!(request["object"]["apiVersion"], "autoscaling/v1");
    assert_eq!(
        request["object"]["spec"]["targetCPUUtilizationPercentage"], 60,
        "{request}"
    );
    // The stored object is still v2's, the patch converted back.
    let got = s.json(&["get", "hpa.v2.autoscaling", &name, "-n", "hpa"]);
    assert_eq!(
        got["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        60
    );
    assert!(
        hooks.received("/exact").is_empty(),
        "Exact rules took a v2 request"
    );

    // v1 takes only side-effect-free webhooks, and at most 30 s.
    let mut unknown = hook(
        "unknown.webhooks.test",
        url("/validate"),
        json!({"sideEffects": "Unknown"}),
    );
    unknown["timeoutSeconds"] = json!(31);
    let said = refused(
        s,
        &configuration("ValidatingWebhookConfiguration", "unknown", vec![unknown]),
    );
    assert!(
        said.contains(r#"webhooks[0].sideEffects: Unsupported value: "Unknown": supported values: "None", "NoneOnDryRun""#)
            && said.contains("webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"),
        "{said}"
    );

    // Every call is measured in upstream's families.
    let metrics = s.get("/metrics").body;
    for line in [
        r#"apiserver_admission_webhook_request_total{code="200",name="mutate.webhooks.test",operation="CREATE",rejected="false",type="admit"}"#,
        r#"apiserver_admission_webhook_rejection_count{error_type="no_error",name="validate.webhooks.test",operation="CREATE",rejection_code="403",type="validating"}"#,
        r#"apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error",name="down.webhooks.test",operation="CREATE",rejection_code="0",type="validating"}"#,
        r#"apiserver_admission_webhook_fail_open_count{name="ignored.webhooks.test",type="validating"}"#,
    ] {
        assert!(metrics.contains(line), "{line} missing:\n{metrics}");
    }
    assert!(metrics.contains("apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"mutate.webhooks.test\""));

    // A deleted configuration stops acting.
    s.kubectl(&["delete", "validatingwebhookconfiguration", "validate"]);
    eventually("the validating webhook gone", || {
        n += 1;
        s.manifest_output(
            &["create", "-f", "-"],
            &configmap("plain", &format!("after-{n}"), json!({"deny": "true"})),
        )
        .status
        .success()
    });
}

#[test]
fn admission_webhooks() {
    webhooks(&start());
}

#[test]
fn admission_webhooks_on_etcd() {
    webhooks(&start_on_etcd());
}
