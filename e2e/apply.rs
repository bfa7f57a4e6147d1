//! Server-side apply (issue 14) through the real binary, on both backends: `kubectl apply
//! --server-side` creating, updating and removing fields, conflicts and `--force-conflicts`,
//! shared ownership, server-side dry run and `kubectl diff --server-side`, the upgrade from
//! client-side apply, a custom resource's `x-kubernetes-list-type: map` list owned item by
//! item, the managedFields every write records, and plain-HTTP apply requests upstream
//! refuses. Every expectation is kube-apiserver's (test/integration/apiserver/apply and
//! kubectl's apply command), checked on the stored state.

mod support;

use std::process::Output;

use serde_json::{json, Value};
use support::managed::{
    assert_timed, assert_well_formed, entry, fields_at, managers, owners, owns, with_managed_fields,
};
use support::{
    start, start_embedded_with, start_on_etcd, start_on_etcd_with, Kubectl, Response, Server,
};

const APPLY: &str = "application/apply-patch+yaml";

/// `kubectl apply --server-side -f -` with the manifest on stdin, whatever the outcome.
fn ssa(s: &Server, manifest: &str, extra: &[&str]) -> Output {
    let mut args = vec!["apply", "--server-side", "-f", "-"];
    args.extend(extra);
    s.manifest_output(&args, manifest)
}

