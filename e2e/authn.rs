//! Authentication on the secure port, as kube-apiserver's: static bearer tokens
//! (`--token-auth-file`) after client certificates, then anonymous (`--anonymous-auth`);
//! `kubectl auth whoami` (SelfSubjectReview) tells each who it is; a wrong token is 401 with
//! upstream's Status and never anonymous; malformed Authorization headers disturb nothing.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::secure::{self, curl_tls as curl, kubectl_with_token, url};
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

const TOKENS: &str = "alice-token,alice,uid-alice,\"devs,ops\"\nbob-token,bob,uid-bob\n";

/// Upstream's 401 as curl gets it: indented (upstream indents for curl's User-Agent), in
/// the Status's Go field order, without a final newline (json.MarshalIndent).
const UNAUTHORIZED: &str = "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"Unauthorized\",\n  \"reason\": \"Unauthorized\",\n  \"code\": 401\n}";

fn token_file() -> (tempfile::TempDir, PathBuf) {
    secure::token_file(TOKENS)
}

fn text(out: &Output) -> String {
    support::output_text(out)
}

fn whoami_as(s: &Server, token: &str) -> serde_json::Value {
    let out = kubectl_with_token(s, token, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("SelfSubjectReview")
}

fn still_serves(s: &Server) {
    assert!(s
        .kubectl(&["get", "namespace", "default", "-o", "name"])
        .contains("default"));
}

fn tokens_and_whoami(s: &Server, home: &Path) {
    // A token user: its name, uid and groups, system:authenticated added.
    let alice = whoami_as(s, "alice-token");
    assert_eq!(alice["kind"], "SelfSubjectReview");
    assert_eq!(alice["apiVersion"], "authentication.k8s.io/v1");
    let info = &alice["status"]["userInfo"];
    assert_eq!(info["username"], "alice", "{alice}");
    assert_eq!(info["uid"], "uid-alice");
    assert_eq!(
        info["groups"],
        serde_json::json!(["devs", "ops", "system:authenticated"])
    );
    let bob = whoami_as(s, "bob-token");
    assert_eq!(
        bob["status"]["userInfo"]["groups"],
        serde_json::json!(["system:authenticated"])
    );
    // The table kubectl prints by default.
    let out = kubectl_with_token(s, "alice-token", &["auth", "whoami"]);
    let table = text(&out);
    assert!(out.status.success(), "{table}");
    assert!(
        table.contains("alice") && table.contains("devs") && table.contains("uid-alice"),
        "{table}"
    );
    // The token user is judged as alice: with no binding, RBAC refuses her (403, not 401).
    let out = kubectl_with_token(
        s,
        "alice-token",
        &["get", "namespace", "default", "-o", "name"],
    );
    assert!(
        !out.status.success()
            && text(&out).contains(r#"User "alice" cannot get resource "namespaces""#),
        "{}",
        text(&out)
    );

    // The admin kubeconfig: the client certificate's user.
    let admin = s.json(&["auth", "whoami"]);
    let info = &admin["status"]["userInfo"];
    assert_eq!(info["username"], "system:admin", "{admin}");
    assert_eq!(
        info["groups"],
        serde_json::json!(["system:masters", "system:authenticated"])
    );
    assert!(
        info["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .is_some_and(|id| id.starts_with("X509SHA256="))
    );

    // Discovery lists the review; other verbs on it are refused: a list is not served (405),
    // and alice, who may only create reviews (system:basic-user), is not even allowed to ask
    // (403, as authorization runs before the handler).
    let resources = s.kubectl(&["api-resources", "--api-group=authentication.k8s.io"]);
    assert!(
        resources.contains("selfsubjectreviews") && resources.contains("SelfSubjectReview"),
        "{resources}"
    );
    assert_eq!(
        s.get("/apis/authentication.k8s.io/v1/selfsubjectreviews")
            .status,
        405
    );
    let (_, code) = curl(
        s,
        &[
            "-H",
            "Authorization: Bearer alice-token",
            &url(s, "/apis/authentication.k8s.io/v1/selfsubjectreviews"),
        ],
    );
    assert_eq!(code, 403);

    // A wrong token: 401 with upstream's Status, not anonymous.
    let (body, code) = curl(
        s,
        &[
            "-H",
            "Authorization: Bearer wrong-token",
            &url(s, "/api/v1/namespaces"),
        ],
    );
    assert_eq!((code, body.as_str()), (401, UNAUTHORIZED));
    let out = kubectl_with_token(s, "wrong-token", &["auth", "whoami"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("Unauthorized"), "{}", text(&out));

    // No credentials: anonymous, who may not ask who it is (system:basic-user is bound to
    // system:authenticated only) until a binding lets it.
    let anonymous_review = || {
        curl(
            s,
            &[
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json",
                "-d",
                r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#,
                &url(s, "/apis/authentication.k8s.io/v1/selfsubjectreviews"),
            ],
        )
    };
    let (body, code) = anonymous_review();
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"User \"system:anonymous\" cannot create"#),
        "{body}"
    );
    s.kubectl(&[
        "create",
        "clusterrolebinding",
        "anonymous-whoami",
        "--clusterrole=system:basic-user",
        "--user=system:anonymous",
    ]);
    // The RBAC index follows bindings through its watch: a moment.
    let mut answer = (String::new(), 0);
    test_support::wait_until(
        "the binding lets anonymous review",
        std::time::Duration::from_secs(10),
        || {
            answer = anonymous_review();
            answer.1 == 201
        },
    );
    let body = answer.0;
    let review: serde_json::Value = serde_json::from_str(&body).expect("review");
    assert_eq!(
        review["status"]["userInfo"],
        serde_json::json!({"username": "system:anonymous", "groups": ["system:unauthenticated"]})
    );

    // The loopback port keeps its privileged user.
    let review = s.send_json(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    );
    assert_eq!(review.status, 201, "{}", review.body);
    assert_eq!(
        review.json()["status"]["userInfo"]["username"],
        "system:apiserver"
    );

    malformed_headers(s, home);
}

/// Malformed Authorization headers: clean answers (upstream's reading: other schemes and
/// an empty token are no credentials, anything else a token that names no one), and the
/// server carries on.
fn malformed_headers(s: &Server, home: &Path) {
    // /version: anonymous users may read it (system:public-info-viewer), so 200 says the
    // request authenticated (as anonymous or alice) and 401 that it did not.
    let version = url(s, "/version");
    let with = |header: &str| curl(s, &["-H", header, &version]);
    for header in [
        "Authorization: Basic YWxpY2U6cGFzcw==",
        "Authorization: Bearer",
        "Authorization: Bearer  alice-token",
        "Authorization: Negotiate",
    ] {
        let (body, code) = with(header);
        assert_eq!(code, 200, "{header}: {body}");
    }
    for header in [
        "Authorization: Bearer caf\u{e9}-token",
        "Authorization: Bearer \u{1F600}",
        "Authorization: Bearer alice-token2",
        "Authorization: bearer ALICE-TOKEN",
    ] {
        let (body, code) = with(header);
        assert_eq!((code, body.as_str()), (401, UNAUTHORIZED), "{header}");
    }
    // Oversized: a 100 KiB token is refused; a 2 MiB header is refused before it is read.
    // (Headers from a file: one argument may not be that long.)
    for (size, http) in [
        (100 * 1024, "--http1.1"),
        (100 * 1024, "--http2"),
        (2 << 20, "--http1.1"),
        (2 << 20, "--http2"),
    ] {
        let file = home.join("header");
        std::fs::write(
            &file,
            format!("Authorization: Bearer {}\n", "a".repeat(size)),
        )
        .expect("header file");
        let (body, code) = curl(s, &[http, "-H", &format!("@{}", file.display()), &version]);
        // HTTP/2 refuses header lists beyond its limit (16 KiB) with 431, or with
        // REFUSED_STREAM (curl: no status) when they do not even fit its buffer; HTTP/1.1
        // answers a head beyond its buffer 431 and closes, which curl, still sending, may
        // see as a reset.
        assert!(
            matches!(code, 401 | 431) || (code == 0 && (http == "--http2" || size > 1 << 20)),
            "{size} bytes over {http}: {code} {body}"
        );
        if http == "--http1.1" && size < 1 << 20 {
            assert_eq!(code, 401, "{size} bytes over {http}");
        }
        if code == 401 {
            assert_eq!(body, UNAUTHORIZED);
        }
    }
    still_serves(s);
    assert_eq!(s.logged("panicked"), 0);
}

fn authentication(s: Server, home: tempfile::TempDir) {
    tokens_and_whoami(&s, home.path());
}

#[test]
fn tokens_embedded() {
    let (home, tokens) = token_file();
    let file = tokens.display().to_string();
    let s = start_embedded_with(&["--token-auth-file", &file]);
    authentication(s, home);
}

#[test]
fn tokens_on_etcd() {
    let (home, tokens) = token_file();
    let file = tokens.display().to_string();
    let s = start_on_etcd_with(&["--token-auth-file", &file]);
    authentication(s, home);
}

fn anonymous_off(s: Server, _home: tempfile::TempDir) {
    let namespaces = url(&s, "/api/v1/namespaces/default");
    let version = url(&s, "/version");
    // No credentials, another scheme, an empty token: 401, on every path.
    for args in [
        vec![namespaces.as_str()],
        vec!["-H", "Authorization: Basic YWxpY2U6cGFzcw==", &namespaces],
        vec!["-H", "Authorization: Bearer ", &namespaces],
        vec![version.as_str()],
    ] {
        let (body, code) = curl(&s, &args);
        assert_eq!((code, body.as_str()), (401, UNAUTHORIZED), "{args:?}");
    }
    // The admin certificate and a token still work.
    assert_eq!(
        s.json(&["auth", "whoami"])["status"]["userInfo"]["username"],
        "system:admin"
    );
    still_serves(&s);
    assert_eq!(
        whoami_as(&s, "bob-token")["status"]["userInfo"]["username"],
        "bob"
    );
    // alice authenticates; RBAC then judges her (no binding: 403, not 401).
    let (body, code) = curl(
        &s,
        &["-H", "Authorization: Bearer alice-token", &namespaces],
    );
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"User \"alice\" cannot get resource \"namespaces\""#),
        "{body}"
    );
    let (_, code) = curl(&s, &["-H", "Authorization: Bearer alice-token", &version]);
    assert_eq!(code, 200);
    // The loopback port is not authenticated.
    assert_eq!(s.get("/api/v1/namespaces/default").status, 200);
}

#[test]
fn anonymous_off_embedded() {
    let (home, tokens) = token_file();
    let file = tokens.display().to_string();
    let s = start_embedded_with(&["--token-auth-file", &file, "--anonymous-auth=false"]);
    anonymous_off(s, home);
}

#[test]
fn anonymous_off_on_etcd() {
    let (home, tokens) = token_file();
    let file = tokens.display().to_string();
    let s = start_on_etcd_with(&["--token-auth-file", &file, "--anonymous-auth=false"]);
    anonymous_off(s, home);
}

#[test]
fn a_bad_token_file_fails_start() {
    let dir = tempfile::tempdir().expect("tmp");
    let tokens = dir.path().join("tokens.csv");
    for (content, wanted) in [
        ("ok,alice,uid\nbroken,line\n", "line 2"),
        ("tok,\"unterminated,uid\n", "quoted-field"),
    ] {
        std::fs::write(&tokens, content).expect("token file");
        let file = tokens.display().to_string();
        let port = test_support::free_port().to_string();
        let said = support::refused_start(
            dir.path(),
            &[
                "--token-auth-file",
                &file,
                "--port",
                "0",
                "--secure-port",
                &port,
            ],
        );
        assert!(
            said.contains("tokens.csv") && said.contains(wanted),
            "{said}"
        );
    }
    let said = support::refused_start(
        dir.path(),
        &[
            "--token-auth-file",
            "/nonexistent/tokens.csv",
            "--port",
            "0",
        ],
    );
    assert!(said.contains("/nonexistent/tokens.csv"), "{said}");
}
