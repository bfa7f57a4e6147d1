//! What admission webhooks and policies cost a write, in one run on the embedded store: the
//! release binary (as a user starts it) takes ConfigMap creates from 32 keep-alive clients,
//! first with no webhook or policy configured, then with 1 and with 10 validating webhooks
//! matching every create (a real HTTPS webhook on loopback, in this process, answering
//! `allowed`), then with 10 ValidatingAdmissionPolicies (CEL over the object) bound to every
//! create. Each configuration is measured in rounds alternating with the baseline, and the
//! table gives creates/s, p50 and p99, and the ratio to the baseline of the same round.
//!
//! `cargo bench -p apiserver --bench admission`; `BENCH_OBJECTS` sets the creates per phase
//! (default 3000), `BENCH_ROUNDS` the rounds (3); the server binary from `APISERVER_BIN`,
//! default the one cargo built.

#[path = "http/load.rs"]
#[allow(dead_code)]
mod load;
#[path = "../../e2e/support/webhook_server.rs"]
#[allow(dead_code)]
mod webhook_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use load::Phase;
use serde_json::{json, Value};
use test_support::server::{self, Launch};
use test_support::stats::{median, ms};
use webhook_server::{allow, WebhookServer};

const CLIENTS: usize = 32;

type HttpClient = Client<HttpConnector, Full<Bytes>>;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}

/// One request; the status and the body.
async fn send(client: &HttpClient, method: Method, url: &str, body: &Value) -> (StatusCode, Bytes) {
    let body = if body.is_null() {
        Bytes::new()
    } else {
        Bytes::from(body.to_string())
    };
    let req = Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .body(Full::new(body))
        .expect("request");
    match client.request(req).await {
        Ok(response) => {
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            (status, body)
        }
        Err(e) => (StatusCode::BAD_GATEWAY, Bytes::from(e.to_string())),
    }
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "bench"}},
        "data": {"key": "x".repeat(512)}})
}

/// A validating webhook taking every ConfigMap create.
fn webhook(i: usize, hooks: &WebhookServer) -> Value {
    json!({"name": format!("allow-{i}.bench.test"),
        "clientConfig": {"url": format!("https://127.0.0.1:{}/allow", hooks.port), "caBundle": hooks.ca_bundle},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail"})
}

/// What a configuration writes: (collection path, object) pairs.
fn setup(webhooks: usize, policies: usize, hooks: &WebhookServer) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    if webhooks > 0 {
        let list: Vec<Value> = (0..webhooks).map(|i| webhook(i, hooks)).collect();
        out.push((
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations".into(),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "bench"}, "webhooks": list}),
        ));
    }
    for i in 0..policies {
        out.push((
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies".into(),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": format!("bench-{i}")},
                "spec": {"failurePolicy": "Fail",
                    "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""],
                        "apiVersions": ["v1"], "resources": ["configmaps"]}]},
                    "validations": [
                        {"expression": "object.metadata.name.size() <= 253", "message": "name too long"},
                        {"expression": "!has(object.data) || object.data.all(k, k.size() < 64)"},
                        {"expression": "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)",
                            "messageExpression": "'label forbidden on ' + object.metadata.name"}]}}),
        ));
        out.push((
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings".into(),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": format!("bench-{i}")},
                "spec": {"policyName": format!("bench-{i}"), "validationActions": ["Deny"]}}),
        ));
    }
    out
}

struct Bench<'a> {
    client: HttpClient,
    base: String,
    hooks: &'a WebhookServer,
    objects: usize,
    created: usize,
}