/// [`ssa`] that must succeed; returns stdout.
fn ssa_ok(s: &Server, manifest: &str, extra: &[&str]) -> String {
    let out = ssa(s, manifest, extra);
    assert!(
        out.status.success(),
        "kubectl apply --server-side {extra:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// [`ssa`] that must fail; returns stderr.
fn ssa_err(s: &Server, manifest: &str, extra: &[&str]) -> String {
    let out = ssa(s, manifest, extra);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "kubectl apply --server-side {extra:?} should have failed: {}{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// An apply PATCH over plain HTTP (`query` without the `?`).
fn apply_http(s: &Server, path: &str, query: &str, body: &str) -> Response {
    let target = if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{query}")
    };
    s.request(
        "PATCH",
        &target,
        &[("Content-Type", APPLY), ("Accept", "application/json")],
        body.as_bytes(),
    )
}

/// The metav1.Status of a failed response, checked to carry `code`.
fn failure(r: &Response, code: u16) -> Value {
    assert_eq!(r.status, code, "{}", r.body);
    let status = r.json();
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["status"], "Failure", "{status}");
    assert_eq!(status["code"], code, "{status}");
    status
}

fn cm(s: &Server, name: &str) -> Value {
    with_managed_fields(s, &["get", "configmap", name])
}

fn rv(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

const SETTINGS: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    team: a
data:
  color: blue
  size: L
";

#[test]
fn kubectl_server_side_apply() {
    server_side_apply(&start());
}

#[test]
fn kubectl_server_side_apply_on_etcd() {
    server_side_apply(&start_on_etcd());
}

fn server_side_apply(s: &Server) {
    // Create: the object is made, owned by kubectl's Apply entry, with no last-applied
    // annotation (that is client-side apply's).
    let out = ssa_ok(s, SETTINGS, &[]);
    assert!(
        out.contains("configmap/settings serverside-applied"),
        "{out}"
    );
    let obj = cm(s, "settings");
    assert_eq!(obj["data"], json!({"color": "blue", "size": "L"}));
    assert_eq!(obj["metadata"]["labels"]["team"], "a");
    assert!(
        obj["metadata"]["annotations"]
            .get("kubectl.kubernetes.io/last-applied-configuration")
            .is_none(),
        "{obj}"
    );
    assert_eq!(managers(&obj), ["kubectl"], "{obj}");
    let kubectl = entry(&obj, "kubectl", "Apply").expect("kubectl's Apply entry");
    assert_eq!(kubectl["apiVersion"], "v1");
    assert_eq!(kubectl["fieldsType"], "FieldsV1");
    assert_timed(&kubectl);
    assert!(owns(&kubectl, &["f:data", "f:color"]), "{kubectl}");
    assert!(owns(&kubectl, &["f:data", "f:size"]), "{kubectl}");
    assert!(
        owns(&kubectl, &["f:metadata", "f:labels", "f:team"]),
        "{kubectl}"
    );
    assert!(
        !owns(&kubectl, &["f:metadata", "f:resourceVersion"]),
        "{kubectl}"
    );
    assert_well_formed(&obj);

    // The same configuration again changes nothing: no write, the same resourceVersion.
    let before = rv(&obj);
    ssa_ok(s, SETTINGS, &[]);
    assert_eq!(rv(&cm(s, "settings")), before, "a no-op apply wrote");

    // Update.
    ssa_ok(s, &SETTINGS.replace("color: blue", "color: green"), &[]);
    let obj = cm(s, "settings");
    assert_eq!(obj["data"], json!({"color": "green", "size": "L"}));
    assert_ne!(rv(&obj), before);
    assert_eq!(managers(&obj), ["kubectl"], "{obj}");

    // A field left out of the configuration is removed: nobody else owns it.
    let without_size = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    team: a
data:
  color: green
";
    ssa_ok(s, without_size, &[]);
    let obj = cm(s, "settings");
    assert_eq!(obj["data"], json!({"color": "green"}), "{obj}");
    let kubectl = entry(&obj, "kubectl", "Apply").expect("kubectl's Apply entry");
    assert!(!owns(&kubectl, &["f:data", "f:size"]), "{kubectl}");

    // Another manager changes a field kubectl applied: kubectl's next apply of its own value
    // conflicts, names the manager and the field, and changes nothing.
    s.kubectl(&[
        "patch",
        "configmap",
        "settings",
        "--type=merge",
        "-p",
        r#"{"data":{"color":"red"}}"#,
    ]);
    let obj = cm(s, "settings");
    assert_eq!(
        owners(&obj, &["f:data", "f:color"]),
        ["kubectl-patch/Update"],
        "{obj}"
    );
    let stderr = ssa_err(s, without_size, &[]);
    assert!(
        stderr.contains(
            r#"Apply failed with 1 conflict: conflict with "kubectl-patch" using v1: .data.color"#
        ),
        "{stderr}"
    );
    assert!(stderr.contains("--force-conflicts"), "{stderr}");
    assert_eq!(cm(s, "settings")["data"]["color"], "red");

    // --force-conflicts takes the field: the value is kubectl's and only kubectl owns it (the
    // patcher's entry, left empty, is dropped).
    ssa_ok(s, without_size, &["--force-conflicts"]);
    let obj = cm(s, "settings");
    assert_eq!(obj["data"]["color"], "green");
    assert_eq!(
        owners(&obj, &["f:data", "f:color"]),
        ["kubectl/Apply"],
        "{obj}"
    );
    assert!(entry(&obj, "kubectl-patch", "Update").is_none(), "{obj}");

    // Server-side dry run: the answer shows the change, nothing is stored.
    let before = rv(&obj);
    let dry = ssa_ok(
        s,
        &without_size.replace("color: green", "color: purple"),
        &["--dry-run=server", "-o", "json"],
    );
    let dry: Value = serde_json::from_str(&dry).expect("dry-run output is JSON");
    assert_eq!(dry["data"]["color"], "purple", "{dry}");
    let obj = cm(s, "settings");
    assert_eq!(obj["data"]["color"], "green");
    assert_eq!(rv(&obj), before);

    // kubectl diff --server-side: a server-side dry-run apply, shown as a diff (exit 1: there
    // are differences), not stored.
    let diff = s.manifest_output(
        &["diff", "--server-side", "-f", "-"],
        &without_size.replace("color: green", "color: purple"),
    );
    let stdout = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(
        diff.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    assert!(stdout.contains("-  color: green"), "{stdout}");
    assert!(stdout.contains("+  color: purple"), "{stdout}");
    let obj = cm(s, "settings");
    assert_eq!(obj["data"]["color"], "green");
    assert_eq!(rv(&obj), before);
    // No difference: exit 0.
    let same = s.manifest_output(&["diff", "--server-side", "-f", "-"], without_size);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&same.stdout),
        String::from_utf8_lossy(&same.stderr)
    );

    // -o yaml --show-managed-fields prints the entries; without the flag kubectl hides them.
    let yaml = s.kubectl(&[
        "get",
        "configmap",
        "settings",
        "-o",
        "yaml",
        "--show-managed-fields",
    ]);
    assert!(yaml.contains("managedFields:"), "{yaml}");
    for needle in [
        "manager: kubectl",
        "operation: Apply",
        "apiVersion: v1",
        "fieldsType: FieldsV1",
        "fieldsV1:",
        "time: ",
        "f:color: {}",
    ] {
        assert!(yaml.contains(needle), "{needle} missing:\n{yaml}");
    }
    let parsed: Value = serde_yaml_ng::from_str(&yaml).expect("kubectl -o yaml parses");
    assert_well_formed(&parsed);
    let hidden = s.kubectl(&["get", "configmap", "settings", "-o", "yaml"]);
    assert!(!hidden.contains("managedFields"), "{hidden}");

    shared_ownership(s);
    deployment_lists(s);
}

/// Two managers applying the same value share the field; it stays while either still
/// applies it and goes when the last one drops it.
fn shared_ownership(s: &Server) {
    let with_key = "apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
data:
  key: v
";
    let without_key = "apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
";
    ssa_ok(s, with_key, &["--field-manager=a"]);
    ssa_ok(s, with_key, &["--field-manager=b"]);
    let obj = cm(s, "shared");
    assert_eq!(obj["data"]["key"], "v");
    let mut shared = owners(&obj, &["f:data", "f:key"]);
    shared.sort();
    assert_eq!(shared, ["a/Apply", "b/Apply"], "{obj}");

    // a drops it: b still applies it, so it stays, b's alone.
    ssa_ok(s, without_key, &["--field-manager=a"]);
    let obj = cm(s, "shared");
    assert_eq!(obj["data"]["key"], "v", "{obj}");
    assert_eq!(owners(&obj, &["f:data", "f:key"]), ["b/Apply"], "{obj}");

    // b drops it too: it goes.
    ssa_ok(s, without_key, &["--field-manager=b"]);
    let obj = cm(s, "shared");
    assert!(obj["data"].get("key").is_none(), "{obj}");
    assert!(owners(&obj, &["f:data", "f:key"]).is_empty(), "{obj}");
}

const WEB: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports:
        - containerPort: 80
          protocol: TCP
      - name: side
        image: busybox
";

/// Associative lists of a built-in kind: containers keyed by name, ports by containerPort and
/// protocol; an item or a port left out of the configuration is removed (upstream's
/// TestApplyRemoveContainerPort).
fn deployment_lists(s: &Server) {
    ssa_ok(s, WEB, &[]);
    let obj = with_managed_fields(s, &["get", "deployment", "web"]);
    let kubectl = entry(&obj, "kubectl", "Apply").expect("kubectl's Apply entry");
    assert_eq!(kubectl["apiVersion"], "apps/v1");
    let containers = ["f:spec", "f:template", "f:spec", "f:containers"];
    let web = [&containers[..], &[r#"k:{"name":"web"}"#]].concat();
    assert!(owns(&kubectl, &[&web[..], &["."]].concat()), "{kubectl}");
    assert!(
        owns(&kubectl, &[&web[..], &["f:image"]].concat()),
        "{kubectl}"
    );
    assert!(
        owns(
            &kubectl,
            &[
                &web[..],
                &["f:ports", r#"k:{"containerPort":80,"protocol":"TCP"}"#]
            ]
            .concat()
        ),
        "{kubectl}"
    );
    assert!(
        owns(
            &kubectl,
            &[&containers[..], &[r#"k:{"name":"side"}"#, "f:image"]].concat()
        ),
        "{kubectl}"
    );

    // The port and the sidecar left out: both removed, the other container kept.
    let smaller = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.26
";
    ssa_ok(s, smaller, &[]);
    let obj = with_managed_fields(s, &["get", "deployment", "web"]);
    let list = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(list.len(), 1, "{obj}");
    assert_eq!(list[0]["name"], "web");
    assert_eq!(list[0]["image"], "nginx:1.26");
    assert!(list[0].get("ports").is_none(), "{obj}");
    let kubectl = entry(&obj, "kubectl", "Apply").expect("kubectl's Apply entry");
    assert!(
        fields_at(
            &kubectl,
            &[&containers[..], &[r#"k:{"name":"side"}"#]].concat()
        )
        .is_null(),
        "{kubectl}"
    );
}

const CSA_WEB: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
    tier: backend
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.25
";

#[test]
fn kubectl_apply_upgrades_from_client_side_apply() {
    upgrade_from_client_side(&start());
}

#[test]
fn kubectl_apply_upgrades_from_client_side_apply_on_etcd() {
    upgrade_from_client_side(&start_on_etcd());
}

fn upgrade_from_client_side(s: &Server) {
    // Client-side apply: the last-applied annotation, an Update entry of
    // kubectl-client-side-apply.
    assert!(s
        .with_manifest("apply", CSA_WEB)
        .contains("deployment.apps/web created"));
    let obj = with_managed_fields(s, &["get", "deployment", "web"]);
    let last_applied = "kubectl.kubernetes.io/last-applied-configuration";
    assert!(
        obj["metadata"]["annotations"][last_applied].is_string(),
        "{obj}"
    );
    let csa = entry(&obj, "kubectl-client-side-apply", "Update")
        .expect("kubectl-client-side-apply's Update entry");
    assert_eq!(csa["apiVersion"], "apps/v1");
    assert_timed(&csa);
    assert!(owns(&csa, &["f:spec", "f:replicas"]), "{csa}");
    assert!(
        owns(
            &csa,
            &["f:metadata", "f:annotations", &format!("f:{last_applied}")]
        ),
        "{csa}"
    );

    // Another manager applying a different replica count conflicts with the client-side
    // applier, over HTTP with upstream's Status ...
    let changed = CSA_WEB
        .replace("replicas: 2", "replicas: 3")
        .replace("nginx:1.25", "nginx:1.26")
        .replace("    tier: backend\n", "");
    let other = CSA_WEB.replace("replicas: 2", "replicas: 3");
    let as_json: Value = serde_yaml_ng::from_str(&other).expect("manifest");
    let conflict = apply_http(
        s,
        "/apis/apps/v1/namespaces/default/deployments/web",
        "fieldManager=other",
        &as_json.to_string(),
    );
    let status = failure(&conflict, 409);
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["message"],
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas"#
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{
            "reason": "FieldManagerConflict",
            "message": "conflict with \"kubectl-client-side-apply\" using apps/v1",
            "field": ".spec.replicas"
        }]),
        "{status}"
    );
    // ... and through kubectl, which says what to do.
    let stderr = ssa_err(s, &other, &["--field-manager=other"]);
    assert!(
        stderr.contains(
            r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas"#
        ),
        "{stderr}"
    );
    let obj = with_managed_fields(s, &["get", "deployment", "web"]);
    assert_eq!(obj["spec"]["replicas"], 2);
    assert!(entry(&obj, "other", "Apply").is_none(), "{obj}");

    // kubectl's own server-side apply of a changed manifest takes over without conflicts:
    // the fields it changes still hold the last-applied values. kubectl then moves the
    // client-side applier's fields to its Apply entry and applies again, so the label the
    // manifest dropped goes too; the server keeps the annotation in step.
    let out = ssa(s, &changed, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("Warning"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("deployment.apps/web serverside-applied"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let obj = with_managed_fields(s, &["get", "deployment", "web"]);
    assert_eq!(obj["spec"]["replicas"], 3, "{obj}");
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );
    assert_eq!(obj["metadata"]["labels"], json!({"app": "web"}), "{obj}");
    let annotation = obj["metadata"]["annotations"][last_applied]
        .as_str()
        .unwrap_or_default();
    let recorded: Value = serde_json::from_str(annotation).expect("annotation is JSON");
    assert_eq!(recorded["spec"]["replicas"], 3, "{annotation}");
    assert_eq!(
        recorded["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.26",
        "{annotation}"
    );
    assert!(
        entry(&obj, "kubectl-client-side-apply", "Update").is_none(),
        "{obj}"
    );
    let kubectl = entry(&obj, "kubectl", "Apply").expect("kubectl's Apply entry");
    assert!(owns(&kubectl, &["f:spec", "f:replicas"]), "{kubectl}");
    assert_eq!(
        owners(&obj, &["f:spec", "f:replicas"]),
        ["kubectl/Apply"],
        "{obj}"
    );
    let keeper =
        entry(&obj, "kubectl-last-applied", "Apply").expect("kubectl-last-applied's Apply entry");
    // Its apply changed nothing (the annotation was already there), so, as upstream, the
    // entry has no time.
    assert!(keeper.get("time").is_none(), "{keeper}");
    assert!(
        owns(
            &keeper,
            &["f:metadata", "f:annotations", &format!("f:{last_applied}")]
        ),
        "{keeper}"
    );
    assert_well_formed(&obj);

    // From now on it is server-side apply: a field dropped from the manifest goes.
    ssa_ok(
        s,
        &changed.replace("  labels:\n    app: web\nspec:", "spec:"),
        &[],
    );
    let obj = s.json(&["get", "deployment", "web"]);
    assert!(obj["metadata"].get("labels").is_none(), "{obj}");
}

const GATEWAY_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gateways.net.example.com
spec:
  group: net.example.com
  scope: Namespaced
  names:
    plural: gateways
    singular: gateway
    kind: Gateway
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              listeners:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name:
                      type: string
                    port:
                      type: integer
";

fn gateway(listeners: &str) -> String {
    format!(
        "apiVersion: net.example.com/v1\nkind: Gateway\nmetadata:\n  name: edge\nspec:\n  listeners:{listeners}"
    )
}

#[test]
fn custom_resource_map_list_items_are_owned_per_manager() {
    map_list_items(&start());
}

#[test]
fn custom_resource_map_list_items_are_owned_per_manager_on_etcd() {
    map_list_items(&start_on_etcd());
}

fn map_list_items(s: &Server) {
    s.with_manifest("apply", GATEWAY_CRD);
    s.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/gateways.net.example.com",
        "--timeout=30s",
    ]);
    let http = r#"k:{"name":"http"}"#;
    let grpc = r#"k:{"name":"grpc"}"#;
    let listeners = ["f:spec", "f:listeners"];
    let get = || with_managed_fields(s, &["get", "gateway", "edge"]);
    let names = |obj: &Value| -> Vec<String> {
        obj["spec"]["listeners"]
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(|i| i["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };

    // Two managers, one item each: both kept, each owning its own.
    ssa_ok(
        s,
        &gateway("\n  - name: http\n    port: 80\n"),
        &["--field-manager=a"],
    );
    ssa_ok(
        s,
        &gateway("\n  - name: grpc\n    port: 9090\n"),
        &["--field-manager=b"],
    );
    let obj = get();
    let mut kept = names(&obj);
    kept.sort();
    assert_eq!(kept, ["grpc", "http"], "{obj}");
    let a = entry(&obj, "a", "Apply").expect("a's Apply entry");
    let b = entry(&obj, "b", "Apply").expect("b's Apply entry");
    assert_eq!(a["apiVersion"], "net.example.com/v1");
    for (e, mine, theirs) in [(&a, http, grpc), (&b, grpc, http)] {
        for leaf in [".", "f:name", "f:port"] {
            assert!(owns(e, &[&listeners[..], &[mine, leaf]].concat()), "{e}");
        }
        assert!(
            fields_at(e, &[&listeners[..], &[theirs]].concat()).is_null(),
            "{e}"
        );
    }
    assert_well_formed(&obj);

    // b setting a's item to another port conflicts with a, on that item's field.
    let stderr = ssa_err(
        s,
        &gateway("\n  - name: grpc\n    port: 9090\n  - name: http\n    port: 81\n"),
        &["--field-manager=b"],
    );
    assert!(
        stderr.contains(
            r#"Apply failed with 1 conflict: conflict with "a": .spec.listeners[name="http"].port"#
        ),
        "{stderr}"
    );
    assert_eq!(
        get()["spec"]["listeners"]
            .as_array()
            .and_then(|l| l.iter().find(|i| i["name"] == "http"))
            .map(|i| i["port"].clone()),
        Some(json!(80))
    );

    // a changes its item: no conflict, b's untouched.
    ssa_ok(
        s,
        &gateway("\n  - name: http\n    port: 8080\n"),
        &["--field-manager=a"],
    );
    let obj = get();
    let list = obj["spec"]["listeners"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let port = |name: &str| {
        list.iter()
            .find(|i| i["name"] == name)
            .map(|i| i["port"].clone())
    };
    assert_eq!(port("http"), Some(json!(8080)), "{obj}");
    assert_eq!(port("grpc"), Some(json!(9090)), "{obj}");

    // a drops its item: it goes, b's stays.
    ssa_ok(s, &gateway(" []\n"), &["--field-manager=a"]);
    let obj = get();
    assert_eq!(names(&obj), ["grpc"], "{obj}");
    assert_eq!(
        owners(&obj, &[&listeners[..], &[grpc, "f:port"]].concat()),
        ["b/Apply"],
        "{obj}"
    );
}

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
