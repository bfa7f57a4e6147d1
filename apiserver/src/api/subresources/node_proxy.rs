//! nodes' `proxy`: the kubelet's endpoints below `nodes/<name>/proxy/`, reached through the
//! server (`kubelet::proxy`); reads only.

use async_trait::async_trait;
use axum::http::StatusCode;
use axum::response::Response;
use kubelet::proxy::ProxyResponse;
use registry::{RegistryError, Verb};

use super::{Call, Handler};
use crate::api::handlers::method_not_allowed;
use crate::api::response;

pub(super) struct NodeProxy;

#[async_trait]
impl Handler for NodeProxy {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        let Call {
            req, verb, name, ..
        } = call;
        if verb != Verb::Get {
            return Err(method_not_allowed());
        }
        let path = req.info.proxy_path.as_deref().unwrap_or_default();
        Ok(
            match kubelet::proxy::serve(&req.registry, name, path).await? {
                ProxyResponse::Text(text) => response::text(StatusCode::OK, text),
                ProxyResponse::Json(body) => response::json(StatusCode::OK, &body),
            },
        )
    }
}
