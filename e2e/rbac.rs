//! Authorization as kube-apiserver's, with the real kubectl over verified TLS on both backends:
//! a token user bound to a namespaced Role gets exactly its rights (allowed, and 403 with
//! upstream's messages), `kubectl auth can-i [--list]` tells it so, escalation through a Role
//! is refused, anonymous users see only the public-info paths, no spelling of a path reaches
//! what its requester may not read, and `--authorization-mode` AlwaysAllow / AlwaysDeny /
//! unknown modes behave as upstream.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use support::secure;
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

/// jane reads in `a`; bob writes Roles in `a` and reads configmaps there.
const TOKENS: &str = "jane-token,jane,uid-jane\nbob-token,bob,uid-bob\n";

/// The data of the configmap in `b`, which jane may not read: no answer to her may carry it.
const CANARY: &str = "b-canary-value";

fn token_file() -> (tempfile::TempDir, PathBuf) {
    secure::token_file(TOKENS)
}

fn text(out: &Output) -> String {
    support::output_text(out)
}

fn kubectl_as(s: &Server, token: &str, args: &[&str]) -> Output {
    secure::kubectl_with_token(s, token, args)
}

/// curl over verified TLS with `args`, `path` sent as written.
fn curl(s: &Server, args: &[&str], path: &str) -> (String, u16) {
    let url = secure::url(s, path);
    let mut all = args.to_vec();
    all.push(&url);
    secure::curl_tls(s, &all)
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}")
}

/// Namespaces `a` and `b` with a configmap each; jane reads pods and configmaps in `a`; bob
/// may create Roles and read configmaps in `a`.
fn setup(s: &Server) {
    s.kubectl(&["create", "namespace", "a"]);
    s.kubectl(&["create", "namespace", "b"]);
    s.kubectl(&[
        "-n",
        "a",
        "create",
        "configmap",
        "c",
        "--from-literal=k=a-value",
    ]);
    s.kubectl(&[
        "-n",
        "b",
        "create",
        "configmap",
        "c",
        &format!("--from-literal=k={CANARY}"),
    ]);
    s.kubectl(&[
        "-n",
        "a",
        "create",
        "role",
        "reader",
        "--verb=get,list",
        "--resource=pods,configmaps",
    ]);
    s.kubectl(&[
        "-n",
        "a",
        "create",
        "rolebinding",
        "jane-reads",
        "--role=reader",
        "--user=jane",
    ]);
    s.kubectl(&[
        "-n",
        "a",
        "create",
        "role",
        "role-writer",
        "--verb=create,get,list",
        "--resource=roles.rbac.authorization.k8s.io,configmaps",
    ]);
    s.kubectl(&[
        "-n",
        "a",
        "create",
        "rolebinding",
        "bob-writes",
        "--role=role-writer",
        "--user=bob",
    ]);
    // The authorizer follows the bindings through a watch: wait until jane may read.
    for _ in 0..100 {
        if kubectl_as(s, "jane-token", &["-n", "a", "get", "configmap", "c"])
            .status
            .success()
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("jane never got her Role's rights");
}

/// kubectl failed, printing the server's message (after `Error from server (Forbidden): `,
/// or `error: failed to create ...: ` for kubectl's generators).
fn refused(out: &Output, message: &str) {
    assert!(!out.status.success(), "allowed: {}", text(out));
    let said = text(out);
    assert!(
        said.contains(&format!("(Forbidden): {message}"))
            || said.contains(&format!("failed to create deployment: {message}")),
        "expected {message:?}, got {said}"
    );
}

fn a_role_grants_exactly_its_rights(s: &Server) {
    let out = kubectl_as(
        s,
        "jane-token",
        &["-n", "a", "get", "configmaps", "-o", "name"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let names = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(names.lines().any(|l| l == "configmap/c"), "{names}");
    let out = kubectl_as(s, "jane-token", &["-n", "a", "get", "pods"]);
    assert!(out.status.success(), "{}", text(&out));
    // Another namespace, another verb, another resource, cluster scope.
    refused(
        &kubectl_as(s, "jane-token", &["-n", "b", "get", "configmaps"]),
        r#"configmaps is forbidden: User "jane" cannot list resource "configmaps" in API group "" in the namespace "b""#,
    );
    refused(
        &kubectl_as(s, "jane-token", &["-n", "a", "delete", "configmap", "c"]),
        r#"configmaps "c" is forbidden: User "jane" cannot delete resource "configmaps" in API group "" in the namespace "a""#,
    );
    refused(
        &kubectl_as(s, "jane-token", &["-n", "a", "get", "secrets"]),
        r#"secrets is forbidden: User "jane" cannot list resource "secrets" in API group "" in the namespace "a""#,
    );
    refused(
        &kubectl_as(s, "jane-token", &["get", "namespaces"]),
        r#"namespaces is forbidden: User "jane" cannot list resource "namespaces" in API group "" at the cluster scope"#,
    );
    refused(
        &kubectl_as(
            s,
            "jane-token",
            &["-n", "a", "create", "deployment", "web", "--image=nginx"],
        ),
        r#"deployments.apps is forbidden: User "jane" cannot create resource "deployments" in API group "apps" in the namespace "a""#,
    );
    // The Status itself, as upstream writes it.
    let (body, code) = curl(
        s,
        &["-H", &bearer("jane-token")],
        "/api/v1/namespaces/b/configmaps/c",
    );
    assert_eq!(code, 403, "{body}");
    let status: Value = serde_json::from_str(&body).expect("Status");
    assert_eq!(
        status,
        serde_json::json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "configmaps \"c\" is forbidden: User \"jane\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"b\"",
            "reason": "Forbidden",
            "details": {"name": "c", "kind": "configmaps"},
            "code": 403,
        })
    );
    // In upstream's field order, indented as upstream answers curl.
    assert!(
        body.starts_with("{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\","),
        "{body}"
    );
}

fn can_i(s: &Server) {
    let yes = kubectl_as(
        s,
        "jane-token",
        &["auth", "can-i", "list", "pods", "-n", "a"],
    );
    assert!(yes.status.success(), "{}", text(&yes));
    assert_eq!(String::from_utf8_lossy(&yes.stdout).trim(), "yes");
    for args in [
        ["auth", "can-i", "delete", "pods", "-n", "a"],
        ["auth", "can-i", "list", "pods", "-n", "b"],
    ] {
        let no = kubectl_as(s, "jane-token", &args);
        assert_eq!(no.status.code(), Some(1), "{args:?}: {}", text(&no));
        assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "no", "{args:?}");
    }
    // The admin may do anything.
    assert_eq!(
        s.kubectl(&["auth", "can-i", "delete", "secrets", "-A"])
            .trim(),
        "yes"
    );
    // The Role's rules, and what every authenticated user has, in kubectl's table.
    let out = kubectl_as(s, "jane-token", &["auth", "can-i", "--list", "-n", "a"]);
    assert!(out.status.success(), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in\n{table}"))
            .to_string()
    };
    assert!(row("pods").ends_with("[get list]"), "{table}");
    assert!(row("configmaps").ends_with("[get list]"), "{table}");
    assert!(row("selfsubjectaccessreviews.authorization.k8s.io").ends_with("[create]"));
    assert!(!table.contains("secrets"), "{table}");
    // In another namespace, the Role is not there.
    let out = kubectl_as(s, "jane-token", &["auth", "can-i", "--list", "-n", "b"]);
    let other = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!other.lines().any(|l| l.starts_with("pods ")), "{other}");
    // A SubjectAccessReview asks about someone else.
    let review = s.json(&[
        "create",
        "-f",
        &write_manifest(
            s,
            "sar.json",
            r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",
                "spec":{"user":"jane","resourceAttributes":{"namespace":"a","verb":"list","resource":"pods"}}}"#,
        ),
    ]);
    assert_eq!(review["status"]["allowed"], true, "{review}");
    assert!(
        review["status"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("jane-reads")),
        "{review}"
    );
}

