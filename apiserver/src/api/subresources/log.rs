//! pods' `log`: the pod's containers' output as the kubelet renders it (`kubelet::logs`),
//! as plain text.

use async_trait::async_trait;
use axum::http::StatusCode;
use axum::response::Response;
use registry::RegistryError;

use super::{Call, Handler};
use crate::api::response;

pub(super) struct Log;

#[async_trait]
impl Handler for Log {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        let pod = call
            .store
            .get(call.namespace, call.name, &Default::default())
            .await?;
        let text = kubelet::logs::render(&pod, &call.req.params.log()?)
            .map_err(|e| RegistryError::BadRequest(e.to_string()))?;
        Ok(response::text(StatusCode::OK, text))
    }
}
