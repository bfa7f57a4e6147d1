//! What exec, attach and portforward do once the pod and its container are judged: reach
//! the node's kubelet at the stream's URL, as upstream's UpgradeAwareHandler (and for exec
//! and attach over WebSocket, its StreamTranslatorHandler) does.
//!
//! - not an upgrade request: 400 `Upgrade request required`;
//! - exec or attach over WebSocket v5: the upgrade is accepted, then the kubelet is dialed,
//!   and a failure comes back as an InternalError Status on the error channel, worded as
//!   client-go's SPDY executor words it (`error sending request: Post "<url>": <dial error>`);
//! - any other upgrade (SPDY, a port-forward tunnelled over WebSocket): the kubelet is
//!   dialed first, and a failure is a 500 Status without reason, `error dialing backend:
//!   <dial error>`.
//!
//! The simulated nodes run no streaming server: their kubelets' addresses refuse the dial.

use axum::response::Response;
use registry::RegistryError;

use super::dial::{self, PodNetwork};
use super::kubelet_location::KubeletAddress;
use super::upgrade;
use super::websocket::{self, Streams};
use crate::api::handlers::Request;

/// One stream to a kubelet.
pub struct Stream {
    pub kubelet: KubeletAddress,
    /// e.g. `/exec/<namespace>/<pod>/<container>`.
    pub path: String,
    pub query: String,
    /// The output streams of an exec or attach (None for portforward, which kube-apiserver
    /// never terminates itself).
    pub websocket: Option<Streams>,
}

pub async fn serve(req: &Request, stream: Stream) -> Result<Response, RegistryError> {
    let url = stream.kubelet.url(&stream.path, &stream.query);
    let KubeletAddress { host, port } = stream.kubelet;
    if let Some(streams) = stream
        .websocket
        .filter(|_| upgrade::is_websocket_v5(&req.headers))
    {
        let registry = req.registry.clone();
        let session = async move {
            let network = PodNetwork::of(&registry).await;
            let reason = match dial::tcp(&host, port, &network).await {
                Err(e) => e.to_string(),
                Ok(_) => no_streaming_server(&host, port),
            };
            RegistryError::Internal(format!(
                "error sending request: Post {}: {reason}",
                registry::validation::quote(&url)
            ))
        };
        let handle = match req.upgrade.lock() {
            Ok(mut handle) => handle.take(),
            Err(_) => None,
        };
        return websocket::serve(&req.headers, handle, streams, session);
    }
    if !upgrade::is_upgrade(&req.headers) {
        return Err(RegistryError::BadRequest(
            "Upgrade request required".to_string(),
        ));
    }
    let network = PodNetwork::of(&req.registry).await;
    let reason = match dial::tcp(&host, port, &network).await {
        Err(e) => e.to_string(),
        Ok(_) => no_streaming_server(&host, port),
    };
    tracing::debug!(%url, %reason, "kubelet stream not reached");
    Err(RegistryError::Unclassified(format!(
        "error dialing backend: {reason}"
    )))
}

/// Something answered at a kubelet's address, but no simulated kubelet serves streams (the
/// container runtime that would run them is not simulated yet).
fn no_streaming_server(host: &str, port: u16) -> String {
    let addr = dial::join_host_port(host, port);
    tracing::warn!(%addr, "a kubelet address answered, but streams are not served");
    format!("the kubelet at {addr} serves no container streams")
}
