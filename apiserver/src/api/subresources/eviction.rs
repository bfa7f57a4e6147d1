//! pods' `eviction`: a disruption the PodDisruptionBudgets allow, then the pod's deletion
//! (`registry::eviction`); 429 when none is left.

use async_trait::async_trait;
use axum::http::StatusCode;
use axum::response::Response;
use registry::RegistryError;

use super::{Call, Handler};
use crate::api::response;

pub(super) struct Eviction;

#[async_trait]
impl Handler for Eviction {
    async fn serve(&self, mut call: Call<'_>) -> Result<Response, RegistryError> {
        let eviction = call.body("Eviction")?;
        let registry = &call.req.registry;
        let status = registry
            .evict(call.namespace, call.name, &eviction, &call.write)
            .await?;
        let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::CREATED);
        let status =
            serde_json::to_value(status).map_err(|e| RegistryError::Internal(e.to_string()))?;
        response::answer(code, &status, call.format, call.pretty)
    }
}
