//! Server-side apply (issue 14) through the real binary, on both backends: `kubectl apply
//! --server-side` creating, updating and removing fields, conflicts and `--force-conflicts`,
//! shared ownership, server-side dry run and `kubectl diff --server-side`, the upgrade from
//! client-side apply, a custom resource's `x-kubernetes-list-type: map` list owned item by
//! item, the managedFields every write records, and plain-HTTP apply requests upstream
//! refuses. Every expectation is kube-apiserver's (test/integration/apiserver/apply and
//! kubectl's apply command), checked on the stored state.

mod support;

use serde_json::{json, Value};
use support::apply::*;
use support::managed::{
    assert_timed, assert_well_formed, entry, fields_at, managers, owners, owns, with_managed_fields,
};
use support::{start, start_on_etcd, Kubectl, Server};

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
