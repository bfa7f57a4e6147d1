//! ServiceAccount tokens with the real kubectl, as kube-apiserver's: `kubectl create token`
//! (the TokenRequest subresource) issues a JWT signed with --service-account-signing-key-file
//! that authenticates as the account (`kubectl auth whoami`); a token bound to a pod dies
//! with the pod; expired, tampered, wrong-audience, foreign and oversized tokens are 401; and
//! pods get the `default` account and its projected token volume by admission.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use support::secure;
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

/// How long a condition may take to hold.
const WAIT: Duration = Duration::from_secs(30);

const NS: &str = "sa-e2e";
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// Upstream's 401 as curl gets it: indented (upstream indents for curl's User-Agent), in
/// the Status's Go field order, without a final newline (json.MarshalIndent).
const UNAUTHORIZED: &str = "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"Unauthorized\",\n  \"reason\": \"Unauthorized\",\n  \"code\": 401\n}";

/// A signing key of the test's own (ES256), so that it can forge tokens the server checks.
struct Keys {
    dir: tempfile::TempDir,
    pem: String,
}

impl Keys {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tmp");
        let pem = rcgen::KeyPair::generate().expect("key").serialize_pem();
        std::fs::write(dir.path().join("sa.key"), &pem).expect("write key");
        Self { dir, pem }
    }

    fn file(&self) -> String {
        self.dir.path().join("sa.key").display().to_string()
    }

    fn sign(&self, claims: &Value) -> String {
        let key = EncodingKey::from_ec_pem(self.pem.as_bytes()).expect("key");
        jsonwebtoken::encode(&Header::new(Algorithm::ES256), claims, &key).expect("sign")
    }
}

fn text(out: &Output) -> String {
    support::output_text(out)
}

/// curl verifying the server: GET `path` with the bearer token; the body and the code.
fn get_with_token(s: &Server, token: &str, path: &str) -> (String, u16) {
    let header = format!("Authorization: Bearer {token}");
    secure::curl_tls(s, &["-H", &header, &secure::url(s, path)])
}

fn kubectl_as(s: &Server, token: &str, args: &[&str]) -> Output {
    secure::kubectl_with_token(s, token, args)
}

