use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower_http::catch_panic::CatchPanicLayer;

use super::*;
use crate::audit::log::Backend;
use crate::audit::policy::Policy;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  resources: [{resources: [configmaps], resourceNames: [quiet]}]
- level: Metadata
  resources: [{resources: [configmaps]}]
- level: RequestResponse
  resources: [{resources: [secrets]}]
  omitStages: [RequestReceived]
"#;

#[test]
fn source_ips_as_upstream() {
    let mut headers = HeaderMap::new();
    let remote: IpAddr = "10.0.0.9".parse().expect("ip");
    assert_eq!(source_ips(&headers, Some(remote)), ["10.0.0.9"]);
    headers.insert(
        "x-forwarded-for",
        HeaderValue::from_static("1.2.3.4, bad, 10.0.0.9"),
    );
    headers.insert("x-real-ip", HeaderValue::from_static("1.2.3.4"));
    // The remote address ending the chain is not repeated; X-Real-Ip already in it neither.
    assert_eq!(source_ips(&headers, Some(remote)), ["1.2.3.4", "10.0.0.9"]);
    headers.insert("x-real-ip", HeaderValue::from_static("5.6.7.8"));
    let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("ip");
    assert_eq!(
        source_ips(&headers, Some(mapped)),
        ["1.2.3.4", "10.0.0.9", "5.6.7.8", "127.0.0.1"]
    );
}

#[test]
fn long_user_agents_are_truncated() {
    let mut headers = HeaderMap::new();
    let long = "a".repeat(2000);
    headers.insert(
        header::USER_AGENT,
        HeaderValue::from_str(&long).expect("header"),
    );
    let agent = user_agent(&headers);
    assert_eq!(agent.len(), 1024 + "...TRUNCATED".len());
    assert!(agent.ends_with("a...TRUNCATED"));
}

#[test]
fn json_yaml_and_protobuf_bodies_are_read() {
    let kind = |ct: &str| {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(ct).expect("header"),
        );
        body_kind(&h)
    };
    assert_eq!(kind("application/json"), Some(Format::Json));
    assert_eq!(
        kind("application/strategic-merge-patch+json; charset=utf-8"),
        Some(Format::Json)
    );
    assert_eq!(kind("application/apply-patch+yaml"), Some(Format::Yaml));
    assert_eq!(
        kind("application/vnd.kubernetes.protobuf"),
        Some(Format::Protobuf)
    );
    assert_eq!(kind("text/plain"), None);
    assert_eq!(body_kind(&HeaderMap::new()), Some(Format::Json));
}

fn panicked(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .unwrap_or_default();
    let mut response = StatusCode::INTERNAL_SERVER_ERROR.into_response();
    response.extensions_mut().insert(Panicked(message));
    response
}

/// Serves `router` audited with [`POLICY`] into `log`, as `user`.
async fn serve(log: &Path, router: Router) -> (SocketAddr, Arc<Auditor>) {
    let policy = Policy::parse(POLICY.as_bytes()).expect("policy");
    let auditor = Arc::new(Auditor::new(
        policy,
        Backend::open(log, crate::audit::rotate::Rotation::new(0, 0, 0)).expect("log"),
    ));
    let user = UserInfo {
        name: "system:admin".into(),
        groups: vec!["system:masters".into(), "system:authenticated".into()],
        ..Default::default()
    };
    let app = auditor
        .layer(router.layer(CatchPanicLayer::custom(panicked)))
        .layer(axum::Extension(user));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await;
    });
    (addr, auditor)
}

/// One HTTP/1.1 request; the response's head and body.
async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra: &str,
    body: &str,
) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nUser-Agent: test/1\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut out = String::new();
    stream.read_to_string(&mut out).await.expect("read");
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.to_ascii_lowercase(), body.to_string())
}

