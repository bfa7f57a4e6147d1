use std::sync::{Arc, LazyLock};

use openapi::OpenApi;
use serde_json::{json, Value};

use super::{check, FieldSchemas, Findings, Schema};

/// Every built-in kind has a schema whether served or not: no resources needed.
static SCHEMAS: LazyLock<FieldSchemas> = LazyLock::new(|| {
    let schemas = FieldSchemas::default();
    schemas.set_source(Arc::new(OpenApi::new(Vec::new())));
    schemas
});

fn schema(group: &str, kind: &str) -> Arc<Schema> {
    SCHEMAS
        .get(group, "v1", kind)
        .unwrap_or_else(|| panic!("schema of {kind}"))
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web", "any.example.com/key": "v"},
                     "annotations": {"a": "b"}, "finalizers": ["x/y"],
                     "managedFields": [{"manager": "m", "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "nodeSelector": {"disk": "ssd"},
                    "containers": [{
                        "name": "web", "image": "nginx", "imagePullPolicy": "Always",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {"limits": {"cpu": "500m", "memory": 1073741824}},
                        "livenessProbe": {"httpGet": {"path": "/", "port": "http"}},
                        "env": [{"name": "A", "value": null}]
                    }]
                }
            }
        },
        "status": {"replicas": 3, "conditions": [{"type": "Available", "status": "True",
                   "lastUpdateTime": "2024-01-01T00:00:00Z"}]}
    })
}

fn run(kind: (&str, &str), obj: &mut Value) -> Findings {
    check(&schema(kind.0, kind.1), obj, true)
}

fn causes(findings: &Findings) -> Vec<(&str, &str, &str)> {
    findings
        .invalid
        .iter()
        .map(|c| (c.field.as_str(), c.kind.as_str(), c.message.as_str()))
        .collect()
}

#[test]
fn a_valid_deployment_passes_untouched() {
    let mut obj = deployment();
    let findings = run(("apps", "Deployment"), &mut obj);
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(obj, deployment());
}

#[test]
fn unknown_fields_at_every_depth_are_named_and_dropped() {
    let mut obj = deployment();
    obj["bogus"] = json!(1);
    obj["metadata"]["bogus"] = json!({"deep": true});
    obj["spec"]["bogus"] = json!(1);
    obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = json!("Never");
    obj["spec"]["template"]["spec"]["containers"][0]["ports"][0]["hostPortt"] = json!(1);
    let findings = run(("apps", "Deployment"), &mut obj);
    assert!(findings.invalid.is_empty(), "{findings:?}");
    assert_eq!(
        findings.unknown,
        [
            "bogus",
            "metadata.bogus",
            "spec.bogus",
            "spec.template.spec.containers[0].imagePullPolicyy",
            "spec.template.spec.containers[0].ports[0].hostPortt",
        ]
    );
    assert_eq!(obj, deployment(), "the unknown fields are gone");
}

#[test]
fn kept_when_asked_to() {
    let mut obj = deployment();
    obj["spec"]["bogus"] = json!(1);
    let findings = check(&schema("apps", "Deployment"), &mut obj, false);
    assert_eq!(findings.unknown, ["spec.bogus"]);
    assert_eq!(obj["spec"]["bogus"], 1);
}

#[test]
fn maps_raw_extensions_and_preserved_fields_take_any_key() {
    let mut secret = json!({"metadata": {"name": "s"}, "data": {"any-key": "YQ=="},
                            "stringData": {"other": "x"}, "type": "Opaque"});
    assert!(run(("", "Secret"), &mut secret).is_empty());
    // ControllerRevision.data is a RawExtension: whatever JSON it holds is kept.
    let mut revision = json!({"metadata": {"name": "r"}, "revision": 1,
                              "data": {"spec": {"anything": [1, {"at": "all"}]}}});
    let before = revision.clone();
    assert!(run(("apps", "ControllerRevision"), &mut revision).is_empty());
    assert_eq!(revision, before);
    // A CRD's schema holds itself: the cut recursion keeps every field below it.
    let mut crd = json!({"metadata": {"name": "a.b.c"}, "spec": {"group": "b.c", "versions": [{
        "name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
            "type": "object", "properties": {"n": {"type": "integer", "whatever": 1}}}}}}}]}});
    let findings = run(
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        &mut crd,
    );
    assert!(findings.is_empty(), "{findings:?}");
}

