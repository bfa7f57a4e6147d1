//! The audit log (`--audit-policy-file`, `--audit-log-path`), as kube-apiserver writes it:
//! audit.k8s.io/v1 Events, one JSON object per line, at the level the first matching policy
//! rule sets; the `Audit-Id` response header names the request's events.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

/// Metadata for configmaps, RequestResponse for secrets (without RequestReceived), nothing
/// else (so no health checks or discovery in the log).
const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  resources:
  - group: ""
    resources: ["secrets"]
  omitStages: ["RequestReceived"]
- level: Metadata
  resources:
  - group: ""
    resources: ["configmaps"]
- level: None
"#;

/// A temp dir holding the policy, and the policy's and the log's paths.
fn files() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tmp");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("policy file");
    let log = dir.path().join("logs/audit.log");
    (dir, policy, log)
}

fn start(on_etcd: bool, policy: &Path, log: &Path) -> Server {
    let args = [
        "--audit-policy-file",
        policy.to_str().expect("utf-8 path"),
        "--audit-log-path",
        log.to_str().expect("utf-8 path"),
    ];
    let s = if on_etcd {
        start_on_etcd_with(&args)
    } else {
        start_embedded_with(&args)
    };
    ready(&s);
    s
}

/// Waits for readiness and the kubeconfig.
fn ready(s: &Server) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.get("/readyz").status != 200 || !s.kubeconfig.exists() {
        assert!(Instant::now() < deadline, "the server never got ready");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every whole line of the log, each of which must be one JSON Event. The writer appends as
/// the reader reads: a last line without its newline is still being written, and is left for
/// the next read.
fn events(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole
        .lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            assert_eq!(event["kind"], "Event", "{line}");
            assert_eq!(event["apiVersion"], "audit.k8s.io/v1", "{line}");
            event
        })
        .collect()
}

