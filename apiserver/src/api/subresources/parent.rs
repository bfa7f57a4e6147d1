//! `status`, `approval`, `finalize`, and pods' `ephemeralcontainers` and `resize`: the parent
//! object itself, read and written in place (a write through one changes only its part of the
//! object; `finalize` takes updates only).

use async_trait::async_trait;
use axum::http::StatusCode;
use axum::response::Response;
use registry::patch::PatchType;
use registry::{RegistryError, Subresource, Verb};

use super::{Call, Handler};
use crate::api::handlers::{body, method_not_allowed, patch_body};
use crate::api::response::{self, Format};
use crate::table::{self, IncludeObject};

/// The part of the object a write through the subresource changes.
pub(super) struct InPlace(pub Subresource);

#[async_trait]
impl Handler for InPlace {
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
        let part = self.0;
        let obj = match (verb, part) {
            (Verb::Get, sub) if sub != Subresource::Finalize => {
                store.get(ns, name, &req.params.list()?).await?
            }
            (Verb::Update, _) => {
                let obj = body(req, &mut write, &store.info.kind)?;
                store.update(ns, name, obj, part, &write).await?.0
            }
            (Verb::Patch, sub) if sub != Subresource::Finalize => {
                let kind = patch_body(req, &mut write)?;
                if kind == PatchType::Apply {
                    store.apply(ns, name, &req.body, part, &write).await?.0
                } else {
                    store.patch(ns, name, kind, &req.body, part, &write).await?
                }
            }
            _ => return Err(method_not_allowed()),
        };
        Ok(match format {
            Format::Table | Format::YamlTable => response::encoded(
                StatusCode::OK,
                &table::table(&store.info, &[obj], None, IncludeObject::Metadata),
                format,
                pretty,
            ),
            _ => response::answer(StatusCode::OK, &obj, format, pretty)?,
        })
    }
}
