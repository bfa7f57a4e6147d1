//! pods' `exec`: a command in one of the pod's containers, streamed through the node's
//! kubelet (upstream's ExecREST).

use async_trait::async_trait;
use axum::response::Response;
use registry::RegistryError;

use super::streaming::{self, Stream};
use super::websocket::Streams;
use super::{create_permission, kubelet_location, pod_target, stream_options, Call, Handler};

pub(super) struct Exec;

#[async_trait]
impl Handler for Exec {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        let opts = stream_options::exec(&call.req.params);
        create_permission::ensure(call.req)?;
        let stream = container_stream("exec", &call, &opts).await?;
        streaming::serve(call.req, stream).await
    }
}

/// The kubelet stream of an exec or attach (`what`): the pod, its container and its node,
/// judged in upstream's order (streamLocation).
pub(super) async fn container_stream(
    what: &str,
    call: &Call<'_>,
    opts: &stream_options::StreamOptions,
) -> Result<Stream, RegistryError> {
    let pod = call
        .store
        .get(call.namespace, call.name, &Default::default())
        .await?;
    let container = pod_target::container(&pod, &opts.container)?;
    let node = pod_target::node_name(&pod, call.name)?;
    let kubelet = kubelet_location::of_node(&call.req.registry, node).await?;
    let namespace = call.namespace.unwrap_or_default();
    Ok(Stream {
        kubelet,
        path: format!("/{what}/{namespace}/{}/{container}", call.name),
        query: opts.kubelet_query(),
        websocket: Some(Streams {
            stdout: opts.stdout,
            stderr: opts.stderr,
        }),
    })
}
