//! Connection upgrades, as upstream's httpstream and wsstream packages recognize them: the
//! handle to take over an upgraded connection, and what kind of upgrade a request asks for.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use hyper::upgrade::OnUpgrade;

/// The protocol of exec and attach streams over WebSocket that kube-apiserver translates
/// to the kubelet's SPDY streams (upstream's StreamProtocolV5Name).
pub const STREAM_PROTOCOL_V5: &str = "v5.channel.k8s.io";

/// The connection's upgrade handle, if the server can upgrade it (HTTP/1.1).
pub struct Upgrade(pub Option<OnUpgrade>);

impl<S: Send + Sync> FromRequestParts<S> for Upgrade {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(Upgrade(parts.extensions.remove::<OnUpgrade>()))
    }
}

/// A `Connection` header naming `upgrade` (httpstream.IsUpgradeRequest).
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("upgrade"))
}

/// An upgrade to WebSocket (wsstream.IsWebSocketRequest).
pub fn is_websocket(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
        && is_upgrade(headers)
}

/// The WebSocket subprotocols the client offers.
pub fn websocket_protocols(headers: &HeaderMap) -> Vec<&str> {
    headers
        .get(header::SEC_WEBSOCKET_PROTOCOL)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(',').map(str::trim).collect())
        .unwrap_or_default()
}

/// A WebSocket upgrade offering the v5 stream protocol, which kube-apiserver serves itself
/// for exec and attach (wsstream.IsWebSocketRequestWithStreamCloseProtocol).
pub fn is_websocket_v5(headers: &HeaderMap) -> bool {
    is_websocket(headers) && websocket_protocols(headers).contains(&STREAM_PROTOCOL_V5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, v.parse().expect("header value"));
        }
        map
    }

    #[test]
    fn upgrades_as_upstream_recognizes_them() {
        let spdy = headers(&[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")]);
        assert!(is_upgrade(&spdy) && !is_websocket(&spdy));
        let ws = headers(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "WebSocket"),
            (
                "sec-websocket-protocol",
                "v4.channel.k8s.io, v5.channel.k8s.io",
            ),
        ]);
        assert!(is_websocket(&ws) && is_websocket_v5(&ws));
        let v4 = headers(&[
            ("connection", "upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-protocol", "v4.channel.k8s.io"),
        ]);
        assert!(is_websocket(&v4) && !is_websocket_v5(&v4));
        assert!(!is_upgrade(&headers(&[("upgrade", "websocket")])));
    }
}