fn whoami(s: &Server, token: &str) -> Value {
    let out = kubectl_as(s, token, &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("SelfSubjectReview")
}

fn assert_unauthorized(s: &Server, token: &str, what: &str) {
    let (body, code) = get_with_token(s, token, "/version");
    assert_eq!((code, body.as_str()), (401, UNAUTHORIZED), "{what}");
}

fn create_token(s: &Server, args: &[&str]) -> String {
    let mut all = vec!["create", "token", "default", "-n", NS];
    all.extend_from_slice(args);
    s.kubectl(&all).trim().to_string()
}

fn payload(token: &str) -> Value {
    let part = token.split('.').nth(1).expect("payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("claims")
}

fn service_account_tokens(s: Server, keys: Keys) {
    s.kubectl(&["create", "namespace", NS]);
    // The ServiceAccount controller makes `default` in the new namespace.
    test_support::wait_until("the default ServiceAccount", WAIT, || {
        s.kubectl_raw(&["get", "serviceaccount", "default", "-n", NS])
            .status
            .success()
    });
    let sa_uid = s.kubectl(&[
        "get",
        "serviceaccount",
        "default",
        "-n",
        NS,
        "-o",
        "jsonpath={.metadata.uid}",
    ]);

    // `kubectl create token`, then that token.
    let token = create_token(&s, &[]);
    let claims = payload(&token);
    assert_eq!(claims["iss"], ISSUER);
    assert_eq!(claims["sub"], format!("system:serviceaccount:{NS}:default"));
    assert_eq!(claims["aud"], json!([ISSUER]));
    let review = whoami(&s, &token);
    let info = &review["status"]["userInfo"];
    assert_eq!(
        info["username"],
        format!("system:serviceaccount:{NS}:default")
    );
    assert_eq!(info["uid"], sa_uid.as_str());
    assert_eq!(
        info["groups"],
        json!([
            "system:serviceaccounts",
            format!("system:serviceaccounts:{NS}"),
            "system:authenticated"
        ])
    );
    let jti = claims["jti"].as_str().expect("jti");
    assert_eq!(
        info["extra"]["authentication.kubernetes.io/credential-id"],
        json!([format!("JTI={jti}")])
    );
    let out = kubectl_as(&s, &token, &["auth", "whoami"]);
    assert!(
        text(&out).contains(&format!("system:serviceaccount:{NS}:default")),
        "{}",
        text(&out)
    );

    token_reviews(&s, &token);

    // The TokenRequest itself, with a duration.
    let request: Value = serde_json::from_str(&s.kubectl(&[
        "create",
        "token",
        "default",
        "-n",
        NS,
        "--duration",
        "10m",
        "-o",
        "json",
    ]))
    .expect("TokenRequest");
    assert_eq!(request["kind"], "TokenRequest");
    assert_eq!(request["spec"]["expirationSeconds"], 600);
    let issued = payload(request["status"]["token"].as_str().expect("token"));
    assert_eq!(
        issued["exp"]
            .as_i64()
            .zip(issued["iat"].as_i64())
            .map(|(e, i)| e - i),
        Some(600)
    );
    let out = s.kubectl_raw(&["create", "token", "default", "-n", NS, "--duration", "5m"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("may not specify a duration less than 10 minutes"),
        "{}",
        text(&out)
    );
    let out = s.kubectl_raw(&["create", "token", "nobody", "-n", NS]);
    assert!(
        text(&out).contains("serviceaccounts \"nobody\" not found"),
        "{}",
        text(&out)
    );

    // Another audience: a token, but not for this API.
    let vault = create_token(&s, &["--audience", "vault"]);
    assert_eq!(payload(&vault)["aud"], json!(["vault"]));
    assert_unauthorized(&s, &vault, "another audience");
    let out = kubectl_as(&s, &vault, &["auth", "whoami"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("Unauthorized"), "{}", text(&out));

    // A pod made with kubectl runs as `default`, with its token projected.
    s.kubectl(&[
        "run",
        "web",
        "-n",
        NS,
        "--image",
        "nginx",
        "--restart=Never",
    ]);
    let pod = s.json(&["get", "pod", "web", "-n", NS]);
    assert_eq!(pod["spec"]["serviceAccountName"], "default");
    assert_eq!(pod["spec"]["serviceAccount"], "default");
    let volume = pod["spec"]["volumes"]
        .as_array()
        .and_then(|v| {
            v.iter().find(|v| {
                v["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("kube-api-access-"))
            })
        })
        .cloned()
        .expect("kube-api-access volume");
    assert_eq!(
        volume["projected"]["sources"][0]["serviceAccountToken"],
        json!({"expirationSeconds": 3607, "path": "token"})
    );
    assert_eq!(
        pod["spec"]["containers"][0]["volumeMounts"],
        json!([{"name": volume["name"], "readOnly": true,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}])
    );

    // A token bound to the pod names it, and dies with it.
    let pod_uid = pod["metadata"]["uid"].as_str().expect("uid").to_string();
    let bound = create_token(
        &s,
        &[
            "--bound-object-kind",
            "Pod",
            "--bound-object-name",
            "web",
            "--bound-object-uid",
            &pod_uid,
        ],
    );
    let extra = whoami(&s, &bound)["status"]["userInfo"]["extra"].clone();
    assert_eq!(
        extra["authentication.kubernetes.io/pod-name"],
        json!(["web"])
    );
    assert_eq!(
        extra["authentication.kubernetes.io/pod-uid"],
        json!([pod_uid])
    );
    let (_, code) = get_with_token(&s, &bound, "/version");
    assert_eq!(code, 200);
    s.kubectl(&[
        "delete",
        "pod",
        "web",
        "-n",
        NS,
        "--grace-period=0",
        "--force",
        "--wait",
    ]);
    test_support::wait_until("the pod-bound token to be refused", WAIT, || {
        get_with_token(&s, &bound, "/version").1 == 401
    });
    assert_unauthorized(&s, &bound, "the pod is gone");
    // The unbound token lives on.
    assert_eq!(get_with_token(&s, &token, "/version").1, 200);

    forged_tokens(&s, &keys, &sa_uid);
}

/// Tokens the test signs itself with the server's key: a good one passes (so the others fail
/// for the one thing wrong with each).
fn forged_tokens(s: &Server, keys: &Keys, sa_uid: &str) {
    let now = chrono::Utc::now().timestamp();
    let claims = |iat: i64, exp: i64, aud: &str, iss: &str| {
        json!({
            "aud": [aud], "exp": exp, "iat": iat, "nbf": iat, "iss": iss,
            "jti": "forged",
            "kubernetes.io": {"namespace": NS, "serviceaccount": {"name": "default", "uid": sa_uid}},
            "sub": format!("system:serviceaccount:{NS}:default"),
        })
    };
    let good = keys.sign(&claims(now, now + 3600, ISSUER, ISSUER));
    let (body, code) = get_with_token(s, &good, "/version");
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        whoami(s, &good)["status"]["userInfo"]["extra"]
            ["authentication.kubernetes.io/credential-id"],
        json!(["JTI=forged"])
    );

    let expired = keys.sign(&claims(now - 7200, now - 3600, ISSUER, ISSUER));
    assert_unauthorized(s, &expired, "expired");
    let out = kubectl_as(s, &expired, &["auth", "whoami"]);
    assert!(text(&out).contains("Unauthorized"), "{}", text(&out));
    let not_yet = keys.sign(&claims(now + 3600, now + 7200, ISSUER, ISSUER));
    assert_unauthorized(s, &not_yet, "not valid yet");
    let audience = keys.sign(&claims(now, now + 3600, "vault", ISSUER));
    assert_unauthorized(s, &audience, "wrong audience");
    let issuer = keys.sign(&claims(
        now,
        now + 3600,
        ISSUER,
        "https://elsewhere.example",
    ));
    assert_unauthorized(s, &issuer, "another issuer");
    let mut wrong_uid = claims(now, now + 3600, ISSUER, ISSUER);
    wrong_uid["kubernetes.io"]["serviceaccount"]["uid"] = json!("not-the-uid");
    assert_unauthorized(s, &keys.sign(&wrong_uid), "another account's uid");

    // The good token with its payload changed (another namespace's account).
    let mut parts: Vec<String> = good.split('.').map(str::to_string).collect();
    let mut body = payload(&good);
    body["sub"] = json!("system:serviceaccount:kube-system:default");
    body["kubernetes.io"]["namespace"] = json!("kube-system");
    parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(&body).expect("json"));
    assert_unauthorized(s, &parts.join("."), "tampered");
    // Signed by another key.
    let stranger = Keys::new().sign(&claims(now, now + 3600, ISSUER, ISSUER));
    assert_unauthorized(s, &stranger, "another key");
    // Garbage and an oversized token: 401, and the server carries on.
    assert_unauthorized(s, "a.b.c", "garbage");
    // Over HTTP/1.1 (HTTP/2 refuses header lists beyond 16 KiB before anyone reads them), a
    // token of our issuer, signed, but too large to be parsed.
    let mut big = claims(now, now + 3600, ISSUER, ISSUER);
    big["padding"] = json!("p".repeat(80_000));
    let file = s.data_dir().join("big-token-header");
    std::fs::write(
        &file,
        format!("Authorization: Bearer {}\n", keys.sign(&big)),
    )
    .expect("header file");
    let out = Command::new("curl")
        .args([
            "-sS",
            "--http1.1",
            "--max-time",
            "20",
            "-w",
            "\n%{http_code}",
            "--cacert",
        ])
        .arg(s.data_dir().join("pki/ca.crt"))
        .arg("-H")
        .arg(format!("@{}", file.display()))
        .arg(format!("https://127.0.0.1:{}/version", s.secure_port))
        .output()
        .expect("run curl");
    let all = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        all.rsplit_once('\n'),
        Some((UNAUTHORIZED, "401")),
        "{}",
        text(&out)
    );
    assert_eq!(get_with_token(s, &good, "/version").1, 200);
}

/// A TokenReview of `token` for `audiences`, as another component's webhook authenticator
/// sends it.
fn review(s: &Server, token: &str, audiences: &[&str]) -> Output {
    let review = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token, "audiences": audiences},
    });
    s.manifest_output(&["create", "-f", "-", "-o", "json"], &review.to_string())
}

