//! `scale`: the object's replicas as an autoscaling/v1 Scale, read, replaced or patched.

use async_trait::async_trait;
use axum::http::StatusCode;
use axum::response::Response;
use registry::store::subresources::ScaleChange;
use registry::{RegistryError, Verb};

use super::{Call, Handler};
use crate::api::handlers::{body, method_not_allowed, patch_body};
use crate::api::response;

pub(super) struct Scale;

#[async_trait]
impl Handler for Scale {
    async fn serve(&self, call: Call<'_>) -> Result<Response, RegistryError> {
        let Call {
            store,
            req,
            verb,
            namespace: ns,
            name,
            format,
            pretty,
            mut write,
        } = call;
        let scale = match verb {
            Verb::Get => store.get_scale(ns, name).await?,
            Verb::Update => {
                let scale = body(req, &mut write, "Scale")?;
                store
                    .update_scale(ns, name, ScaleChange::Replace(scale), &write)
                    .await?
            }
            Verb::Patch => {
                let kind = patch_body(req, &mut write)?;
                store
                    .update_scale(ns, name, ScaleChange::Patch(kind, &req.body), &write)
                    .await?
            }
            _ => return Err(method_not_allowed()),
        };
        response::answer(StatusCode::OK, &scale, format, pretty)
    }
}
