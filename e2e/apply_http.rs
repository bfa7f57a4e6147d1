//! Server-side apply over plain HTTP (issue 14), on both backends: the requests upstream
//! refuses and their Status, the managedFields every write records and their reset, applies
//! to the status and scale subresources, and an applied Service.

mod support;

use serde_json::{json, Value};
use support::apply::*;
use support::managed::{assert_timed, assert_well_formed, entry, managers, owners, owns};
use support::{start, start_embedded_with, start_on_etcd, start_on_etcd_with, Kubectl, Server};

#[test]
fn apply_requests_over_http() {
    apply_over_http(&start());
}

#[test]
fn apply_requests_over_http_on_etcd() {
    apply_over_http(&start_on_etcd());
}

fn apply_over_http(s: &Server) {
    let path = "/api/v1/namespaces/default/configmaps/web";
    let body = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "data": {"key": "value"}
    })
    .to_string();

    // Without a fieldManager: PatchOptions are invalid, before anything is looked up.
    let status = failure(&apply_http(s, path, "", &body), 422);
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch"#
    );
    assert_eq!(status["details"]["group"], "meta.k8s.io");
    assert_eq!(status["details"]["kind"], "PatchOptions");
    assert_eq!(
        status["details"]["causes"],
        json!([{
            "reason": "FieldValueRequired",
            "message": "Required value: is required for apply patch",
            "field": "fieldManager"
        }])
    );
    assert_eq!(s.get(path).status, 404);

    // A body that is not an object: a YAML list, a scalar.
    for bad in ["- a\n- b\n", "just a string\n", "42"] {
        let status = failure(&apply_http(s, path, "fieldManager=test", bad), 400);
        assert_eq!(status["reason"], "BadRequest", "{bad:?}: {status}");
        assert!(
            status["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("error decoding YAML: ")),
            "{bad:?}: {status}"
        );
    }
    assert_eq!(s.get(path).status, 404);

    // Another kind, or another version of the kind, than the URL's.
    for (kind, api_version, expected) in [
        ("Secret", "v1", "invalid object type: /v1, Kind=Secret"),
        (
            "ConfigMap",
            "v2",
            "invalid object type: /v2, Kind=ConfigMap",
        ),
    ] {
        let wrong = json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": "web"}, "data": {"key": "dmFsdWU="}
        });
        let status = failure(
            &apply_http(s, path, "fieldManager=test", &wrong.to_string()),
            400,
        );
        assert_eq!(status["reason"], "BadRequest", "{status}");
        assert_eq!(status["message"], expected, "{status}");
    }
    assert_eq!(s.get(path).status, 404);

    // Apply creates (201), then updates (200); the answer carries the entry.
    let created = apply_http(s, path, "fieldManager=test", &body);
    assert_eq!(created.status, 201, "{}", created.body);
    let obj = created.json();
    assert_eq!(obj["data"]["key"], "value");
    let test = entry(&obj, "test", "Apply").expect("test's Apply entry");
    assert!(owns(&test, &["f:data", "f:key"]), "{test}");
    assert!(owns(&test, &["f:metadata", "f:labels", "f:app"]), "{test}");
    let again = apply_http(
        s,
        path,
        "fieldManager=test",
        &body.replace("\"value\"", "\"other\""),
    );
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(s.get(path).json()["data"]["key"], "other");
    let stored_rv = rv(&s.get(path).json());

    // managedFields may not be applied.
    let mut carrying: Value = serde_json::from_str(&body).expect("json");
    carrying["metadata"]["managedFields"] = json!([{
        "manager": "test", "operation": "Apply", "apiVersion": "v1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:key": {}}}
    }]);
    let status = failure(
        &apply_http(s, path, "fieldManager=test", &carrying.to_string()),
        400,
    );
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(status["message"], "metadata.managedFields must be nil");

    // A name other than the URL's.
    let renamed = body.replace("\"name\":\"web\"", "\"name\":\"api\"");
    assert_ne!(renamed, body);
    let status = failure(&apply_http(s, path, "fieldManager=test", &renamed), 400);
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("does not match the name on the URL")),
        "{status}"
    );

    // The same for an apply that would create: nothing is made under either name.
    let missing = "/api/v1/namespaces/default/configmaps/nothing";
    let status = failure(&apply_http(s, missing, "fieldManager=test", &renamed), 400);
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("(api) does not match the name on the URL (nothing)")),
        "{status}"
    );
    assert_eq!(s.get(missing).status, 404);
    let elsewhere = body.replace(
        "\"name\":\"web\"",
        "\"name\":\"nothing\",\"namespace\":\"kube-system\"",
    );
    let status = failure(
        &apply_http(s, missing, "fieldManager=test", &elsewhere),
        400,
    );
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("namespace of the provided object does not match")),
        "{status}"
    );

    // force is for apply only.
    let merge = s.request(
        "PATCH",
        &format!("{path}?force=true"),
        &[("Content-Type", "application/merge-patch+json")],
        br#"{"data":{"key":"x"}}"#,
    );
    let status = failure(&merge, 422);
    assert_eq!(
        status["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch"#
    );

    // None of the refused requests wrote.
    let stored = s.get(path).json();
    assert_eq!(rv(&stored), stored_rv);
    assert_eq!(stored["data"]["key"], "other");

    // A dry run (dryRun=All) answers the result and stores nothing.
    let dry = apply_http(
        s,
        path,
        "fieldManager=test&dryRun=All",
        &body.replace("\"value\"", "\"dry\""),
    );
    assert_eq!(dry.status, 200, "{}", dry.body);
    assert_eq!(dry.json()["data"]["key"], "dry");
    let stored = s.get(path).json();
    assert_eq!(stored["data"]["key"], "other");
    assert_eq!(rv(&stored), stored_rv);
}

