//! One generic handler per verb, for every resource: request info and parameters in, a
//! registry Store call, JSON or Table out. No per-kind code.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use registry::patch::PatchType;
use registry::store::subresources::ScaleChange;
use registry::{RegistryError, ResourceInfo, Store, Subresource};
use serde_json::Value;

use super::params::Params;
use super::protobuf;
use super::request_info::RequestInfo;
use super::response::{self, Format};
use super::watch;
use crate::table::{self, IncludeObject};

pub struct Request {
    /// Turns true when the server begins to shut down, ending watches.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    pub info: RequestInfo,
    pub params: Params,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Bodies are JSON, YAML or (from client-go's typed clients) protobuf; anything else is 415.
fn check_body_type(headers: &HeaderMap, body: &[u8]) -> Result<(), RegistryError> {
    if body.is_empty() {
        return Ok(());
    }
    let ct = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = ct.split(';').next().unwrap_or_default().trim();
    if media.is_empty()
        || media == "application/json"
        || media.ends_with("+json")
        || media == "application/yaml"
        || media == protobuf::MEDIA_TYPE
    {
        return Ok(());
    }
    Err(RegistryError::UnsupportedMediaType(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {ct:?})"
    )))
}

/// The request body as an object: JSON, or YAML or protobuf when the client says so.
fn parse_body(headers: &HeaderMap, body: &[u8]) -> Result<Value, RegistryError> {
    let ct = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let value: Value = if ct.starts_with(protobuf::MEDIA_TYPE) {
        protobuf::decode(body)?
    } else if ct.starts_with("application/yaml") {
        serde_yaml_ng::from_slice(body).map_err(|e| {
            RegistryError::BadRequest(format!(
                "the body of the request could not be decoded as YAML: {e}"
            ))
        })?
    } else {
        serde_json::from_slice(body).map_err(|e| {
            RegistryError::BadRequest(format!(
                "the body of the request could not be decoded as JSON: {e}"
            ))
        })?
    };
    if !value.is_object() {
        return Err(RegistryError::BadRequest(
            "the body of the request must be a JSON object".into(),
        ));
    }
    Ok(value)
}

/// A body that may be absent (DELETE): whitespace counts as none.
fn optional_body(req: &Request) -> Result<Option<Value>, RegistryError> {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    parse_body(&req.headers, &req.body).map(Some)
}

fn method_not_allowed() -> RegistryError {
    RegistryError::MethodNotAllowed(
        "the server does not allow this method on the requested resource".into(),
    )
}

/// Serves a resource request with the Store it names.
pub async fn serve(store: Arc<Store>, req: Request) -> Response {
    match handle(store, req).await {
        Ok(response) => response,
        Err(e) => response::error(e),
    }
}

