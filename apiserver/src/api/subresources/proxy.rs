//! `proxy`: one name, three subresources — a node's kubelet, a pod's port, a Service's
//! endpoint — told apart by the parent resource.

use async_trait::async_trait;
use axum::response::Response;
use registry::RegistryError;

use super::{node_proxy, pod_proxy, service_proxy, Call, Handler};

pub(super) struct Proxy;

#[async_trait]
impl Handler for Proxy {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        match call.store.info.plural.as_str() {
            "nodes" => node_proxy::NodeProxy.serve(call).await,
            "pods" => pod_proxy::PodProxy.serve(call).await,
            "services" => service_proxy::ServiceProxy.serve(call).await,
            _ => Err(RegistryError::NoSuchResource),
        }
    }
}
