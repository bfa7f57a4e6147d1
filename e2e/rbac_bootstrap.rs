//! The bootstrap RBAC policy with the real kubectl: the server starts with upstream's default
//! ClusterRoles, bindings and kube-system roles, the aggregated `view` role holds the rules of
//! the roles labelled into it, and a restart puts back what a user trimmed from an
//! auto-updated role while keeping a role they marked autoupdate=false as they left it.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

/// How long a condition may take to hold.
const WAIT: Duration = Duration::from_secs(30);

const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

#[test]
fn bootstrap_policy_on_the_embedded_store() {
    bootstrap_policy(start_embedded_with(&["--nodes", "0"]));
}

#[test]
fn bootstrap_policy_on_etcd() {
    bootstrap_policy(start_on_etcd_with(&["--nodes", "0"]));
}

fn names(s: &Server, args: &[&str]) -> Vec<String> {
    s.kubectl(args)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

fn rules(s: &Server, role: &str) -> Vec<Value> {
    s.json(&["get", "clusterrole", role])["rules"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Whether `rules` let `verb` be done on core `resource`.
fn grants(rules: &[Value], verb: &str, resource: &str) -> bool {
    let has = |r: &Value, field: &str, want: &str| {
        r[field]
            .as_array()
            .is_some_and(|v| v.iter().any(|x| x == want || x == "*"))
    };
    rules
        .iter()
        .any(|r| has(r, "apiGroups", "") && has(r, "resources", resource) && has(r, "verbs", verb))
}

fn bootstrap_policy(mut s: Server) {
    let roles = names(&s, &["get", "clusterroles"]);
    for role in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:node",
        "system:kube-scheduler",
        "system:controller:clusterrole-aggregation-controller",
        "system:controller:namespace-controller",
    ] {
        assert!(
            roles.iter().any(|r| r == role),
            "no clusterrole {role} in {roles:?}"
        );
    }
    let bindings = names(&s, &["get", "clusterrolebindings"]);
    for binding in [
        "cluster-admin",
        "system:discovery",
        "system:public-info-viewer",
    ] {
        assert!(
            bindings.iter().any(|b| b == binding),
            "no binding {binding}"
        );
    }
    let admin = s.json(&["get", "clusterrolebinding", "cluster-admin"]);
    assert_eq!(
        admin["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}])
    );
    assert_eq!(
        admin["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    assert_eq!(admin["metadata"]["annotations"][AUTOUPDATE], "true");
    let system_roles = names(&s, &["get", "roles", "-n", "kube-system"]);
    assert!(system_roles
        .iter()
        .any(|r| r == "extension-apiserver-authentication-reader"));

    // view gathers its carrier's rules; edit and admin gather view's.
    test_support::wait_until("view to aggregate pods get/list/watch", WAIT, || {
        let view = rules(&s, "view");
        ["get", "list", "watch"]
            .iter()
            .all(|v| grants(&view, v, "pods"))
    });
    assert!(!grants(&rules(&s, "view"), "create", "pods"));
    test_support::wait_until("admin to aggregate view's and edit's rules", WAIT, || {
        let admin = rules(&s, "admin");
        grants(&admin, "watch", "pods") && grants(&admin, "create", "pods")
    });

    // A user trims an auto-updated role, and marks another autoupdate=false and trims it.
    let trimmed = json!([{"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"], "verbs": ["create"]}]);
    let patch = json!([{"op": "replace", "path": "/rules", "value": trimmed}]).to_string();
    s.kubectl(&[
        "patch",
        "clusterrole",
        "system:basic-user",
        "--type=json",
        "-p",
        &patch,
    ]);
    let mine = json!([{"nonResourceURLs": ["/version"], "verbs": ["get"]}]);
    let patch = json!([{"op": "replace", "path": "/rules", "value": mine}]).to_string();
    s.kubectl(&[
        "patch",
        "clusterrole",
        "system:discovery",
        "--type=json",
        "-p",
        &patch,
    ]);
    s.kubectl(&[
        "annotate",
        "clusterrole",
        "system:discovery",
        &format!("{AUTOUPDATE}=false"),
        "--overwrite",
    ]);

    s.crash_and_restart();

    assert_eq!(
        rules(&s, "system:discovery"),
        mine.as_array().cloned().unwrap_or_default()
    );
    let discovery = s.json(&["get", "clusterrole", "system:discovery"]);
    assert_eq!(discovery["metadata"]["annotations"][AUTOUPDATE], "false");
    let basic = rules(&s, "system:basic-user");
    assert_eq!(basic[0], trimmed[0], "the user's rule stays first");
    let has = |group: &str, resource: &str| {
        basic.iter().any(|r| {
            r["apiGroups"] == json!([group])
                && r["resources"] == json!([resource])
                && r["verbs"] == json!(["create"])
        })
    };
    assert!(
        has("authorization.k8s.io", "selfsubjectrulesreviews"),
        "{basic:?}"
    );
    assert!(
        has("authentication.k8s.io", "selfsubjectreviews"),
        "{basic:?}"
    );
}