fn write_manifest(s: &Server, name: &str, content: &str) -> String {
    let path = s.dir.path().join(name);
    std::fs::write(&path, content).expect("manifest");
    path.display().to_string()
}

fn escalation_is_refused(s: &Server) {
    let role = |name: &str, resource: &str| {
        write_manifest(
            s,
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {name}\n  namespace: a\nrules:\n- apiGroups: [\"\"]\n  resources: [\"{resource}\"]\n  verbs: [\"get\"]\n"
            ),
        )
    };
    // What bob holds, he may grant.
    let out = kubectl_as(
        s,
        "bob-token",
        &["create", "-f", &role("cm-getter", "configmaps")],
    );
    assert!(out.status.success(), "{}", text(&out));
    // What he does not, he may not.
    let out = kubectl_as(s, "bob-token", &["create", "-f", &role("grab", "secrets")]);
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("Error from server (Forbidden): error when creating")
            && said.contains(concat!(
            r#"roles.rbac.authorization.k8s.io "grab" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#,
            "\n",
            r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}"#
        )),
        "{said}"
    );
    // Nothing was created.
    let out = s.kubectl_raw(&["-n", "a", "get", "role", "grab"]);
    assert!(text(&out).contains("NotFound"), "{}", text(&out));
}

fn anonymous_sees_only_public_info(s: &Server) {
    for path in ["/version", "/healthz", "/livez", "/readyz"] {
        let (body, code) = curl(s, &[], path);
        assert_eq!(code, 200, "{path}: {body}");
    }
    let (body, code) = curl(s, &[], "/api/v1/namespaces");
    assert_eq!(code, 403, "{body}");
    let status: Value = serde_json::from_str(&body).expect("Status");
    assert_eq!(
        status["message"],
        r#"namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope"#
    );
    let (body, code) = curl(s, &[], "/metrics");
    assert_eq!(code, 403, "{body}");
    let status: Value = serde_json::from_str(&body).expect("Status");
    assert_eq!(
        status["message"],
        r#"forbidden: User "system:anonymous" cannot get path "/metrics""#
    );
    assert_eq!(status["details"], serde_json::json!({}));
    // An authenticated user without a role for it neither; the admin may.
    let (_, code) = curl(s, &["-H", &bearer("jane-token")], "/metrics");
    assert_eq!(code, 403);
    let metrics = s.kubectl(&["get", "--raw", "/metrics"]);
    assert!(metrics.contains("apiserver_request_total"), "{metrics}");
}

