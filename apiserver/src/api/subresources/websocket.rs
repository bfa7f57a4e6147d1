//! kube-apiserver's own side of an exec or attach over WebSocket (v5.channel.k8s.io): it
//! accepts the upgrade, then reaches the kubelet, and reports how that ended as a Status on
//! the error channel (3) before closing, as upstream's StreamTranslatorHandler does.

use std::future::Future;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use registry::RegistryError;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::upgrade::STREAM_PROTOCOL_V5;

/// The channels of the v5 protocol this side writes.
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;

/// How long the client gets to answer the close (upstream's write deadline for errors).
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Which output streams the client asked for: the first message goes to the lowest one.
pub struct Streams {
    pub stdout: bool,
    pub stderr: bool,
}

/// Answers the WebSocket handshake (101, v5.channel.k8s.io), then, on the upgraded
/// connection, writes the Status `session` ends with on the error channel and closes.
/// A handshake the server cannot take (no key, no upgradable connection) is a BadRequest.
pub fn serve<F>(
    headers: &HeaderMap,
    upgrade: Option<OnUpgrade>,
    streams: Streams,
    session: F,
) -> Result<Response, RegistryError>
where
    F: Future<Output = RegistryError> + Send + 'static,
{
    let version_13 = headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_some_and(|v| v.as_bytes() == b"13");
    let (Some(key), Some(upgrade), true) =
        (headers.get(header::SEC_WEBSOCKET_KEY), upgrade, version_13)
    else {
        return Err(RegistryError::BadRequest(
            "websocket: the client is not using the websocket protocol".to_string(),
        ));
    };
    let accept = derive_accept_key(key.as_bytes());
    tokio::spawn(async move {
        let upgraded = match upgrade.await {
            Ok(upgraded) => upgraded,
            Err(e) => {
                tracing::debug!(error = %e, "websocket upgrade did not complete");
                return;
            }
        };
        let mut ws =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        // An empty message on the lowest output channel tells the client the streams are up.
        let first = match (streams.stdout, streams.stderr) {
            (true, _) => STDOUT,
            (false, true) => STDERR,
            _ => ERROR,
        };
        if ws
            .send(Message::Binary(Bytes::from(vec![first])))
            .await
            .is_err()
        {
            return;
        }
        let status = error_channel_status(&session.await);
        let mut frame = vec![ERROR];
        if let Err(e) = registry::wire::write_as(
            &mut frame,
            &status,
            registry::wire::kind("v1", "Status"),
            registry::wire::Style::Compact,
        ) {
            tracing::warn!(error = %e, "encoding an error channel status");
        }
        let close = CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        };
        if ws.send(Message::Binary(Bytes::from(frame))).await.is_ok()
            && ws.send(Message::Close(Some(close))).await.is_ok()
        {
            // The client answers the close; whatever else it still sends is dropped.
            let _ = tokio::time::timeout(CLOSE_WAIT, async {
                while let Some(Ok(_)) = ws.next().await {}
            })
            .await;
        }
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let set = response.headers_mut();
    set.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    set.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        set.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    set.insert(
        header::SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(STREAM_PROTOCOL_V5),
    );
    Ok(response)
}

/// The Status written on the error channel: Go's json.Marshal of the StatusError's Status,
/// which carries no kind or apiVersion.
fn error_channel_status(err: &RegistryError) -> Value {
    let mut status = match serde_json::to_value(err.status()) {
        Ok(status) => status,
        Err(e) => json!({"status": "Failure", "message": e.to_string(), "code": 500}),
    };
    if let Some(fields) = status.as_object_mut() {
        fields.remove("kind");
        fields.remove("apiVersion");
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_channel_status_is_go_json_of_the_status() {
        let err = RegistryError::Internal(
            r#"error sending request: Post "https://127.1.0.1:10250/exec/d/p/c?command=ls&error=1": dial tcp 127.1.0.1:10250: connect: connection refused"#.into(),
        );
        let mut out = Vec::new();
        registry::wire::write_as(
            &mut out,
            &error_channel_status(&err),
            registry::wire::kind("v1", "Status"),
            registry::wire::Style::Compact,
        )
        .expect("encodes");
        // Go's encoding/json escapes `&` and orders fields as metav1.Status declares them.
        assert_eq!(
            String::from_utf8_lossy(&out),
            r#"{"metadata":{},"status":"Failure","message":"Internal error occurred: error sending request: Post \"https://127.1.0.1:10250/exec/d/p/c?command=ls\u0026error=1\": dial tcp 127.1.0.1:10250: connect: connection refused","reason":"InternalError","details":{"causes":[{"message":"error sending request: Post \"https://127.1.0.1:10250/exec/d/p/c?command=ls\u0026error=1\": dial tcp 127.1.0.1:10250: connect: connection refused"}]},"code":500}"#
        );
    }
}
