//! Roles and bindings are validated as kube-apiserver validates them, seen through the real
//! kubectl on both backends: malformed ones are refused with upstream's messages, a binding's
//! roleRef cannot change, `kubectl replace` of a missing ClusterRole creates it, `kubectl auth
//! reconcile` writes a policy, and names with colons are fine.

mod support;

use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

#[test]
fn rbac_validation_embedded() {
    rbac_validation(start_embedded_with(&["--nodes", "0"]));
}

#[test]
fn rbac_validation_etcd() {
    rbac_validation(start_on_etcd_with(&["--nodes", "0"]));
}

const NO_VERBS: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: no-verbs, namespace: default}
rules:
- apiGroups: [""]
  resources: [pods]
"#;

const URLS_IN_ROLE: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: urls, namespace: default}
rules:
- nonResourceURLs: [/healthz]
  verbs: [get]
"#;

const BAD_SUBJECT: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bad-subject}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: ServiceAccount, name: default}
"#;

const MISSING_ROLE: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:e2e:replaced"}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list]
"#;

const POLICY: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "e2e:reconciled"}
rules:
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "e2e:reconciled"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "e2e:reconciled"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}
"#;

/// kubectl's stderr for a manifest it should fail to write.
fn refused(s: &Server, args: &[&str], manifest: &str) -> String {
    let out = s.manifest_output(args, manifest);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded: {stderr}");
    stderr
}

fn rbac_validation(s: Server) {
    let err = refused(&s, &["create", "-f", "-"], NO_VERBS);
    assert!(
        err.contains(r#"The Role "no-verbs" is invalid"#)
            && err
                .contains("rules[0].verbs: Required value: verbs must contain at least one value"),
        "{err}"
    );
    let err = refused(&s, &["apply", "-f", "-"], URLS_IN_ROLE);
    assert!(
        err.contains(r#"rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#),
        "{err}"
    );
    let err = refused(&s, &["create", "-f", "-"], BAD_SUBJECT);
    assert!(
        err.contains("subjects[0].namespace: Required value"),
        "{err}"
    );

    // A binding's roleRef is fixed; its subjects are not.
    s.kubectl(&[
        "create",
        "clusterrolebinding",
        "readers",
        "--clusterrole=view",
        "--user=jane",
    ]);
    s.kubectl(&[
        "patch",
        "clusterrolebinding",
        "readers",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/subjects/-","value":{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"joe"}}]"#,
    ]);
    let out = s.kubectl_raw(&[
        "patch",
        "clusterrolebinding",
        "readers",
        "--type=merge",
        "-p",
        r#"{"roleRef":{"name":"edit"}}"#,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "roleRef changed");
    assert!(
        err.contains(r#"roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef"#),
        "{err}"
    );
    let binding = s.json(&["get", "clusterrolebinding", "readers"]);
    assert_eq!(binding["roleRef"]["name"], "view");
    assert_eq!(binding["subjects"][1]["name"], "joe");

    // `kubectl replace` PUTs a ClusterRole that does not exist yet: the PUT creates it.
    let out = s.manifest_output(&["replace", "-f", "-"], MISSING_ROLE);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let role = s.json(&["get", "clusterrole", "system:e2e:replaced"]);
    assert_eq!(role["rules"][0]["verbs"][1], "list");

    let out = s.manifest_output(&["auth", "reconcile", "-f", "-"], POLICY);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let binding = s.json(&["get", "clusterrolebinding", "e2e:reconciled"]);
    assert_eq!(binding["subjects"][0]["name"], "jane");

    s.kubectl(&[
        "create",
        "role",
        "system:e2e:pod-reader",
        "--verb=get",
        "--resource=pods",
    ]);
    let names = s.kubectl(&["get", "roles", "-o", "name"]);
    assert!(
        names.contains("role.rbac.authorization.k8s.io/system:e2e:pod-reader"),
        "{names}"
    );
}