fn no_spelling_reaches_what_jane_may_not_read(s: &Server) {
    for path in [
        "/api/v1/namespaces/a/../b/configmaps",
        "/api/v1/namespaces/a/%2e%2e/b/configmaps",
        "/api/v1/namespaces/a/configmaps/../../b/configmaps/c",
        "/api/v1/namespaces/a/configmaps/%2e%2e/%2E%2E/b/configmaps/c",
        "/api/v1/namespaces/a%2F..%2Fb/configmaps/c",
        "/api/v1/namespaces/%2e%2e/configmaps",
        "/api/v1/namespaces/../configmaps",
        "/api/v1/namespaces/a/configmaps/./../../b/configmaps",
        "/api/v1/namespaces//b/configmaps",
        "/apis/../api/v1/namespaces/b/configmaps",
    ] {
        let (body, code) = curl(s, &["-H", &bearer("jane-token")], path);
        assert!(code == 403 || code == 404, "{path}: {code} {body}");
        assert!(!body.contains(CANARY), "{path}: {body}");
        let status: Value = serde_json::from_str(&body).expect("Status");
        assert_eq!(status["kind"], "Status", "{path}");
    }
}

fn scenario(s: Server) {
    setup(&s);
    a_role_grants_exactly_its_rights(&s);
    can_i(&s);
    escalation_is_refused(&s);
    anonymous_sees_only_public_info(&s);
    no_spelling_reaches_what_jane_may_not_read(&s);
}

fn token_args(path: &Path) -> Vec<String> {
    vec!["--token-auth-file".into(), path.display().to_string()]
}

#[test]
fn rbac_on_the_embedded_store() {
    let (_dir, path) = token_file();
    let args = token_args(&path);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    scenario(start_embedded_with(&args));
}

#[test]
fn rbac_on_etcd() {
    let (_dir, path) = token_file();
    let args = token_args(&path);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    scenario(start_on_etcd_with(&args));
}

#[test]
fn always_deny_refuses_all_but_the_privileged_and_always_allow_allows_all() {
    let (_dir, path) = token_file();
    let mut args = token_args(&path);
    args.push("--authorization-mode=AlwaysDeny".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = start_embedded_with(&args);
    // system:masters is always allowed, whatever the modes.
    s.kubectl(&["create", "namespace", "a"]);
    // `--raw`: kubectl prints a refused discovery as "unknown".
    refused(
        &kubectl_as(
            &s,
            "jane-token",
            &["get", "--raw", "/api/v1/namespaces/a/configmaps"],
        ),
        r#"configmaps is forbidden: User "jane" cannot list resource "configmaps" in API group "" in the namespace "a": Everything is forbidden."#,
    );
    let (_, code) = curl(&s, &[], "/version");
    assert_eq!(code, 403);
    drop(s);

    let (_dir, path) = token_file();
    let mut args = token_args(&path);
    args.push("--authorization-mode=AlwaysAllow".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = start_embedded_with(&args);
    s.kubectl(&["create", "namespace", "a"]);
    let out = kubectl_as(&s, "jane-token", &["-n", "a", "get", "secrets"]);
    assert!(out.status.success(), "{}", text(&out));
    let (body, code) = curl(&s, &[], "/api/v1/namespaces");
    assert_eq!(code, 200, "{body}");
    let out = kubectl_as(&s, "jane-token", &["auth", "can-i", "--list", "-n", "a"]);
    assert!(text(&out).contains("*.*"), "{}", text(&out));
}

#[test]
fn an_unknown_mode_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tmp");
    let said = support::refused_start(dir.path(), &["--authorization-mode=RBAC,Foo"]);
    assert!(
        said.contains(r#"authorization-mode "Foo" is not a valid mode"#),
        "{said}"
    );
    let said = support::refused_start(dir.path(), &["--authorization-mode=Node"]);
    assert!(said.contains("\"Node\" is not supported"), "{said}");
}
