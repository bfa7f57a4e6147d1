//! Forwarding a request to a pod's port, as upstream's UpgradeAwareHandler proxies pods'
//! and Services' `proxy`: the request's method, headers, body and query go to the backend's
//! path, and its answer comes back as it is.
//!
//! - a GET or HEAD for the backend's root without a trailing slash is redirected (301) to
//!   the same path with one;
//! - a backend that cannot be dialed: 503 `error trying to reach service: <dial error>`
//!   (upstream's proxy Transport), or for an upgrade request 500 without reason, `error
//!   dialing backend: <dial error>` (its tryUpgrade);
//! - an upgrade the backend accepts (101) is spliced through.
//!
//! HTTPS backends and the rewriting of links in HTML answers are not done.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, Request as HttpRequest, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use registry::RegistryError;

use super::dial::{self, PodNetwork};
use super::upgrade;
use crate::api::handlers::Request;

/// Where a proxied request goes.
pub struct Location {
    /// An `https:` backend (dialed, but not spoken to: TLS to pods is not done).
    pub https: bool,
    pub host: String,
    /// None: the scheme's default port.
    pub port: Option<u16>,
    /// The backend path (`/` + the path below `proxy/`), empty for the backend's root.
    pub path: String,
}

/// Headers that belong to one hop (Go's ReverseProxy drops them), and the client's
/// credentials, which the server never passes on.
const NOT_FORWARDED: [HeaderName; 9] = [
    header::CONNECTION,
    HeaderName::from_static("proxy-connection"),
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::AUTHORIZATION,
];

pub async fn serve(req: &Request, location: Location) -> Result<Response, RegistryError> {
    let upgrading = upgrade::is_upgrade(&req.headers);
    let mut path = location.path;
    // The request's trailing slash is kept, as the backend may tell `/x` from `/x/`.
    if !path.ends_with('/') && req.uri.path().ends_with('/') {
        path.push('/');
    }
    if !upgrading && path.is_empty() && matches!(req.method.as_str(), "GET" | "HEAD") {
        return Ok(redirect_to_root(req));
    }
    let port = location
        .port
        .unwrap_or(if location.https { 443 } else { 80 });
    let network = PodNetwork::of(&req.registry).await;
    let stream = dial::tcp(&location.host, port, &network)
        .await
        .map_err(|e| {
            if upgrading {
                RegistryError::Unclassified(format!("error dialing backend: {e}"))
            } else {
                unreachable_backend(e)
            }
        })?;
    if location.https {
        return Err(unreachable_backend("HTTPS backends are not proxied"));
    }
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(unreachable_backend)?;
    tokio::spawn(async move {
        if let Err(e) = connection.with_upgrades().await {
            tracing::debug!(error = %e, "proxied connection ended");
        }
    });
    let host = match location.port {
        Some(port) => dial::join_host_port(&location.host, port),
        None => location.host.clone(),
    };
    let target = match req.uri.query() {
        Some(query) => format!("{}?{query}", if path.is_empty() { "/" } else { &path }),
        None if path.is_empty() => "/".to_string(),
        None => path,
    };
    let mut outgoing = HttpRequest::builder()
        .method(req.method.clone())
        .uri(target)
        .body(Full::new(req.body.clone()))
        .map_err(|e| RegistryError::BadRequest(e.to_string()))?;
    copy_headers(&req.headers, outgoing.headers_mut(), upgrading);
    if let Ok(value) = host.parse() {
        outgoing.headers_mut().insert(header::HOST, value);
    }
    // The path the client asked the server for (upstream's proxy Transport sets it).
    if let Ok(value) = req.uri.path().parse() {
        outgoing.headers_mut().insert("x-forwarded-uri", value);
    }
    let mut answer = sender
        .send_request(outgoing)
        .await
        .map_err(unreachable_backend)?;
    if answer.status() == StatusCode::SWITCHING_PROTOCOLS {
        let client = match req.upgrade.lock() {
            Ok(mut handle) => handle.take(),
            Err(_) => None,
        };
        splice(client, &mut answer);
    }
    let (mut parts, body) = answer.into_parts();
    for cors in [
        "access-control-allow-credentials",
        "access-control-allow-headers",
        "access-control-allow-methods",
        "access-control-allow-origin",
    ] {
        parts.headers.remove(cors);
    }
    if parts.status != StatusCode::SWITCHING_PROTOCOLS {
        for name in &NOT_FORWARDED {
            parts.headers.remove(name);
        }
    }
    Ok(Response::from_parts(parts, Body::new(body)))
}

fn unreachable_backend(e: impl std::fmt::Display) -> RegistryError {
    RegistryError::ServiceUnavailable(format!("error trying to reach service: {e}"))
}

/// 301 to the request's own path with a slash (upstream's proxyRedirectsforRootPath).
fn redirect_to_root(req: &Request) -> Response {
    let location = match req.uri.query() {
        Some(query) => format!("{}/?{query}", req.uri.path()),
        None => format!("{}/", req.uri.path()),
    };
    (
        StatusCode::MOVED_PERMANENTLY,
        [(header::LOCATION, location)],
    )
        .into_response()
}

fn copy_headers(from: &HeaderMap, to: &mut HeaderMap, upgrading: bool) {
    for (name, value) in from {
        let hop = NOT_FORWARDED.contains(name) || name == header::UPGRADE || name == header::HOST;
        // An upgrade keeps the headers that ask for it.
        let keep_for_upgrade = upgrading && (name == header::CONNECTION || name == header::UPGRADE);
        if !hop || keep_for_upgrade {
            to.append(name.clone(), value.clone());
        }
    }
}

/// Joins the client's upgraded connection to the backend's once both are handed over.
/// (The aggregator's proxy splices its upgrades here too.)
pub(crate) fn splice(
    client: Option<hyper::upgrade::OnUpgrade>,
    answer: &mut hyper::Response<hyper::body::Incoming>,
) {
    let backend = hyper::upgrade::on(answer);
    let Some(client) = client else {
        return;
    };
    tokio::spawn(async move {
        match (client.await, backend.await) {
            (Ok(client), Ok(backend)) => {
                let (mut client, mut backend) = (TokioIo::new(client), TokioIo::new(backend));
                if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut backend).await {
                    tracing::debug!(error = %e, "proxied upgrade ended");
                }
            }
            (Err(e), _) | (_, Err(e)) => tracing::debug!(error = %e, "proxied upgrade failed"),
        }
    });
}

/// The backend path of a proxy subresource: the path below `proxy/`, with a leading slash
/// when not empty (upstream's subpath option, joined as JoinPreservingTrailingSlash does).
pub fn backend_path(proxy_path: &str) -> String {
    if proxy_path.is_empty() || proxy_path.starts_with('/') {
        proxy_path.to_string()
    } else {
        format!("/{proxy_path}")
    }
}

/// `name`, `name:port` or `scheme:name:port` (upstream's SplitSchemeNamePort); None when
/// malformed or the scheme is not http or https.
pub fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some((scheme, name, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_as_upstream_splits_them() {
        assert_eq!(split_scheme_name_port("web"), Some(("", "web", "")));
        assert_eq!(
            split_scheme_name_port("web:8080"),
            Some(("", "web", "8080"))
        );
        assert_eq!(
            split_scheme_name_port("https:web:443"),
            Some(("https", "web", "443"))
        );
        assert_eq!(split_scheme_name_port("ftp:web:21"), None);
        assert_eq!(split_scheme_name_port(":80"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
        assert_eq!(backend_path(""), "");
        assert_eq!(backend_path("healthz"), "/healthz");
    }
}
