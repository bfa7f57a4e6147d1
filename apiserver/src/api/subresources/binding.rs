//! pods' `binding`: a Binding assigns the pod to a node (the scheduler's write).

use async_trait::async_trait;
use axum::http::StatusCode;
use axum::response::Response;
use registry::RegistryError;

use super::{Call, Handler};
use crate::api::handlers::body;
use crate::api::response;

pub(super) struct Binding;

#[async_trait]
impl Handler for Binding {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        let Call {
            store,
            req,
            namespace: ns,
            name,
            format,
            mut write,
            ..
        } = call;
        let binding = body(req, &mut write)?;
        // The legacy `bindings` collection names the pod in the Binding only.
        let name = match name {
            "" => registry::object::name(&binding).to_string(),
            name => name.to_string(),
        };
        let status = store.bind(ns, &name, &binding, &write).await?;
        Ok(response::encoded(
            StatusCode::CREATED,
            &status,
            format,
            false,
        ))
    }
}
