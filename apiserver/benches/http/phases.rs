//! The four measured phases: creates and gets of ConfigMaps, on the registry Store directly
//! and through HTTP. Inputs are built before a phase starts, so only the operation is timed.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::CONTENT_TYPE;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use registry::options::{ListOptions, WriteOptions};
use registry::Store;
use serde_json::{json, Value};

use crate::load::{self, Phase};
use crate::server::NAMESPACE;

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// One pooled client: concurrent requests each take a kept-alive connection of the pool.
pub fn http_client() -> HttpClient {
    let mut connector = HttpConnector::new();
    // As Go's net/http (client-go, kubectl) does by default.
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new()).build(connector)
}

/// A ConfigMap of about 1 KiB, its data in several keys as real ones have.
pub fn configmap(name: &str) -> Value {
    let data: serde_json::Map<String, Value> = (0..8)
        .map(|k| (format!("key-{k}"), json!(format!("{name}-{k}-").repeat(4))))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "bench"}},
        "data": data,
    })
}

fn configmaps_uri(addr: SocketAddr, name: Option<&str>) -> Uri {
    let base = format!("http://{addr}/api/v1/namespaces/{NAMESPACE}/configmaps");
    let uri = match name {
        Some(name) => format!("{base}/{name}"),
        None => base,
    };
    uri.parse().expect("uri")
}

pub async fn store_create(store: &Arc<Store>, clients: usize, names: &[String]) -> Phase {
    let objects: Vec<Value> = names.iter().map(|n| configmap(n)).collect();
    let store = store.clone();
    load::run(clients, objects, move |obj| {
        let store = store.clone();
        async move {
            store
                .create(Some(NAMESPACE), obj, &WriteOptions::default())
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        }
    })
    .await
}

pub async fn store_get(store: &Arc<Store>, clients: usize, names: &[String]) -> Phase {
    let store = store.clone();
    load::run(clients, names.to_vec(), move |name| {
        let store = store.clone();
        async move {
            store
                .get_json(Some(NAMESPACE), &name, &ListOptions::default())
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        }
    })
    .await
}

/// Sends one request and reads the whole response (a connection returns to the pool only
/// once its body is read), checking the status.
async fn exchange(
    client: &HttpClient,
    req: Request<Full<Bytes>>,
    want: StatusCode,
) -> Result<(), String> {
    let response = client.request(req).await.map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    if status != want || body.is_empty() {
        let head = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        return Err(format!("{status} (want {want}): {head}"));
    }
    Ok(())
}

pub async fn http_create(
    client: &HttpClient,
    addr: SocketAddr,
    clients: usize,
    names: &[String],
) -> Phase {
    let bodies: Vec<Bytes> = names
        .iter()
        .map(|n| Bytes::from(serde_json::to_vec(&configmap(n)).expect("json")))
        .collect();
    let (client, uri) = (client.clone(), configmaps_uri(addr, None));
    load::run(clients, bodies, move |body| {
        let req = Request::builder()
            .method(Method::POST)
            .uri(uri.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .expect("request");
        let client = client.clone();
        async move { exchange(&client, req, StatusCode::CREATED).await }
    })
    .await
}

pub async fn http_get(
    client: &HttpClient,
    addr: SocketAddr,
    clients: usize,
    names: &[String],
) -> Phase {
    let uris: Vec<Uri> = names
        .iter()
        .map(|n| configmaps_uri(addr, Some(n)))
        .collect();
    let client = client.clone();
    load::run(clients, uris, move |uri| {
        let req = Request::builder()
            .method(Method::GET)
            .uri(uri)
            .body(Full::default())
            .expect("request");
        let client = client.clone();
        async move { exchange(&client, req, StatusCode::OK).await }
    })
    .await
}
