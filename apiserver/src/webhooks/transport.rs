//! The HTTPS POST of an AdmissionReview to a webhook: to its `url`, or to a ready endpoint of
//! its Service (the Service's DNS name, `<name>.<namespace>.svc`, is the TLS server name),
//! trusting its `caBundle`, within its timeout. Failures are worded as Go's HTTP client words
//! them (`Post "https://...": dial tcp ...: connect: connection refused`), as upstream passes
//! them on.

use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use registry::options::ListOptions;
use registry::Registry;
use serde_json::Value;

use super::pool;

/// Where a webhook is called.
#[derive(Debug)]
pub struct Target {
    /// host:port to connect to.
    pub address: String,
    /// The TLS server name.
    pub server_name: String,
    /// The URL as messages show it (without the timeout parameter).
    pub url: String,
    /// Path and query sent.
    pub path: String,
    pub ca_bundle: Vec<u8>,
}

/// Splits `https://host[:port][/path]`; None for anything else.
fn split_url(url: &str) -> Option<(String, u16, String)> {
    let rest = url.strip_prefix("https://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (h, p.parse().ok()?),
        _ => (authority, 443),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| (host.to_string(), port, path.to_string()))
}

fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn ca_of(client_config: &Value) -> Vec<u8> {
    client_config["caBundle"]
        .as_str()
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .unwrap_or_default()
}

/// The target of a webhook's clientConfig; Err is why it cannot be called.
pub async fn resolve(registry: &Registry, client_config: &Value) -> Result<Target, String> {
    let ca_bundle = ca_of(client_config);
    if let Some(url) = client_config["url"].as_str() {
        let (host, port, path) = split_url(url).ok_or_else(|| format!("invalid url {url:?}"))?;
        return Ok(Target {
            address: host_port(&host, port),
            server_name: host,
            url: url.to_string(),
            path,
            ca_bundle,
        });
    }
    let service = &client_config["service"];
    let ns = service["namespace"].as_str().unwrap_or_default();
    let name = service["name"].as_str().unwrap_or_default();
    let port = service["port"].as_i64().unwrap_or(443);
    let path = service["path"].as_str().unwrap_or("/").to_string();
    let cached = ListOptions {
        resource_version: Some("0".into()),
        ..Default::default()
    };
    let services = registry
        .store("", "v1", "services")
        .ok_or("services are not served")?;
    let svc = services
        .get(Some(ns), name, &cached)
        .await
        .map_err(|_| format!("service \"{ns}/{name}\" not found"))?;
    let svc_port = svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["port"].as_i64() == Some(port))
        .cloned()
        .ok_or_else(|| format!("service \"{ns}/{name}\" has no port {port}"))?;
    let port_name = svc_port["name"].as_str().unwrap_or_default();
    let slices = registry
        .store("discovery.k8s.io", "v1", "endpointslices")
        .ok_or("endpointslices are not served")?;
    let selected = ListOptions {
        label_selector: Some(format!("kubernetes.io/service-name={name}")),
        ..cached
    };
    let list = slices
        .list(Some(ns), &selected)
        .await
        .map_err(|e| e.to_string())?;
    let endpoint = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|slice| {
            let port = slice["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"].as_str().unwrap_or_default() == port_name)?
                .get("port")?
                .as_i64()?;
            let address = slice["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["conditions"]["ready"] != false)
                .find_map(|e| e["addresses"][0].as_str())?;
            Some((address.to_string(), port))
        })
        .ok_or_else(|| format!("no endpoints available for service \"{name}\""))?;
    let server_name = format!("{name}.{ns}.svc");
    let shown_port = if port == 443 {
        String::new()
    } else {
        format!(":{port}")
    };
    Ok(Target {
        address: host_port(&endpoint.0, endpoint.1 as u16),
        url: format!("https://{server_name}{shown_port}{path}"),
        server_name,
        path,
        ca_bundle,
    })
}

async fn send(
    sender: &mut pool::Sender,
    target: &Target,
    path: &str,
    body: &Bytes,
) -> Result<(u16, Vec<u8>), hyper::Error> {
    let request = hyper::Request::post(path)
        .header("host", &target.server_name)
        .header("content-type", "application/json")
        .header("accept", "application/json, */*")
        .body(Full::new(body.clone()));
    let Ok(request) = request else {
        // Only a path that is not a valid URI path gets here; resolve() built it.
        return Ok((0, Vec::new()));
    };
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok((status, bytes.to_vec()))
}

async fn exchange(target: &Target, path: &str, body: Vec<u8>) -> Result<(u16, Vec<u8>), String> {
    let body = Bytes::from(body);
    // A kept connection the webhook closed meanwhile fails before the request is read: the
    // call is then made once more on a new one, as Go's transport retries it.
    if let Some(mut sender) = pool::idle(target) {
        match send(&mut sender, target, path, &body).await {
            Ok(answer) => {
                pool::give_back(target, sender);
                return Ok(answer);
            }
            Err(e) if e.is_canceled() || e.is_closed() || e.is_incomplete_message() => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut sender = pool::dial(target).await?;
    let answer = send(&mut sender, target, path, &body)
        .await
        .map_err(|e| e.to_string())?;
    pool::give_back(target, sender);
    Ok(answer)
}

/// POSTs `body` within `timeout`; the response body of a 200, else upstream's words.
pub async fn post(target: &Target, body: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, String> {
    let query = format!("timeout={}s", timeout.as_secs());
    let sep = if target.path.contains('?') { '&' } else { '?' };
    let path = format!("{}{sep}{query}", target.path);
    let shown = format!("{}{sep}{query}", target.url);
    match tokio::time::timeout(timeout, exchange(target, &path, body)).await {
        Err(_) => Err(format!("Post \"{shown}\": context deadline exceeded")),
        Ok(Err(why)) => Err(format!("Post \"{shown}\": {why}")),
        Ok(Ok((200, body))) => Ok(body),
        Ok(Ok((code, _))) => Err(format!(
            "the server responded with the status code {code} but did not return more information"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_path() {
        assert_eq!(
            split_url("https://127.0.0.1:8443/validate?x=1"),
            Some(("127.0.0.1".into(), 8443, "/validate?x=1".into()))
        );
        assert_eq!(
            split_url("https://hooks.example.com"),
            Some(("hooks.example.com".into(), 443, "/".into()))
        );
        assert_eq!(
            split_url("https://[::1]:9443/x"),
            Some(("::1".into(), 9443, "/x".into()))
        );
        assert_eq!(split_url("http://insecure"), None);
        assert_eq!(host_port("::1", 443), "[::1]:443");
    }
}
