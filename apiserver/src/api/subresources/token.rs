//! serviceaccounts' `token`: a TokenRequest answered with a signed token for the account.

use async_trait::async_trait;
use axum::http::StatusCode;
use axum::response::Response;
use registry::RegistryError;

use super::{Call, Handler};
use crate::api::handlers::body;
use crate::api::response;

pub(super) struct Token;

#[async_trait]
impl Handler for Token {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        let Call {
            req,
            namespace: ns,
            name,
            format,
            mut write,
            ..
        } = call;
        let request = body(req, &mut write)?;
        let issued = req
            .registry
            .create_token(ns, name, &request, &write)
            .await?;
        Ok(response::encoded(
            StatusCode::CREATED,
            &issued,
            format,
            false,
        ))
    }
}
