//! Server-side apply after client-side apply (issue 14) through the real binary, on both
//! backends: `kubectl apply --server-side` takes over what kubectl's last-applied annotation
//! still describes without conflicts, as upstream's lastAppliedManager lets it, and keeps the
//! annotation in step; another manager gets the conflicts.

mod support;

use serde_json::{json, Value};
use support::apply::*;
use support::managed::{
    assert_timed, assert_well_formed, entry, owners, owns, with_managed_fields,
};
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

/// The deployment controller is off: a rollout writes the Deployment's status a dozen times in
/// a few hundred milliseconds, and kubectl's managed-fields migration, a patch conditioned on
/// the resourceVersion it read, gives up silently after five conflicts (as upstream's kubectl
/// does). The migration is what these tests check, not kubectl's race with a controller.
const NO_DEPLOYMENT_CONTROLLER: [&str; 1] = ["--controllers=*,-deployment-controller"];

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
    upgrade_from_client_side(&start_embedded_with(&NO_DEPLOYMENT_CONTROLLER));
}

#[test]
fn kubectl_apply_upgrades_from_client_side_apply_on_etcd() {
    upgrade_from_client_side(&start_on_etcd_with(&NO_DEPLOYMENT_CONTROLLER));
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