fn token_reviews(s: &Server, token: &str) {
    let out = review(s, token, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("TokenReview");
    let status = &answer["status"];
    assert_eq!(status["authenticated"], true, "{answer}");
    assert_eq!(
        status["user"]["username"],
        format!("system:serviceaccount:{NS}:default")
    );
    assert!(status["user"]["groups"]
        .as_array()
        .is_some_and(|g| g.contains(&json!("system:authenticated"))));
    assert_eq!(status["audiences"], json!([ISSUER]), "{answer}");
    assert_eq!(answer["spec"]["token"], token);

    // For audiences the token is not for, and for a token nobody issued.
    let out = review(s, token, &["vault"]);
    let answer: Value = serde_json::from_slice(&out.stdout).expect("TokenReview");
    assert!(answer["status"]["authenticated"].is_null(), "{answer}");
    assert!(
        answer["status"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("token audiences") && e.contains("vault")),
        "{answer}"
    );
    let out = review(s, "not-a-token", &[]);
    let answer: Value = serde_json::from_slice(&out.stdout).expect("TokenReview");
    assert_eq!(
        answer["status"]["error"], "invalid bearer token",
        "{answer}"
    );

    let out = review(s, "", &[]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("token is required for TokenReview in authentication"),
        "{}",
        text(&out)
    );
}

fn args(keys: &Keys) -> Vec<String> {
    vec!["--service-account-signing-key-file".into(), keys.file()]
}

#[test]
fn service_account_tokens_embedded() {
    let keys = Keys::new();
    let args = args(&keys);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    service_account_tokens(start_embedded_with(&args), keys);
}

#[test]
fn service_account_tokens_on_etcd() {
    let keys = Keys::new();
    let args = args(&keys);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    service_account_tokens(start_on_etcd_with(&args), keys);
}

/// Without a signing key file one is generated into the data dir and kept across restarts:
/// a token issued before a restart still works after it.
#[test]
fn generated_key_survives_restart() {
    let mut s = start_embedded_with(&[]);
    let key = s.data_dir().join("pki/sa.key");
    assert!(key.exists());
    test_support::wait_until("the default ServiceAccount", WAIT, || {
        s.kubectl_raw(&["get", "serviceaccount", "default", "-n", "default"])
            .status
            .success()
    });
    let token = s
        .kubectl(&["create", "token", "default"])
        .trim()
        .to_string();
    assert_eq!(get_with_token(&s, &token, "/version").1, 200);
    let before = std::fs::read(&key).expect("key");
    s.crash_and_restart();
    assert_eq!(std::fs::read(&key).expect("key"), before);
    test_support::wait_until("the restarted server to accept the token", WAIT, || {
        get_with_token(&s, &token, "/version").1 == 200
    });
    assert_mode_600(&key);
}

#[cfg(unix)]
fn assert_mode_600(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).expect("key").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[cfg(not(unix))]
fn assert_mode_600(_: &Path) {}
