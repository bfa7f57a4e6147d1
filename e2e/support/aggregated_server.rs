//! A real aggregated API server on loopback (HTTPS, hyper over rustls) serving the sample
//! group `wardle.example.com/v1alpha1` with namespaced `flunders`, as upstream's
//! sample-apiserver does. It requires a client certificate signed by the CA it is given
//! (the published requestheader CA) and keeps, for every request, its path, headers and the
//! client certificate's common name, so a test can check what the aggregator sent.
//! Watches stream two events a moment apart; an upgrade request is answered 101 and echoed.
//! It also poses as metrics-server (`metrics.k8s.io/v1beta1`, legacy discovery only): one
//! PodMetrics `fake` using [`FAKE_CPU`] in any namespace.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::{json, Value};

use super::webhook_server::serving_certificate;

pub const GROUP: &str = "wardle.example.com";
pub const VERSION: &str = "v1alpha1";
/// The CPU the posing metrics-server reports.
pub const FAKE_CPU: &str = "777m";
const METRICS: &str = "/apis/metrics.k8s.io/v1beta1";

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// Header names in lower case, in the order received (repeats kept).
    pub headers: Vec<(String, String)>,
    /// The common name of the client certificate presented.
    pub client_cn: String,
}

impl Seen {
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

pub struct AggregatedServer {
    pub port: u16,
    /// The CA that verifies the server (base64 PEM, as `caBundle` takes it).
    pub ca_bundle: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    runtime: Option<tokio::runtime::Runtime>,
}

fn flunder(ns: &str, name: &str) -> Value {
    json!({"apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Flunder",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"),
            "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"reference": "wardle"}})
}

fn resource_list() -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": [{"name": "flunders", "singularName": "flunder", "namespaced": true,
            "kind": "Flunder", "verbs": ["create", "get", "list", "watch"], "shortNames": ["fl"]}]})
}

fn aggregated_doc() -> Value {
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
        "items": [{"metadata": {"name": GROUP}, "versions": [{"version": VERSION, "freshness": "Current",
            "resources": [{"resource": "flunders", "singularResource": "flunder", "scope": "Namespaced",
                "responseKind": {"group": GROUP, "version": VERSION, "kind": "Flunder"},
                "verbs": ["create", "get", "list", "watch"], "shortNames": ["fl"]}]}]}]})
}

fn full(status: u16, content_type: &str, body: Vec<u8>) -> hyper::Response<Body> {
    hyper::Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)).boxed())
        .expect("a response")
}

fn json_response(status: u16, body: &Value) -> hyper::Response<Body> {
    full(status, "application/json", body.to_string().into_bytes())
}

/// Two watch events, the second after a pause: the client sees the first before the end.
fn watch_stream(ns: &str) -> hyper::Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
    let ns = ns.to_string();
    tokio::spawn(async move {
        for name in ["alpha", "beta"] {
            let event = json!({"type": "ADDED", "object": flunder(&ns, name)});
            let _ = tx.send(Bytes::from(format!("{event}\n"))).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    hyper::Response::builder()
        .header("content-type", "application/json")
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .expect("a response")
}

/// 101, then whatever the client sends comes back.
fn echo_upgrade(req: &mut hyper::Request<Incoming>) -> hyper::Response<Body> {
    let on = hyper::upgrade::on(req);
    tokio::spawn(async move {
        if let Ok(upgraded) = on.await {
            let (mut reader, mut writer) = tokio::io::split(TokioIo::new(upgraded));
            let _ = tokio::io::copy(&mut reader, &mut writer).await;
        }
    });
    hyper::Response::builder()
        .status(101)
        .header("connection", "Upgrade")
        .header("upgrade", "echo-test")
        .body(Full::new(Bytes::new()).boxed())
        .expect("a response")
}

/// metrics-server's answers: its resource list, and one PodMetrics per namespace.
fn metrics_server(rest: &str) -> hyper::Response<Body> {
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [] => json_response(
            200,
            &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "metrics.k8s.io/v1beta1",
                "resources": [
                    {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
                    {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]}]}),
        ),
        ["namespaces", ns, "pods"] => json_response(
            200,
            &json!({"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {},
                "items": [{"metadata": {"name": "fake", "namespace": ns, "creationTimestamp": "2026-01-01T00:00:00Z"},
                    "timestamp": "2026-01-01T00:00:00Z", "window": "15s",
                    "containers": [{"name": "app", "usage": {"cpu": FAKE_CPU, "memory": "1Mi"}}]}]}),
        ),
        _ => json_response(
            404,
            &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "reason": "NotFound", "code": 404, "message": "the server could not find the requested resource"}),
        ),
    }
}

