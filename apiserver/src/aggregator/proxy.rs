//! A request for a remote APIService's group-version, sent on to its Service (upstream's
//! proxyHandler): to a ready endpoint of the Service (`webhooks::transport::resolve`), over
//! TLS trusting the APIService's `caBundle` as `<service>.<namespace>.svc`, presenting the
//! front-proxy client certificate, with the user this server authenticated and authorized
//! in `X-Remote-User`, `X-Remote-Group` and `X-Remote-Extra-<key>`. Path, query, method,
//! headers and body go as they came (the client's own credentials do not); the answer comes
//! back as it streams (watches), and an upgrade the backend accepts is spliced through.
//!
//! Failures answer as upstream's proxy does, in plain text: an APIService that is not
//! Available or whose Service has no endpoint, 503 `service unavailable`; a backend that
//! cannot be reached, 503 with the error.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use registry::auth::UserInfo;
use tracing::debug;

use super::tls::{self, Trust};
use super::{ApiService, Backend};
use crate::api::subresources::upgrade::is_upgrade;
use crate::tls::front_proxy::FrontProxy;

/// What the proxy sends on.
pub struct Outgoing {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Body,
    pub upgrade: Option<OnUpgrade>,
}

/// The front-proxy headers (upstream's requestheader defaults, as kubeadm configures them).
pub const USER_HEADER: &str = "X-Remote-User";
pub const GROUP_HEADER: &str = "X-Remote-Group";
pub const EXTRA_PREFIX: &str = "X-Remote-Extra-";

/// Upstream's proxyError: a plain-text body, as Go's http.Error writes it.
pub fn plain_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        format!("{message}\n"),
    )
        .into_response()
}

/// Whether a request header goes on: not one of the hop, not the client's credentials (the
/// authentication filter consumed them), not identity headers a client could forge.
fn forwarded(name: &HeaderName, upgrading: bool) -> bool {
    let lower = name.as_str();
    if upgrading && (name == header::CONNECTION || name == header::UPGRADE) {
        return true;
    }
    !(matches!(
        lower,
        "connection"
            | "proxy-connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "authorization"
    ) || lower.starts_with("x-remote-")
        || lower.starts_with("impersonate-"))
}

