//! pods' `portforward`: connections to the pod's ports, tunnelled through the node's
//! kubelet (upstream's PortForwardREST). No container is named: only the node matters.

use async_trait::async_trait;
use axum::response::Response;
use registry::RegistryError;

use super::streaming::{self, Stream};
use super::{create_permission, kubelet_location, pod_target, stream_options, Call, Handler};

pub(super) struct PortForward;

#[async_trait]
impl Handler for PortForward {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        let ports = stream_options::ports(&call.req.params)?;
        create_permission::ensure(call.req)?;
        let pod = call
            .store
            .get(call.namespace, call.name, &Default::default())
            .await?;
        let node = pod_target::node_name(&pod, call.name)?;
        let kubelet = kubelet_location::of_node(&call.req.registry, node).await?;
        let namespace = call.namespace.unwrap_or_default();
        let stream = Stream {
            kubelet,
            path: format!("/portForward/{namespace}/{}", call.name),
            query: stream_options::port_forward_query(&ports),
            websocket: None,
        };
        streaming::serve(call.req, stream).await
    }
}