/// The events `select` picks, once there are `n` of them (the writer is asynchronous).
fn wait_for(log: &Path, n: usize, select: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let picked: Vec<Value> = events(log).into_iter().filter(|e| select(e)).collect();
        if picked.len() >= n || Instant::now() > deadline {
            return picked;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn is(event: &Value, verb: &str, resource: &str) -> bool {
    event["verb"] == verb && event["objectRef"]["resource"] == resource
}

fn header<'a>(headers: &'a str, name: &str) -> Option<&'a str> {
    headers.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

fn audits_creates_at_their_levels(on_etcd: bool) {
    let (_dir, policy, log) = files();
    let s = start(on_etcd, &policy, &log);

    // Metadata: the request's who and what, no bodies.
    s.kubectl(&["create", "configmap", "audited", "--from-literal=a=b"]);
    let created = wait_for(&log, 2, |e| is(e, "create", "configmaps"));
    let stages: Vec<&Value> = created.iter().map(|e| &e["stage"]).collect();
    assert_eq!(
        stages,
        ["RequestReceived", "ResponseComplete"],
        "{created:#?}"
    );
    assert_eq!(created[0]["auditID"], created[1]["auditID"]);
    assert_eq!(
        created[0]["requestReceivedTimestamp"],
        created[1]["requestReceivedTimestamp"]
    );
    for event in &created {
        assert_eq!(event["level"], "Metadata");
        assert_eq!(event["user"]["username"], "system:admin");
        let groups = event["user"]["groups"].as_array().expect("groups");
        assert!(groups.iter().any(|g| g == "system:masters"), "{event}");
        assert_eq!(event["sourceIPs"], serde_json::json!(["127.0.0.1"]));
        assert!(event["userAgent"]
            .as_str()
            .is_some_and(|ua| ua.starts_with("kubectl/")));
        assert!(event["requestURI"]
            .as_str()
            .is_some_and(|uri| uri.starts_with("/api/v1/namespaces/default/configmaps")));
        assert!(event.get("requestObject").is_none(), "{event}");
        assert!(event.get("responseObject").is_none(), "{event}");
        let micro = event["stageTimestamp"].as_str().expect("stageTimestamp");
        assert!(
            chrono::DateTime::parse_from_rfc3339(micro).is_ok() && micro.len() == 27,
            "{micro}"
        );
    }
    let complete = &created[1];
    assert_eq!(complete["objectRef"]["namespace"], "default");
    assert_eq!(complete["objectRef"]["name"], "audited", "{complete}");
    assert_eq!(complete["objectRef"]["apiVersion"], "v1");
    assert_eq!(complete["responseStatus"]["code"], 201);

    // RequestResponse, with RequestReceived omitted: the secret as sent and as stored.
    s.kubectl(&[
        "create",
        "secret",
        "generic",
        "audited",
        "--from-literal=password=hunter2",
    ]);
    let secrets = wait_for(&log, 1, |e| is(e, "create", "secrets"));
    assert_eq!(secrets.len(), 1, "{secrets:#?}");
    let secret = &secrets[0];
    assert_eq!(secret["stage"], "ResponseComplete");
    assert_eq!(secret["level"], "RequestResponse");
    assert_eq!(secret["objectRef"]["name"], "audited");
    // "hunter2", base64.
    assert_eq!(
        secret["requestObject"]["data"]["password"], "aHVudGVyMg==",
        "{secret}"
    );
    assert_eq!(secret["requestObject"]["kind"], "Secret");
    assert_eq!(secret["responseObject"]["data"]["password"], "aHVudGVyMg==");
    let uid = secret["responseObject"]["metadata"]["uid"].as_str();
    assert!(uid.is_some_and(|u| !u.is_empty()), "{secret}");
    assert_eq!(
        secret["objectRef"]["uid"],
        Value::Null,
        "a create names no uid"
    );
    assert_eq!(secret["responseStatus"]["code"], 201);

    // The Audit-Id header names the request's events; an error's Status fills its status.
    let missing = s.get("/api/v1/namespaces/default/configmaps/absent");
    assert_eq!(missing.status, 404);
    let id = header(&missing.headers, "audit-id").expect("an Audit-Id header");
    let got = wait_for(&log, 2, |e| e["auditID"] == id);
    assert_eq!(got.len(), 2, "{got:#?}");
    let status = &got[1]["responseStatus"];
    assert_eq!(status["code"], 404);
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "configmaps \"absent\" not found");
    assert_eq!(got[1]["user"]["username"], "system:apiserver");

    // Impersonation and authorization add to the event of the authenticated user.
    let out = s.kubectl_raw(&["--as", "jane", "get", "configmap", "audited"]);
    assert!(!out.status.success(), "jane may not read configmaps");
    // (RequestReceived is written before impersonation.)
    let denied = wait_for(&log, 1, |e| {
        is(e, "get", "configmaps") && e["impersonatedUser"]["username"] == "jane"
    });
    assert_eq!(denied.len(), 1, "{denied:#?}");
    let denied = &denied[0];
    assert_eq!(denied["stage"], "ResponseComplete");
    assert_eq!(denied["user"]["username"], "system:admin");
    assert_eq!(denied["responseStatus"]["code"], 403);
    assert_eq!(
        denied["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );

    // Not in the policy: no event, the header all the same.
    let health = s.get("/healthz");
    let id = header(&health.headers, "audit-id").expect("an Audit-Id header");
    assert!(events(&log).iter().all(|e| e["auditID"] != id));
    assert!(events(&log).iter().all(|e| e.get("objectRef").is_some()));
}

#[test]
fn creates_are_audited_at_their_levels_embedded() {
    audits_creates_at_their_levels(false);
}

#[test]
fn creates_are_audited_at_their_levels_on_etcd() {
    audits_creates_at_their_levels(true);
}

fn watches_get_response_started(on_etcd: bool) {
    let (_dir, policy, log) = files();
    let s = start(on_etcd, &policy, &log);
    let watched = s.get("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1");
    assert_eq!(watched.status, 200, "{}", watched.body);
    let id = header(&watched.headers, "audit-id").expect("an Audit-Id header");
    let watch = wait_for(&log, 3, |e| e["auditID"] == id);
    let stages: Vec<&Value> = watch.iter().map(|e| &e["stage"]).collect();
    assert_eq!(
        stages,
        ["RequestReceived", "ResponseStarted", "ResponseComplete"],
        "{watch:#?}"
    );
    assert!(watch.iter().all(|e| e["verb"] == "watch"));
    assert_eq!(watch[1]["responseStatus"]["code"], 200);
    // The stream's end comes after its start.
    assert!(watch[2]["stageTimestamp"].as_str() >= watch[1]["stageTimestamp"].as_str());
}

#[test]
fn watches_get_response_started_embedded() {
    watches_get_response_started(false);
}

#[test]
fn watches_get_response_started_on_etcd() {
    watches_get_response_started(true);
}

#[test]
fn a_client_audit_id_is_kept() {
    let (_dir, policy, log) = files();
    let s = start(false, &policy, &log);
    let response = s.request(
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("Audit-ID", "from-the-front-proxy")],
        b"",
    );
    assert_eq!(
        header(&response.headers, "audit-id"),
        Some("from-the-front-proxy")
    );
    let listed = wait_for(&log, 2, |e| e["auditID"] == "from-the-front-proxy");
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["verb"], "list");
}

#[test]
fn a_dash_logs_to_standard_out() {
    let dir = tempfile::tempdir().expect("tmp");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("policy file");
    let s = start_embedded_with(&[
        "--audit-policy-file",
        policy.to_str().expect("utf-8"),
        "--audit-log-path",
        "-",
    ]);
    ready(&s);
    s.kubectl(&["create", "configmap", "to-stdout"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.logged(r#""kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata""#) < 2 {
        assert!(Instant::now() < deadline, "no audit events on standard out");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_invalid_policy_refuses_to_start() {
    let dir = tempfile::tempdir().expect("tmp");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n",
    )
    .expect("policy file");
    let log = dir.path().join("audit.log");
    let said = support::refused_start(
        dir.path(),
        &[
            "--audit-policy-file",
            policy.to_str().expect("utf-8"),
            "--audit-log-path",
            log.to_str().expect("utf-8"),
        ],
    );
    assert!(
        said.contains(&format!(
            r#"loading audit policy file: rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse": from file {}"#,
            policy.display()
        )),
        "{said}"
    );
    assert!(!log.exists());
    let missing = support::refused_start(
        dir.path(),
        &["--audit-policy-file", "/nonexistent/policy.yaml"],
    );
    assert!(
        missing.contains(r#"failed to read file path "/nonexistent/policy.yaml""#),
        "{missing}"
    );
}