#[test]
fn managed_fields_on_every_write() {
    managed_fields_on_writes(&start());
}

#[test]
fn managed_fields_on_every_write_on_etcd() {
    managed_fields_on_writes(&start_on_etcd());
}

fn managed_fields_on_writes(s: &Server) {
    // A plain create records an Update entry for its manager, maps marked with ".".
    s.kubectl(&["create", "configmap", "plain", "--from-literal=a=b"]);
    let obj = cm(s, "plain");
    assert_eq!(managers(&obj), ["kubectl-create"], "{obj}");
    let create = entry(&obj, "kubectl-create", "Update").expect("kubectl-create's Update entry");
    assert_eq!(create["apiVersion"], "v1");
    assert_timed(&create);
    assert!(owns(&create, &["f:data", "."]), "{create}");
    assert!(owns(&create, &["f:data", "f:a"]), "{create}");
    assert_well_formed(&obj);

    // Each writer gets its entry for what it changed.
    s.kubectl(&["label", "configmap", "plain", "tier=db"]);
    let obj = cm(s, "plain");
    assert_eq!(
        owners(&obj, &["f:metadata", "f:labels", "f:tier"]),
        ["kubectl-label/Update"],
        "{obj}"
    );
    assert_eq!(
        owners(&obj, &["f:data", "f:a"]),
        ["kubectl-create/Update"],
        "{obj}"
    );

    // A JSON patch setting managedFields to [{}] resets them; the object is otherwise kept.
    s.kubectl(&[
        "patch",
        "configmap",
        "plain",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/metadata/managedFields","value":[{}]}]"#,
    ]);
    let obj = cm(s, "plain");
    assert!(
        obj["metadata"]["managedFields"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{obj}"
    );
    assert_eq!(obj["data"]["a"], "b");
    assert_eq!(obj["metadata"]["labels"]["tier"], "db");

    // Until the next apply, updates are not tracked (upstream's skipNonAppliedManager)...
    s.kubectl(&["annotate", "configmap", "plain", "note=untracked"]);
    let obj = cm(s, "plain");
    assert_eq!(obj["metadata"]["annotations"]["note"], "untracked");
    assert!(
        obj["metadata"]["managedFields"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{obj}"
    );

    // ... which gives the fields already there to "before-first-apply" (an Update entry) and
    // its own to the applier.
    ssa_ok(
        s,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  labels:\n    owner: x\n",
        &["--field-manager=x"],
    );
    let obj = cm(s, "plain");
    assert_eq!(obj["data"]["a"], "b");
    assert_eq!(obj["metadata"]["labels"]["owner"], "x");
    let mut all = managers(&obj);
    all.sort();
    assert_eq!(all, ["before-first-apply", "x"], "{obj}");
    let before = entry(&obj, "before-first-apply", "Update").expect("before-first-apply's entry");
    for path in [
        &["f:data", "f:a"][..],
        &["f:metadata", "f:labels", "f:tier"],
        &["f:metadata", "f:annotations", "f:note"],
    ] {
        assert!(owns(&before, path), "{path:?}: {before}");
    }
    assert_eq!(
        owners(&obj, &["f:metadata", "f:labels", "f:owner"]),
        ["x/Apply"],
        "{obj}"
    );
    assert_well_formed(&obj);
}

#[test]
fn apply_to_status_and_scale() {
    status_and_scale(&start_embedded_with(&["--nodes", "0"]));
}

#[test]
fn apply_to_status_and_scale_on_etcd() {
    status_and_scale(&start_on_etcd_with(&["--nodes", "0"]));
}

/// The status and scale subresources take applies too, each owning only its part: a scale
/// applier conflicts with the applier of the Deployment's replicas, and a status applier's
/// spec fields are no one's.
fn status_and_scale(s: &Server) {
    let deployment = "/apis/apps/v1/namespaces/default/deployments/web";
    let config = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}
    });
    let created = apply_http(s, deployment, "fieldManager=deployer", &config.to_string());
    assert_eq!(created.status, 201, "{}", created.body);

    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "web"}, "spec": {"replicas": 5}})
    .to_string();
    let path = format!("{deployment}/scale");
    let status = failure(&apply_http(s, &path, "fieldManager=hpa", &scale), 409);
    assert_eq!(
        status["message"],
        r#"Apply failed with 1 conflict: conflict with "deployer": .spec.replicas"#
    );
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "FieldManagerConflict"
    );
    let forced = apply_http(s, &path, "fieldManager=hpa&force=true", &scale);
    assert_eq!(forced.status, 200, "{}", forced.body);
    assert_eq!(forced.json()["kind"], "Scale");
    assert_eq!(forced.json()["spec"]["replicas"], 5);
    let obj = s.get(deployment).json();
    assert_eq!(obj["spec"]["replicas"], 5);
    let entries = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let hpa = entries
        .iter()
        .find(|e| e["manager"] == "hpa")
        .unwrap_or_else(|| panic!("{entries:?}"));
    assert_eq!(hpa["operation"], "Apply");
    assert_eq!(hpa["subresource"], "scale");
    assert_eq!(hpa["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    let deployer = entries
        .iter()
        .find(|e| e["manager"] == "deployer")
        .expect("deployer");
    assert!(
        deployer["fieldsV1"]["f:spec"].get("f:replicas").is_none(),
        "{deployer}"
    );

    // A status apply: its condition is kept and owned; the spec it carries is ignored.
    let status_config = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"replicas": 9},
        "status": {"conditions": [{"type": "Custom", "status": "True"}]}})
    .to_string();
    let applied = apply_http(
        s,
        &format!("{deployment}/status"),
        "fieldManager=reporter",
        &status_config,
    );
    assert_eq!(applied.status, 200, "{}", applied.body);
    let obj = s.get(deployment).json();
    assert_eq!(
        obj["spec"]["replicas"], 5,
        "a status write leaves spec alone"
    );
    let conditions = obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        conditions.iter().any(|c| c["type"] == "Custom"),
        "{conditions:?}"
    );
    let entries = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let reporter = entries
        .iter()
        .find(|e| e["manager"] == "reporter")
        .unwrap_or_else(|| panic!("{entries:?}"));
    assert_eq!(reporter["subresource"], "status");
    assert_eq!(
        reporter["fieldsV1"],
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Custom\"}": {
            ".": {}, "f:status": {}, "f:type": {}}}}})
    );
}

#[test]
fn applied_services_are_defaulted_and_keep_their_address() {
    applied_service(&start());
}

#[test]
fn applied_services_are_defaulted_and_keep_their_address_on_etcd() {
    applied_service(&start_on_etcd());
}

/// An apply creates through the create path (the ClusterIP is allocated) and a port it adds
/// later is defaulted as upstream's decoder defaults it.
fn applied_service(s: &Server) {
    let one = "apiVersion: v1\nkind: Service\nmetadata: {name: svc}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n";
    ssa_ok(s, one, &[]);
    let created = s.json(&["get", "service", "svc"]);
    let ip = created["spec"]["clusterIP"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(ip.starts_with("10."), "{created}");
    let two = "apiVersion: v1\nkind: Service\nmetadata: {name: svc}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}, {port: 443, name: tls}]\n";
    ssa_ok(s, two, &[]);
    let svc = s.json(&["get", "service", "svc"]);
    assert_eq!(svc["spec"]["clusterIP"], ip.as_str());
    assert_eq!(
        svc["spec"]["ports"],
        json!([
            {"port": 80, "protocol": "TCP", "targetPort": 80},
            {"name": "tls", "port": 443, "protocol": "TCP", "targetPort": 443}
        ])
    );
}
