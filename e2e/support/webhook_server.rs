//! A real HTTPS server on loopback for admission webhook tests (hyper over rustls, as axum
//! serves): a CA of its own, a serving certificate for 127.0.0.1 and a Service name, and a
//! handler from AdmissionReview to AdmissionReview; every review received is kept.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{json, Value};

/// What a webhook answers to a review (its path, its request).
pub type Handler = Arc<dyn Fn(&str, &Value) -> Value + Send + Sync>;

pub struct WebhookServer {
    pub port: u16,
    /// The CA bundle (PEM) that verifies the server, base64 as `caBundle` takes it.
    pub ca_bundle: String,
    pub reviews: Arc<Mutex<Vec<(String, Value)>>>,
    _runtime: tokio::runtime::Runtime,
}

/// An allowed response to `review`, with extra response fields.
pub fn allow(review: &Value, extra: Value) -> Value {
    let mut response = json!({"uid": review["request"]["uid"], "allowed": true});
    if let (Some(r), Some(e)) = (response.as_object_mut(), extra.as_object()) {
        r.extend(e.clone());
    }
    json!({"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response})
}

/// A refusal with the Status given.
pub fn deny(review: &Value, status: Value) -> Value {
    json!({"apiVersion": review["apiVersion"], "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": false, "status": status}})
}

/// A JSON patch as a response carries it.
pub fn patch(ops: Value) -> Value {
    json!({"patchType": "JSONPatch",
        "patch": base64::engine::general_purpose::STANDARD.encode(ops.to_string())})
}

/// A CA of its own and a serving certificate it signs for 127.0.0.1 and `dns_name`: the
/// chain, its key, and the CA as `caBundle` takes it (base64 of the PEM).
pub fn serving_certificate(
    dns_name: &str,
) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>, String) {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
    let issuer = Issuer::new(ca_params, &ca_key);
    let key = KeyPair::generate().expect("serving key");
    let mut params = CertificateParams::new(vec![dns_name.to_string()]).expect("serving params");
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().expect("an IP")));
    let cert = params
        .signed_by(&key, &issuer)
        .expect("serving certificate");
    (
        vec![CertificateDer::from(cert.der().to_vec())],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        base64::engine::general_purpose::STANDARD.encode(ca_cert.pem()),
    )
}

impl WebhookServer {
    /// Serves `handler` on 127.0.0.1 with a certificate also valid for `dns_name`.
    pub fn start(dns_name: &str, handler: Handler) -> Self {
        let (chain, key, ca_bundle) = serving_certificate(dns_name);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("TLS config");
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
        let reviews: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let kept = reviews.clone();
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                let handler = handler.clone();
                let kept = kept.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req: hyper::Request<Incoming>| {
                        let handler = handler.clone();
                        let kept = kept.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let body = req.into_body().collect().await?.to_bytes();
                            let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                            if let Ok(mut k) = kept.lock() {
                                k.push((path.clone(), review.clone()));
                            }
                            let answer = handler(&path, &review);
                            Ok::<_, hyper::Error>(hyper::Response::new(Full::new(Bytes::from(
                                answer.to_string(),
                            ))))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self {
            port,
            ca_bundle,
            reviews,
            _runtime: runtime,
        }
    }

    /// The reviews received at `path`.
    pub fn received(&self, path: &str) -> Vec<Value> {
        self.reviews
            .lock()
            .map(|r| {
                r.iter()
                    .filter(|(p, _)| p == path)
                    .map(|(_, v)| v.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}