/// The log's events once it holds `n`.
async fn events(log: &Path, n: usize) -> Vec<Value> {
    for _ in 0..200 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        if lines.len() >= n {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("fewer than {n} events in {}", log.display());
}

fn audit_id(head: &str) -> String {
    head.lines()
        .find_map(|l| l.strip_prefix("audit-id: "))
        .expect("an Audit-Id header")
        .to_string()
}

#[tokio::test]
async fn stages_levels_and_bodies() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("sub/audit.log");
    let router = Router::new()
        .route(
            "/api/v1/namespaces/default/configmaps",
            post(|body: String| async move {
                let mut object: Value = serde_json::from_str(&body).unwrap_or_default();
                object["metadata"]["uid"] = json!("u-1");
                (StatusCode::CREATED, axum::Json(object))
            })
            .get(|| async {
                let frames = futures::stream::iter(
                    ["{\"type\":\"ADDED\"}\n", "{\"type\":\"MODIFIED\"}\n"]
                        .map(|f| Ok::<_, std::io::Error>(f.to_string())),
                );
                axum::body::Body::from_stream(frames)
            }),
        )
        .route(
            "/api/v1/namespaces/default/secrets",
            post(|body: String| async move {
                let object: Value = serde_json::from_str(&body).unwrap_or_default();
                (StatusCode::CREATED, axum::Json(object))
            }),
        )
        .route(
            "/api/v1/namespaces/default/configmaps/{name}",
            get(|axum::extract::Path(name): axum::extract::Path<String>| async move {
                if name == "boom" {
                    panic!("boom went the handler");
                }
                (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure", "message": format!("configmaps \"{name}\" not found"),
                        "reason": "NotFound", "details": {"name": name, "kind": "configmaps"}, "code": 404})),
                )
            }),
        );
    let (addr, auditor) = serve(&log, router).await;

    let created =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"},"data":{"k":"v"}}"#;
    let json_type = "Content-Type: application/json\r\n";
    let (head, _) = send(
        addr,
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create",
        json_type,
        created,
    )
    .await;
    assert!(head.starts_with("http/1.1 201"), "{head}");
    let configmap_id = audit_id(&head);
    let events_1 = events(&log, 2).await;
    let [received, complete] = &events_1[..] else {
        panic!("{events_1:?}");
    };
    assert_eq!(received["stage"], "RequestReceived");
    assert_eq!(complete["stage"], "ResponseComplete");
    for e in [received, complete] {
        assert_eq!(e["auditID"], configmap_id.as_str());
        assert_eq!(e["level"], "Metadata");
        assert_eq!(e["verb"], "create");
        assert_eq!(e["user"]["username"], "system:admin");
        assert_eq!(e["sourceIPs"], json!(["127.0.0.1"]));
        assert_eq!(e["userAgent"], "test/1");
        assert_eq!(
            e["requestURI"],
            "/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create"
        );
        assert!(e.get("requestObject").is_none() && e.get("responseObject").is_none());
        assert_eq!(
            e["requestReceivedTimestamp"],
            received["requestReceivedTimestamp"]
        );
    }
    assert_eq!(
        received["stageTimestamp"],
        received["requestReceivedTimestamp"]
    );
    assert!(received.get("responseStatus").is_none());
    // The name is read from the created object's body.
    assert_eq!(
        complete["objectRef"],
        json!({"resource": "configmaps", "namespace": "default", "name": "web", "apiVersion": "v1"})
    );
    assert_eq!(
        complete["responseStatus"],
        json!({"metadata": {}, "code": 201})
    );

    // RequestResponse, RequestReceived omitted; the client's Audit-ID is kept.
    let secret =
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"p":"cGFzcw=="}}"#;
    let extra = format!("{json_type}Audit-ID: my-own-id\r\n");
    let (head, _) = send(
        addr,
        "POST",
        "/api/v1/namespaces/default/secrets",
        &extra,
        secret,
    )
    .await;
    assert_eq!(audit_id(&head), "my-own-id");
    let all = events(&log, 3).await;
    let secret_event = &all[2];
    assert_eq!(secret_event["stage"], "ResponseComplete");
    assert_eq!(secret_event["auditID"], "my-own-id");
    assert_eq!(secret_event["level"], "RequestResponse");
    let sent: Value = serde_json::from_str(secret).expect("json");
    assert_eq!(secret_event["requestObject"], sent);
    assert_eq!(secret_event["responseObject"], sent);

    // A Status response fills the response status at Metadata.
    send(
        addr,
        "GET",
        "/api/v1/namespaces/default/configmaps/gone",
        "",
        "",
    )
    .await;
    let all = events(&log, 5).await;
    assert_eq!(
        all[4]["responseStatus"],
        json!({"metadata": {}, "status": "Failure", "message": "configmaps \"gone\" not found",
               "reason": "NotFound", "details": {"name": "gone", "kind": "configmaps"}, "code": 404})
    );

    // A watch: ResponseStarted when its headers go, ResponseComplete when its stream ends.
    let (head, body) = send(
        addr,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true",
        "",
        "",
    )
    .await;
    assert!(body.contains("MODIFIED"), "{body}");
    let all = events(&log, 8).await;
    let stages: Vec<&Value> = all[5..].iter().map(|e| &e["stage"]).collect();
    assert_eq!(
        stages,
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
    assert!(all[5..]
        .iter()
        .all(|e| e["verb"] == "watch" && e["auditID"] == audit_id(&head).as_str()));
    assert_eq!(
        all[6]["responseStatus"],
        json!({"metadata": {}, "code": 200})
    );

    // A panic: RequestReceived then Panic, nothing else.
    let (head, _) = send(
        addr,
        "GET",
        "/api/v1/namespaces/default/configmaps/boom",
        "",
        "",
    )
    .await;
    assert!(head.starts_with("http/1.1 500"), "{head}");
    let all = events(&log, 10).await;
    assert_eq!(all[9]["stage"], "Panic");
    assert_eq!(
        all[9]["responseStatus"],
        json!({"metadata": {}, "status": "Failure", "message": "APIServer panic'd: boom went the handler",
               "reason": "InternalError", "code": 500})
    );

    // Level None: no event, but still an Audit-Id.
    let (head, _) = send(
        addr,
        "GET",
        "/api/v1/namespaces/default/configmaps/quiet",
        "",
        "",
    )
    .await;
    assert!(!audit_id(&head).is_empty());
    auditor.stop().await;
    let text = std::fs::read_to_string(&log).expect("log");
    assert_eq!(text.lines().count(), 10, "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test]
async fn later_filters_add_to_the_event() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("audit.log");
    let router = Router::new().route(
        "/api/v1/namespaces/default/configmaps/{name}",
        get(|request: Request| async move {
            let extensions = request.extensions();
            annotate(extensions, "authorization.k8s.io/decision", "allow");
            annotate(extensions, "authorization.k8s.io/decision", "forbid");
            annotate(extensions, "authorization.k8s.io/reason", "");
            let jane = UserInfo {
                name: "jane".into(),
                groups: vec!["devs".into()],
                ..Default::default()
            };
            record_impersonation(extensions, &jane);
            StatusCode::OK
        }),
    );
    let (addr, auditor) = serve(&log, router).await;
    send(
        addr,
        "GET",
        "/api/v1/namespaces/default/configmaps/x",
        "",
        "",
    )
    .await;
    let all = events(&log, 2).await;
    auditor.stop().await;
    // RequestReceived is written before the later filters run.
    assert!(all[0].get("impersonatedUser").is_none() && all[0].get("annotations").is_none());
    assert_eq!(
        all[1]["impersonatedUser"],
        json!({"username": "jane", "groups": ["devs"]})
    );
    assert_eq!(all[1]["user"]["username"], "system:admin");
    // A key keeps its first value.
    assert_eq!(
        all[1]["annotations"],
        json!({"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""})
    );
}