async fn handle(mut req: hyper::Request<Incoming>) -> hyper::Response<Body> {
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or_default().to_string();
    let accept = req
        .headers()
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let upgrade = req.headers().contains_key("upgrade");
    let prefix = format!("/apis/{GROUP}/{VERSION}");
    let parts: Vec<&str> = path
        .strip_prefix(&prefix)
        .unwrap_or("!")
        .split('/')
        .filter(|p| !p.is_empty())
        .collect();
    if let Some(rest) = path.strip_prefix(METRICS) {
        return metrics_server(rest);
    }
    match (req.method().as_str(), path.as_str(), parts.as_slice()) {
        (_, "/apis", _) if accept.contains("as=APIGroupDiscoveryList") => full(
            200,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            aggregated_doc().to_string().into_bytes(),
        ),
        (_, p, []) if p == prefix => json_response(200, &resource_list()),
        ("GET", _, ["namespaces", ns, "flunders"]) if query.contains("watch=true") => {
            watch_stream(ns)
        }
        ("GET", _, ["namespaces", ns, "flunders"]) => json_response(
            200,
            &json!({"apiVersion": format!("{GROUP}/{VERSION}"), "kind": "FlunderList",
                "metadata": {"resourceVersion": "1"}, "items": [flunder(ns, "alpha")]}),
        ),
        (_, _, ["namespaces", _, "flunders", _, "echo"]) if upgrade => echo_upgrade(&mut req),
        ("GET", _, ["namespaces", ns, "flunders", name]) => json_response(200, &flunder(ns, name)),
        ("POST", _, ["namespaces", _, "flunders"]) => {
            let body = req
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            full(201, "application/json", body.to_vec())
        }
        _ => json_response(
            404,
            &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "reason": "NotFound", "code": 404, "message": "the server could not find the requested resource"}),
        ),
    }
}

fn common_name(der: &[u8]) -> String {
    x509_parser::parse_x509_certificate(der)
        .ok()
        .and_then(|(_, cert)| {
            cert.subject()
                .iter_common_name()
                .next()
                .and_then(|cn| cn.as_str().ok().map(str::to_string))
        })
        .unwrap_or_default()
}

impl AggregatedServer {
    /// Serves on 127.0.0.1 with a certificate also valid for `dns_name`, accepting only
    /// client certificates `client_ca_pem` signs.
    pub fn start(dns_name: &str, client_ca_pem: &str) -> Self {
        let (chain, key, ca_bundle) = serving_certificate(dns_name);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(client_ca_pem.as_bytes()) {
            roots.add(cert.expect("a CA")).expect("a CA");
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .expect("client verifier");
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .expect("TLS config");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(SocketAddr::from((
                [127, 0, 0, 1],
                0,
            ))))
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let kept = seen.clone();
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                let kept = kept.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let client_cn = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .map(|c| common_name(c))
                        .unwrap_or_default();
                    let service = service_fn(move |req: hyper::Request<Incoming>| {
                        let kept = kept.clone();
                        let client_cn = client_cn.clone();
                        async move {
                            let headers = req
                                .headers()
                                .iter()
                                .map(|(n, v)| {
                                    (
                                        n.as_str().to_string(),
                                        v.to_str().unwrap_or_default().to_string(),
                                    )
                                })
                                .collect();
                            if let Ok(mut k) = kept.lock() {
                                k.push(Seen {
                                    method: req.method().to_string(),
                                    path: req.uri().to_string(),
                                    headers,
                                    client_cn,
                                });
                            }
                            Ok::<_, Infallible>(handle(req).await)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        Self {
            port,
            ca_bundle,
            seen,
            runtime: Some(runtime),
        }
    }

    /// The requests received whose path starts with `prefix`.
    pub fn received(&self, prefix: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .map(|s| {
                s.iter()
                    .filter(|r| r.path.starts_with(prefix))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Stops serving: the port refuses connections from now on.
    pub fn stop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