#[test]
fn preserve_unknown_fields_and_embedded_resources() {
    let schema = Schema::compile(&json!({
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
            "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                     "properties": {"n": {"type": "integer"}}},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}
        }
    }));
    let mut obj = json!({
        "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"},
        "open": {"n": 1, "free": {"form": true}},
        "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "nope": 1},
                     "spec": {"a": "b", "b": 1}}
    });
    let findings = check(&schema, &mut obj, true);
    assert_eq!(
        findings.unknown,
        ["embedded.metadata.nope", "embedded.spec.b"]
    );
    assert_eq!(obj["open"]["free"]["form"], true);
    let mut wrong = json!({"open": {"n": "one"}});
    let findings = check(&schema, &mut wrong, true);
    assert_eq!(causes(&findings)[0].0, "open.n");
}

#[test]
fn wrong_types_are_causes_with_paths() {
    let mut obj = deployment();
    obj["spec"]["replicas"] = json!("3");
    obj["spec"]["paused"] = json!("yes");
    obj["spec"]["selector"] = json!(["app"]);
    obj["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(80.5);
    obj["spec"]["template"]["spec"]["containers"][0]["args"] = json!({"a": 1});
    obj["metadata"]["labels"]["n"] = json!(1);
    let findings = run(("apps", "Deployment"), &mut obj);
    assert_eq!(
        causes(&findings),
        [
            (
                "metadata.labels.n",
                "FieldValueTypeInvalid",
                r#"Invalid value: "integer": metadata.labels.n in body must be of type string: "integer""#
            ),
            (
                "spec.paused",
                "FieldValueTypeInvalid",
                r#"Invalid value: "string": spec.paused in body must be of type boolean: "string""#
            ),
            (
                "spec.replicas",
                "FieldValueTypeInvalid",
                r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#
            ),
            (
                "spec.selector",
                "FieldValueTypeInvalid",
                r#"Invalid value: "array": spec.selector in body must be of type object: "array""#
            ),
            (
                "spec.template.spec.containers[0].args",
                "FieldValueTypeInvalid",
                r#"Invalid value: "object": spec.template.spec.containers[0].args in body must be of type array: "object""#
            ),
            (
                "spec.template.spec.containers[0].ports[0].containerPort",
                "FieldValueTypeInvalid",
                r#"Invalid value: "number": spec.template.spec.containers[0].ports[0].containerPort in body must be of type integer: "number""#
            ),
        ]
    );
}

#[test]
fn integers_keep_to_their_go_type() {
    let mut obj = deployment();
    obj["spec"]["replicas"] = json!(3_000_000_000_i64);
    obj["spec"]["revisionHistoryLimit"] = json!(-3_000_000_000_i64);
    obj["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(3_000_000_000_i64);
    obj["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = json!(u64::MAX);
    obj["spec"]["minReadySeconds"] = json!(5.0);
    let findings = run(("apps", "Deployment"), &mut obj);
    assert_eq!(
        causes(&findings),
        [
            ("spec.replicas", "FieldValueInvalid",
             "Invalid value: 3000000000: spec.replicas in body should be less than or equal to 2147483647"),
            ("spec.revisionHistoryLimit", "FieldValueInvalid",
             "Invalid value: -3000000000: spec.revisionHistoryLimit in body should be greater than or equal to -2147483648"),
            ("spec.template.spec.terminationGracePeriodSeconds", "FieldValueInvalid",
             "Invalid value: 18446744073709551615: spec.template.spec.terminationGracePeriodSeconds in body should be less than or equal to 9223372036854775807"),
        ]
    );
    // An integral float (YAML's 5.0) is the integer Go would have decoded.
    assert!(obj["spec"]["minReadySeconds"].is_i64());
}

#[test]
fn int_or_string_and_quantities_take_either() {
    let mut obj = deployment();
    let strategy = &mut obj["spec"]["strategy"]["rollingUpdate"];
    strategy["maxSurge"] = json!(2);
    strategy["maxUnavailable"] = json!("50%");
    let container = &mut obj["spec"]["template"]["spec"]["containers"][0];
    container["resources"]["requests"] = json!({"cpu": 0.5, "memory": "1Gi"});
    container["livenessProbe"]["httpGet"]["port"] = json!(8080);
    assert!(run(("apps", "Deployment"), &mut obj).is_empty());

    let mut obj = deployment();
    obj["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = json!(true);
    obj["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] = json!(1.5);
    obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = json!([]);
    let findings = run(("apps", "Deployment"), &mut obj);
    let fields: Vec<_> = causes(&findings)
        .iter()
        .map(|c| (c.0.to_string(), c.2.contains("must be of type")))
        .collect();
    assert_eq!(
        fields,
        [
            ("spec.strategy.rollingUpdate.maxSurge".to_string(), true),
            (
                "spec.strategy.rollingUpdate.maxUnavailable".to_string(),
                true
            ),
            (
                "spec.template.spec.containers[0].resources.limits.cpu".to_string(),
                true
            ),
        ]
    );
    assert!(findings.invalid[0]
        .message
        .ends_with(r#"must be of type integer,string: "boolean""#));
}

#[test]
fn nulls_are_accepted_anywhere() {
    let mut obj = json!({"metadata": {"name": "c", "labels": null}, "data": {"a": null},
                         "binaryData": null});
    assert!(run(("", "ConfigMap"), &mut obj).is_empty());
}

#[test]
fn unknown_fields_stop_being_listed_after_a_hundred() {
    let mut obj = json!({"metadata": {"name": "c"}});
    for i in 0..150 {
        obj[format!("f{i:03}")] = json!(i);
    }
    let findings = run(("", "ConfigMap"), &mut obj);
    assert_eq!(findings.unknown.len(), 100);
    assert_eq!(obj, json!({"metadata": {"name": "c"}}), "all dropped");
}

#[test]
fn kinds_without_a_schema_have_none() {
    assert!(SCHEMAS.get("example.com", "v1", "Nothing").is_none());
    assert!(FieldSchemas::default()
        .get("apps", "v1", "Deployment")
        .is_none());
    let again = SCHEMAS.get("apps", "v1", "Deployment");
    assert!(again.is_some_and(|s| Arc::ptr_eq(&s, &schema("apps", "Deployment"))));
}

#[test]
fn quantities_and_times_must_parse() {
    let mut good = deployment();
    let limits = &mut good["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
    for (i, q) in ["100m", "1.5Gi", "+5", ".5", "1e3", "2E-2", "7", "12Ei"]
        .iter()
        .enumerate()
    {
        limits[format!("example.com/q{i}")] = json!(q);
    }
    good["metadata"]["creationTimestamp"] = json!("2024-01-01T00:00:00+02:00");
    assert!(run(("apps", "Deployment"), &mut good).invalid.is_empty());

    let mut bad = deployment();
    bad["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = json!("lots");
    bad["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] =
        json!({"memory": "1.2.3Gi", "cpu": "5x"});
    bad["metadata"]["creationTimestamp"] = json!("yesterday");
    let findings = run(("apps", "Deployment"), &mut bad);
    let mut fields: Vec<&str> = findings.invalid.iter().map(|c| c.field.as_str()).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "metadata.creationTimestamp",
            "spec.template.spec.containers[0].resources.limits.cpu",
            "spec.template.spec.containers[0].resources.requests.cpu",
            "spec.template.spec.containers[0].resources.requests.memory",
        ]
    );
    let cpu = findings
        .invalid
        .iter()
        .find(|c| c.field.ends_with("limits.cpu"))
        .map(|c| c.message.as_str());
    assert_eq!(
        cpu,
        Some(
            r#"Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#
        )
    );
}
