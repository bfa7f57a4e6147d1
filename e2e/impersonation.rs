//! Impersonation as kube-apiserver's (`kubectl --as --as-group --as-uid`, the Impersonate-*
//! headers), with the real kubectl over verified TLS on both backends: each part is authorized
//! with the verb `impersonate` (users, groups and service accounts in the core group,
//! userextras and uids in authentication.k8s.io), the impersonated user gets upstream's
//! groups and acts with its own rights only, and a user without `impersonate` gets 403.

mod support;

use std::path::PathBuf;
use std::process::Output;

use serde_json::{json, Value};
use support::secure;
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

const CONFIGMAPS: &str = "/api/v1/namespaces/a/configmaps";

const TOKENS: &str = "bob-token,bob,uid-bob\n";

fn token_file() -> (tempfile::TempDir, PathBuf) {
    secure::token_file(TOKENS)
}

fn text(out: &Output) -> String {
    support::output_text(out)
}

/// kubectl as bob (his token, no kubeconfig but the server and its CA).
fn as_bob(s: &Server, args: &[&str]) -> Output {
    secure::kubectl_with_token(s, "bob-token", args)
}

/// curl over verified TLS with the admin's client certificate and `args` (headers as `-H`
/// pairs, a method, a body): the body as JSON (a string when it is not) and the code.
fn curl_as_admin(s: &Server, args: &[&str], path: &str) -> (Value, u16) {
    let url = secure::url(s, path);
    let mut all = args.to_vec();
    all.push(&url);
    let (body, code) = secure::curl_as_admin(s, &all);
    (
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
        code,
    )
}

fn user_info(s: &Server, args: &[&str]) -> Value {
    let mut all = vec!["auth", "whoami"];
    all.extend(args);
    s.json(&all)["status"]["userInfo"].clone()
}

fn refused(out: &Output, message: &str) {
    assert!(!out.status.success(), "allowed: {}", text(out));
    let said = text(out);
    assert!(
        said.contains(&format!("Error from server (Forbidden): {message}")),
        "expected {message:?}, got {said}"
    );
}

/// Until the RBAC authorizer has seen a binding, retries.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..100 {
        if check() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{what} never happened");
}

fn scenario(s: Server) {
    s.kubectl(&["create", "namespace", "a"]);
    s.kubectl(&["-n", "a", "create", "configmap", "c", "--from-literal=k=v"]);
    s.kubectl(&[
        "-n",
        "a",
        "create",
        "role",
        "reader",
        "--verb=get,list",
        "--resource=configmaps",
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
        "rolebinding",
        "devs-read",
        "--role=reader",
        "--group=devs",
    ]);

    // The admin (system:masters) may impersonate anyone; the impersonated user gets
    // system:authenticated added to the groups given.
    let jane = user_info(&s, &["--as=jane", "--as-group=devs"]);
    assert_eq!(jane["username"], "jane", "{jane}");
    assert_eq!(jane["groups"], json!(["devs", "system:authenticated"]));
    let jane = user_info(&s, &["--as=jane", "--as-uid=u-1"]);
    assert_eq!(jane["uid"], "u-1", "{jane}");
    assert_eq!(jane["groups"], json!(["system:authenticated"]));
    let sa = user_info(&s, &["--as=system:serviceaccount:a:builder"]);
    assert_eq!(sa["username"], "system:serviceaccount:a:builder");
    assert_eq!(
        sa["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:a",
            "system:authenticated"
        ])
    );
    // Extra, by header (the key percent-decoded).
    let (review, code) = curl_as_admin(
        &s,
        &[
            "-H",
            "Impersonate-User: jane",
            "-H",
            "Impersonate-Extra-Example.org%2Fteam: blue",
            "-H",
            "Impersonate-Extra-Example.org%2Fteam: green",
            "-H",
            "Content-Type: application/json",
            "-X",
            "POST",
            "-d",
            "{}",
        ],
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    );
    assert_eq!(code, 201, "{review}");
    assert_eq!(
        review["status"]["userInfo"]["extra"],
        json!({"example.org/team": ["blue", "green"]}),
        "{review}"
    );

    // The impersonated user acts with its own rights only.
    eventually("jane reads", || {
        s.kubectl_raw(&["--as=jane", "-n", "a", "get", "configmap", "c"])
            .status
            .success()
    });
    refused(
        &s.kubectl_raw(&["--as=jane", "-n", "a", "get", "secrets"]),
        r#"secrets is forbidden: User "jane" cannot list resource "secrets" in API group "" in the namespace "a""#,
    );
    let out = s.kubectl_raw(&[
        "--as=someone",
        "--as-group=devs",
        "-n",
        "a",
        "get",
        "configmaps",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        s.kubectl(&[
            "auth",
            "can-i",
            "list",
            "configmaps",
            "-n",
            "a",
            "--as=jane"
        ])
        .trim(),
        "yes"
    );
    let no = s.kubectl_raw(&[
        "auth",
        "can-i",
        "list",
        "configmaps",
        "-n",
        "b",
        "--as=jane",
    ]);
    assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "no");

    // bob may not impersonate at all. (`--raw`: kubectl prints discovery's refusals as
    // "unknown", against kube-apiserver too.)
    refused(
        &as_bob(&s, &["--as=jane", "get", "--raw", CONFIGMAPS]),
        r#"users "jane" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#,
    );
    refused(
        &as_bob(
            &s,
            &[
                "--as=system:serviceaccount:a:builder",
                "get",
                "--raw",
                CONFIGMAPS,
            ],
        ),
        r#"serviceaccounts "builder" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "a""#,
    );
    // Then jane only, and no group.
    s.kubectl(&[
        "create",
        "clusterrole",
        "impersonate-jane",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=jane",
    ]);
    s.kubectl(&[
        "create",
        "clusterrolebinding",
        "bob-impersonates-jane",
        "--clusterrole=impersonate-jane",
        "--user=bob",
    ]);
    eventually("bob acts as jane", || {
        as_bob(&s, &["--as=jane", "-n", "a", "get", "configmap", "c"])
            .status
            .success()
    });
    refused(
        &as_bob(&s, &["--as=alice", "get", "--raw", CONFIGMAPS]),
        r#"users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#,
    );
    refused(
        &as_bob(
            &s,
            &["--as=jane", "--as-group=devs", "get", "--raw", CONFIGMAPS],
        ),
        r#"groups "devs" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope"#,
    );
    refused(
        &as_bob(
            &s,
            &["--as=jane", "--as-uid=u-1", "get", "--raw", CONFIGMAPS],
        ),
        r#"uids.authentication.k8s.io "u-1" is forbidden: User "bob" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope"#,
    );

    // Groups without a user: refused, with upstream's words.
    let (status, code) =
        curl_as_admin(&s, &["-H", "Impersonate-Group: devs"], "/api/v1/namespaces");
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "requested [{Group  devs    }] without impersonating a user"
    );
}

#[test]
fn impersonation_on_the_embedded_store() {
    let (_dir, path) = token_file();
    let path = path.display().to_string();
    scenario(start_embedded_with(&["--token-auth-file", &path]));
}

#[test]
fn impersonation_on_etcd() {
    let (_dir, path) = token_file();
    let path = path.display().to_string();
    scenario(start_on_etcd_with(&["--token-auth-file", &path]));
}
