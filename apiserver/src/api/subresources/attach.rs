//! pods' `attach`: the streams of a running container, through the node's kubelet
//! (upstream's AttachREST).

use async_trait::async_trait;
use axum::response::Response;
use registry::RegistryError;

use super::exec::container_stream;
use super::{create_permission, stream_options, streaming, Call, Handler};

pub(super) struct Attach;

#[async_trait]
impl Handler for Attach {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        let opts = stream_options::attach(&call.req.params);
        create_permission::ensure(call.req)?;
        let stream = container_stream("attach", &call, &opts).await?;
        streaming::serve(call.req, stream).await
    }
}