async fn handle(store: Arc<Store>, req: Request) -> Result<Response, RegistryError> {
    let info = store.info.clone();
    let format = response::negotiate(&req.headers)?;
    let verb = req.info.verb;
    if verb == "unsupported" || (req.info.subresource.is_none() && !info.has_verb(verb)) {
        return Err(method_not_allowed());
    }
    if verb != "patch" {
        check_body_type(&req.headers, &req.body)?;
    }
    let ns = req.info.namespace.as_deref();
    let name = req.info.name.as_deref().unwrap_or_default();
    if ns.is_none() && info.namespaced && !matches!(verb, "list" | "watch") {
        return Err(method_not_allowed());
    }
    if let Some(sub) = req.info.subresource.as_deref() {
        return subresource(&store, &req, sub, format).await;
    }
    let include = IncludeObject::try_parse(req.params.get("includeObject"))?;
    let pretty = matches!(req.params.get("pretty"), Some("" | "true" | "1"));
    let out = |code: StatusCode, body: &Value| response::encoded(code, body, format, pretty);
    match verb {
        "get" => match format {
            Format::Json if !pretty => Ok(response::raw_json(
                StatusCode::OK,
                store.get_json(ns, name, &req.params.list()?).await?,
            )),
            Format::Json | Format::Yaml => Ok(out(
                StatusCode::OK,
                &store.get(ns, name, &req.params.list()?).await?,
            )),
            Format::Table => {
                let obj = store.get(ns, name, &req.params.list()?).await?;
                // One object: a one-row Table carrying the object's resourceVersion.
                let table = table::table_for_watch_event(&info, &obj, include);
                Ok(response::json(StatusCode::OK, &table))
            }
        },
        "list" => {
            let list = store.list(ns, &req.params.list()?).await?;
            Ok(match format {
                Format::Table => response::json(StatusCode::OK, &list_table(&info, list, include)),
                _ => out(StatusCode::OK, &list),
            })
        }
        "watch" => {
            let name = req.info.name.as_deref();
            let events = store.watch(ns, name, &req.params.list()?).await?;
            let timeout = req.params.timeout_seconds()?;
            let mut shutdown = req.shutdown.clone();
            let shutdown = async move {
                let _ = shutdown.wait_for(|down| *down).await;
            };
            Ok(watch::stream(
                info, events, format, include, timeout, shutdown,
            ))
        }
        "create" => {
            let obj = store
                .create(
                    ns,
                    parse_body(&req.headers, &req.body)?,
                    &req.params.write()?,
                )
                .await?;
            Ok(out(StatusCode::CREATED, &obj))
        }
        "update" => {
            let (obj, created) = store
                .update(
                    ns,
                    name,
                    parse_body(&req.headers, &req.body)?,
                    Subresource::Main,
                    &req.params.write()?,
                )
                .await?;
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(out(code, &obj))
        }
        "patch" => {
            let kind = patch_type(&req.headers)?;
            let obj = store
                .patch(
                    ns,
                    name,
                    kind,
                    &req.body,
                    Subresource::Main,
                    &req.params.write()?,
                )
                .await?;
            Ok(out(StatusCode::OK, &obj))
        }
        "delete" => {
            let opts = req.params.delete(optional_body(&req)?)?;
            let orphan_false = opts.orphan_dependents == Some(false);
            let outcome = store.delete(ns, name, opts).await?;
            // Upstream answers 202 only when a cascading delete was asked for the legacy way.
            let code = if !outcome.deleted && orphan_false {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            Ok(out(code, &outcome.object))
        }
        "deletecollection" => {
            let list = req.params.list()?;
            let opts = req.params.delete(optional_body(&req)?)?;
            let deleted = store.delete_collection(ns, &list, opts).await?;
            Ok(out(StatusCode::OK, &deleted))
        }
        _ => Err(method_not_allowed()),
    }
}

fn list_table(info: &ResourceInfo, mut list: Value, include: IncludeObject) -> Value {
    let items = match list.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    table::table(info, &items, list.get("metadata"), include)
}

pub fn patch_type(headers: &HeaderMap) -> Result<PatchType, RegistryError> {
    let ct = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    PatchType::from_content_type(ct).ok_or_else(|| {
        RegistryError::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {ct:?})"
        ))
    })
}

async fn subresource(
    store: &Store,
    req: &Request,
    sub: &str,
    format: Format,
) -> Result<Response, RegistryError> {
    let info = &store.info;
    if !info.has_subresource(sub) {
        return Err(RegistryError::NoSuchResource);
    }
    let ns = req.info.namespace.as_deref();
    let name = req.info.name.as_deref().unwrap_or_default();
    let verb = req.info.verb;
    let write = req.params.write()?;
    let part = match sub {
        "status" => Subresource::Status,
        "finalize" => Subresource::Finalize,
        "scale" => {
            let scale = match verb {
                "get" => store.get_scale(ns, name).await?,
                "update" => {
                    store
                        .update_scale(
                            ns,
                            name,
                            ScaleChange::Replace(parse_body(&req.headers, &req.body)?),
                            &write,
                        )
                        .await?
                }
                "patch" => {
                    let kind = patch_type(&req.headers)?;
                    store
                        .update_scale(ns, name, ScaleChange::Patch(kind, &req.body), &write)
                        .await?
                }
                _ => return Err(method_not_allowed()),
            };
            return Ok(response::encoded(StatusCode::OK, &scale, format, false));
        }
        _ => return Err(RegistryError::NoSuchResource),
    };
    let obj = match (verb, part) {
        ("get", Subresource::Status) => store.get(ns, name, &req.params.list()?).await?,
        ("update", _) => {
            store
                .update(ns, name, parse_body(&req.headers, &req.body)?, part, &write)
                .await?
                .0
        }
        ("patch", Subresource::Status) => {
            let kind = patch_type(&req.headers)?;
            store.patch(ns, name, kind, &req.body, part, &write).await?
        }
        _ => return Err(method_not_allowed()),
    };
    Ok(match format {
        Format::Table => response::json(
            StatusCode::OK,
            &table::table(info, &[obj], None, IncludeObject::Metadata),
        ),
        _ => response::encoded(StatusCode::OK, &obj, format, false),
    })
}