impl Bench<'_> {
    /// Creates `objects` ConfigMaps with new names from `CLIENTS` clients.
    async fn creates(&mut self) -> Phase {
        let first = self.created;
        self.created += self.objects;
        let url = format!("{}/api/v1/namespaces/default/configmaps", self.base);
        let bodies: Vec<Bytes> = (first..self.created)
            .map(|i| Bytes::from(configmap(&format!("cm-{i:07}")).to_string()))
            .collect();
        let client = self.client.clone();
        load::run(CLIENTS, bodies, move |body| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let req = Request::builder()
                    .method(Method::POST)
                    .uri(url)
                    .header("content-type", "application/json")
                    .body(Full::new(body))
                    .map_err(|e| e.to_string())?;
                let response = client.request(req).await.map_err(|e| e.to_string())?;
                let status = response.status();
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| e.to_string())?;
                if status != StatusCode::CREATED {
                    let text = String::from_utf8_lossy(&body.to_bytes()).into_owned();
                    return Err(format!("{status}: {text}"));
                }
                Ok(())
            }
        })
        .await
    }

    /// Writes a configuration and waits until it acts (the webhooks are called, or a
    /// policy's binding refuses its probe), or removes it and waits until it no longer does.
    async fn configure(&mut self, objects: &[(String, Value)], present: bool) {
        if objects.is_empty() {
            return;
        }
        for (collection, obj) in objects {
            let url = format!("{}{collection}", self.base);
            if present {
                let (status, body) = send(&self.client, Method::POST, &url, obj).await;
                assert!(
                    status.is_success(),
                    "{status}: {}",
                    String::from_utf8_lossy(&body)
                );
            } else {
                let name = obj["metadata"]["name"].as_str().unwrap_or_default();
                send(
                    &self.client,
                    Method::DELETE,
                    &format!("{url}/{name}"),
                    &Value::Null,
                )
                .await;
            }
        }
        let policy = objects.iter().any(|(c, _)| c.ends_with("policies"));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let seen = self.hooks.reviews.lock().map(|r| r.len()).unwrap_or(0);
            let name = format!("probe-{}", self.created);
            self.created += 1;
            let mut probe = configmap(&name);
            probe["metadata"]["labels"]["forbidden"] = json!("yes");
            let url = format!("{}/api/v1/namespaces/default/configmaps", self.base);
            let (status, _) = send(&self.client, Method::POST, &url, &probe).await;
            let called = self.hooks.reviews.lock().map(|r| r.len()).unwrap_or(0) > seen;
            let acting = if policy { !status.is_success() } else { called };
            if acting == present {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the configuration never took effect"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

struct Row {
    name: &'static str,
    ops: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
    ratio: Vec<f64>,
}

fn main() {
    let objects = env_usize("BENCH_OBJECTS", 3000);
    let rounds = env_usize("BENCH_ROUNDS", 3);
    let hooks = WebhookServer::start(
        "bench.webhooks.svc",
        Arc::new(|_path: &str, review: &Value| allow(review, json!({}))),
    );
    // Ready (its /readyz 200) before the clients start.
    let server = Launch::new(server::binary(env!("CARGO_BIN_EXE_apiserver")))
        .without_secure_port()
        .args(["--nodes", "0", "--scheduler=false"])
        .log_level("error")
        .start();
    let port = server.port;
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client: HttpClient = Client::builder(TokioExecutor::new()).build(connector);
        let base = format!("http://127.0.0.1:{port}");
        let mut bench = Bench { client, base, hooks: &hooks, objects, created: 0 };
        // Warm-up: connections, caches, the allocator.
        bench.creates().await;
        let configurations: [(&'static str, usize, usize); 4] = [
            ("no admission webhooks or policies", 0, 0),
            ("1 validating webhook", 1, 0),
            ("10 validating webhooks", 10, 0),
            ("10 admission policies", 0, 10),
        ];
        let mut rows: Vec<Row> = configurations
            .iter()
            .map(|(name, ..)| Row { name, ops: vec![], p50: vec![], p99: vec![], ratio: vec![] })
            .collect();
        for round in 0..rounds {
            for (i, (name, webhooks, policies)) in configurations.iter().enumerate() {
                let objects = setup(*webhooks, *policies, bench.hooks);
                bench.configure(&objects, true).await;
                let baseline = if i == 0 { None } else { Some(rows[0].ops[round]) };
                let phase = bench.creates().await;
                bench.configure(&objects, false).await;
                if phase.errors > 0 {
                    eprintln!("{name}: {} errors, first: {:?}", phase.errors, phase.first_error);
                }
                let row = &mut rows[i];
                row.ops.push(phase.ops_per_sec);
                row.p50.push(ms(phase.p50));
                row.p99.push(ms(phase.p99));
                row.ratio.push(baseline.map_or(1.0, |b| b / phase.ops_per_sec.max(1e-9)));
            }
        }
        println!(
            "\nConfigMap creates through the release binary (embedded store), {CLIENTS} clients, {objects} per phase, median of {rounds} rounds:\n"
        );
        println!(
            "| {:<34} | {:>10} | {:>8} | {:>8} | {:>22} |",
            "admission", "creates/s", "p50 ms", "p99 ms", "baseline ÷ this (ops)"
        );
        println!("|{:-<36}|{:-<12}|{:-<10}|{:-<10}|{:-<24}|", "", "", "", "", "");
        for row in rows {
            println!(
                "| {:<34} | {:>10.0} | {:>8.2} | {:>8.2} | {:>22.2} |",
                row.name,
                median(row.ops),
                median(row.p50),
                median(row.p99),
                median(row.ratio)
            );
        }
    });
}
