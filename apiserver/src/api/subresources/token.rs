//! serviceaccounts' `token`: a TokenRequest answered with a signed token for the account.

use async_trait::async_trait;
use axum::http::StatusCode;
use axum::response::Response;
use registry::RegistryError;

use super::{Call, Handler};
use crate::api::response;

pub(super) struct Token;

#[async_trait]
impl Handler for Token {
    async fn serve(&self, mut call: Call<'_>) -> Result<Response, RegistryError> {
        let request = call.body("TokenRequest")?;
        let registry = &call.req.registry;
        let issued = registry
            .create_token(call.namespace, call.name, &request, &call.write)
            .await?;
        response::answer(StatusCode::CREATED, &issued, call.format, call.pretty)
    }
}
