//! pods' `binding`: a Binding assigns the pod to a node (the scheduler's write).

use async_trait::async_trait;
use axum::http::StatusCode;
use axum::response::Response;
use registry::RegistryError;

use super::{Call, Handler};
use crate::api::response;

pub(super) struct Binding;

#[async_trait]
impl Handler for Binding {
    async fn serve(&self, mut call: Call<'_>) -> Result<Response, RegistryError> {
        let binding = call.body("Binding")?;
        // The legacy `bindings` collection names the pod in the Binding only.
        let name = match call.name {
            "" => registry::object::name(&binding).to_string(),
            name => name.to_string(),
        };
        let status = call
            .store
            .bind(call.namespace, &name, &binding, &call.write)
            .await?;
        response::answer(StatusCode::CREATED, &status, call.format, call.pretty)
    }
}