/// An extra key as a header name (upstream's headerKeyEscape): every byte that is not an
/// HTTP token character, and `%` itself, percent-escaped.
fn escape_extra_key(key: &str) -> String {
    let mut out = String::new();
    for byte in key.bytes() {
        let token = byte.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&byte);
        if token {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Sets the user headers (upstream's SetAuthProxyHeaders).
pub fn set_user_headers(headers: &mut HeaderMap, user: &UserInfo) {
    if let Ok(v) = HeaderValue::from_str(&user.name) {
        headers.insert(USER_HEADER, v);
    }
    for group in &user.groups {
        if let Ok(v) = HeaderValue::from_str(group) {
            headers.append(GROUP_HEADER, v);
        }
    }
    for (key, values) in &user.extra {
        let name = format!("{EXTRA_PREFIX}{}", escape_extra_key(key));
        let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
            continue;
        };
        for value in values {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.append(name.clone(), v);
            }
        }
    }
}

/// The ready endpoint (host:port) of the backend's Service.
pub async fn endpoint(registry: &registry::Registry, backend: &Backend) -> Result<String, String> {
    crate::webhooks::transport::resolve(registry, &backend.client_config())
        .await
        .map(|target| target.address)
}

pub async fn serve(
    registry: &registry::Registry,
    front_proxy: &FrontProxy,
    service: &ApiService,
    user: Option<&UserInfo>,
    request: Outgoing,
) -> Response {
    let Some(backend) = &service.backend else {
        return plain_error(StatusCode::NOT_FOUND, "");
    };
    if !service.available {
        return plain_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    let Some(user) = user else {
        return plain_error(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
    };
    let address = match endpoint(registry, backend).await {
        Ok(address) => address,
        Err(e) => {
            debug!(apiservice = %service.name, error = %e, "no endpoint to proxy to");
            return plain_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        }
    };
    match send(&address, backend, front_proxy, user, request).await {
        Ok(response) => response,
        Err(e) => plain_error(StatusCode::SERVICE_UNAVAILABLE, &e),
    }
}

async fn send(
    address: &str,
    backend: &Backend,
    front_proxy: &FrontProxy,
    user: &UserInfo,
    request: Outgoing,
) -> Result<Response, String> {
    let trust = if backend.insecure_skip_tls_verify {
        Trust::Insecure
    } else {
        Trust::Bundle(&backend.ca_bundle)
    };
    let stream = tls::connect(address, &backend.server_name(), trust, front_proxy).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = connection.with_upgrades().await {
            debug!(error = %e, "proxied connection ended");
        }
    });
    let upgrading = is_upgrade(&request.headers);
    let target = request
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let mut outgoing = hyper::Request::builder()
        .method(request.method)
        .uri(target)
        .body(request.body)
        .map_err(|e| e.to_string())?;
    let headers = outgoing.headers_mut();
    for (name, value) in &request.headers {
        if forwarded(name, upgrading) {
            headers.append(name.clone(), value.clone());
        }
    }
    if let Ok(host) = HeaderValue::from_str(address) {
        headers.insert(header::HOST, host);
    }
    set_user_headers(headers, user);
    let mut answer = sender
        .send_request(outgoing)
        .await
        .map_err(|e| e.to_string())?;
    if answer.status() == StatusCode::SWITCHING_PROTOCOLS {
        crate::api::subresources::reverse_proxy::splice(request.upgrade, &mut answer);
    }
    let (mut parts, body) = answer.into_parts();
    // The backend's hop headers are its connection's, not the client's (HTTP/2 forbids them).
    if parts.status != StatusCode::SWITCHING_PROTOCOLS {
        for hop in [
            "connection",
            "keep-alive",
            "proxy-connection",
            "transfer-encoding",
            "upgrade",
            "te",
            "trailer",
        ] {
            parts.headers.remove(hop);
        }
    }
    Ok(Response::from_parts(parts, Body::new(body)))
}

/// What a GET of the aggregator's own (discovery, availability) gave.
pub struct Fetched {
    pub status: u16,
    pub content_type: String,
    pub body: bytes::Bytes,
}

/// The server a GET of the aggregator's own goes to, and how it is spoken to.
pub struct Peer<'a> {
    /// The endpoint (host:port).
    pub address: &'a str,
    pub backend: &'a Backend,
    pub trust: Trust<'a>,
    pub front_proxy: &'a FrontProxy,
}

/// A GET of `path` from `peer` as `user` (upstream's discovery and availability checks act
/// as system:kube-aggregator or system:masters), within `timeout`.
pub async fn get(
    peer: Peer<'_>,
    user: &UserInfo,
    path: &str,
    accept: &str,
    timeout: std::time::Duration,
) -> Result<Fetched, String> {
    let Peer {
        address,
        backend,
        trust,
        front_proxy,
    } = peer;
    let url = format!("https://{address}{path}");
    let exchange = async {
        let stream = tls::connect(address, &backend.server_name(), trust, front_proxy).await?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let mut request = hyper::Request::get(path)
            .header(header::HOST, address)
            .header(header::ACCEPT, accept)
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .map_err(|e| e.to_string())?;
        set_user_headers(request.headers_mut(), user);
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok::<_, String>(Fetched {
            status,
            content_type,
            body,
        })
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok(fetched)) => Ok(fetched),
        Ok(Err(e)) => Err(format!("Get \"{url}\": {e}")),
        Err(_) => Err(format!(
            "Get \"{url}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_goes_in_front_proxy_headers() {
        let user = UserInfo {
            name: "jane".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: [(
                "example.org/scopes".to_string(),
                vec!["a".into(), "b".into()],
            )]
            .into_iter()
            .collect(),
            ..Default::default()
        };
        let mut headers = HeaderMap::new();
        set_user_headers(&mut headers, &user);
        assert_eq!(headers["x-remote-user"], "jane");
        assert_eq!(headers.get_all("x-remote-group").iter().count(), 2);
        assert_eq!(
            headers
                .get_all("x-remote-extra-example.org%2Fscopes")
                .iter()
                .count(),
            2
        );
    }

    #[test]
    fn credentials_and_identity_headers_stay_behind() {
        for name in [
            "authorization",
            "x-remote-user",
            "impersonate-user",
            "host",
            "te",
        ] {
            assert!(!forwarded(&HeaderName::from_static(name), false), "{name}");
        }
        assert!(forwarded(&HeaderName::from_static("accept"), false));
        assert!(forwarded(&header::UPGRADE, true));
        assert!(!forwarded(&header::UPGRADE, false));
    }
}
