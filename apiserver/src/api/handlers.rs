//! One generic handler per verb, for every resource: request info and parameters in, a
//! registry Store call, JSON or Table out (lists streamed, see `list_body`). No per-kind code;
//! subresources are served by the handlers registered under their names (`subresources`).

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use registry::catalogue::{Answer, SubresourceInfo};
use registry::options::WriteOptions;
use registry::patch::PatchType;
use registry::{warning, RegistryError, Store, Subresource, Verb};
use serde_json::Value;

use super::body::{check_body_type, optional_body};
use super::list_body::{self, ListEncoding};
use super::manager::write_options;
use super::params::Params;
use super::request_info::RequestInfo;
use super::response::{self, Format};
use super::subresources::{self, Call};
use super::watch;
use crate::table::{self, IncludeObject};

pub struct Request {
    /// The method and URI as sent (the proxies forward them and redirect by them).
    pub method: axum::http::Method,
    pub uri: axum::http::Uri,
    /// The connection's upgrade, for the subresources that take one (exec and attach answer
    /// WebSocket upgrades); taken by the one that does.
    pub upgrade: std::sync::Mutex<Option<hyper::upgrade::OnUpgrade>>,
    /// Turns true when the server begins to shut down, ending watches.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// Every Store, for subresources that act on more than their own resource (pods'
    /// eviction reads and writes PodDisruptionBudgets; a node's proxy reads its pods and Lease).
    pub registry: Arc<registry::Registry>,
    pub info: RequestInfo,
    pub params: Params,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Who makes the request: writes carry it to the registry (escalation checks judge it).
    pub user: Option<Arc<registry::auth::UserInfo>>,
}

/// The write options of a request, with its user.
fn write_options_of(
    req: &Request,
    patch: Option<PatchType>,
) -> Result<WriteOptions, RegistryError> {
    let mut write = write_options(&req.params, &req.headers, patch)?;
    write.user = req.user.clone();
    Ok(write)
}

pub(super) fn method_not_allowed() -> RegistryError {
    RegistryError::MethodNotAllowed(
        "the server does not allow this method on the requested resource".into(),
    )
}

/// Serves a resource request with the Store it names; warnings the registry raised on the
/// way go out as `Warning` headers, on success and on failure alike, and the audit
/// annotations it added ride on the response to the audit filter.
pub async fn serve(store: Arc<Store>, req: Request) -> Response {
    let pretty = response::is_pretty(req.params.get("pretty"), &req.headers);
    let negotiated = response::negotiate_for(&req.headers, speaks_protobuf(&store, &req));
    // An error goes out as upstream's ErrorNegotiated writes it: a Status in the serializer
    // the Accept picks without transformed forms (protobuf whatever the resource), else JSON.
    let error_format = response::error_format(&req.headers);
    let ((result, warnings), annotations) =
        registry::audit::collect(warning::collect(handle(store, req, negotiated))).await;
    let mut response = match result {
        Ok(response) => response,
        Err(e) => response::error_as(e, error_format, pretty),
    };
    response::add_warnings(&mut response, &warnings);
    if !annotations.0.is_empty() {
        response.extensions_mut().insert(annotations);
    }
    response
}

/// Whether the answer may be protobuf: a built-in kind's, and its subresources' (whose
/// answers, the object, a Scale, a TokenRequest or a Status, are all built-in kinds);
/// custom resources have no protobuf form, but their scale subresource answers an
/// autoscaling/v1 Scale, which has (upstream's CRD handler serves it with the Scale's codecs).
/// Asked only when Accept names protobuf (JSON comes first in the server's order, so no
/// wildcard picks it): the schema lookup builds the descriptor pool of every Kubernetes
/// message, 3.5 MB, which a server whose clients all speak JSON never needs.
fn speaks_protobuf(store: &Store, req: &Request) -> bool {
    names_protobuf(&req.headers)
        && (super::protobuf::encode::has_schema(&store.info.api_version(), &store.info.kind)
            || req.info.subresource.as_deref() == Some("scale"))
}

/// Whether an Accept header names the protobuf media type (media types compare without case).
fn names_protobuf(headers: &HeaderMap) -> bool {
    headers.get_all(axum::http::header::ACCEPT).iter().any(|v| {
        v.as_bytes()
            .windows(super::protobuf::MEDIA_TYPE.len())
            .any(|w| w.eq_ignore_ascii_case(super::protobuf::MEDIA_TYPE.as_bytes()))
    })
}

/// The request body as an object; its strict decoding errors ride in `write` to the
/// registry, which judges them with the unknown fields it finds.
pub(super) fn body(
    req: &Request,
    write: &mut WriteOptions,
    kind: &str,
) -> Result<Value, RegistryError> {
    let parsed = super::body::parse(&req.headers, &req.body, kind)?;
    write.decode_errors = parsed.duplicates;
    Ok(parsed.value)
}

/// `negotiated`: the answer's format from Accept, used past the connect subresources (which
/// answer in their own).
async fn handle(
    store: Arc<Store>,
    req: Request,
    negotiated: Result<Format, RegistryError>,
) -> Result<Response, RegistryError> {
    let info = store.info.clone();
    let Some(verb) = req.info.verb else {
        return Err(method_not_allowed());
    };
    if let Some(sub) = connect_subresource(&store, &req) {
        return connect(&store, &req, verb, sub).await;
    }
    let format = negotiated?;
    if req.info.subresource.is_none() && !info.has_verb(verb) {
        return Err(method_not_allowed());
    }
    if verb != Verb::Patch {
        check_body_type(&req.headers, &req.body)?;
    }
    let ns = req.info.namespace.as_deref();
    let name = req.info.name.as_deref().unwrap_or_default();
    if ns.is_none() && info.namespaced && !matches!(verb, Verb::List | Verb::Watch) {
        return Err(method_not_allowed());
    }
    if let Some(sub) = req.info.subresource.as_deref() {
        return subresource(&store, &req, verb, sub, format).await;
    }
    let include = IncludeObject::try_parse(req.params.get("includeObject"))?;
    let pretty = response::is_pretty(req.params.get("pretty"), &req.headers);
    let out = |code: StatusCode, body: &Value| response::answer(code, body, format, pretty);
    match verb {
        Verb::Get => match format {
            Format::Json if !pretty => Ok(response::json_pieces(
                StatusCode::OK,
                store.get_json(ns, name, &req.params.list()?).await?,
            )),
            Format::Json | Format::Yaml | Format::Protobuf | Format::Metadata(_) => out(
                StatusCode::OK,
                &store.get(ns, name, &req.params.list()?).await?,
            ),
            Format::Table | Format::YamlTable => {
                let obj = store.get(ns, name, &req.params.list()?).await?;
                // One object: a one-row Table carrying the object's resourceVersion.
                let table = table::table_for_watch_event(&info, &obj, include);
                Ok(response::encoded(StatusCode::OK, &table, format, pretty))
            }
        },
        Verb::List => {
            let list = store.list_stream(ns, &req.params.list()?).await?;
            let (list, format) = match format {
                Format::Metadata(meta) => (
                    super::partial_metadata::list(list, meta)?,
                    meta.encoding.format(),
                ),
                format => (list, format),
            };
            let encoding = ListEncoding::of(format, pretty, &info, include);
            list_body::response(list, encoding).await
        }
        Verb::Watch => {
            // YAML has no streaming form.
            if watch::content_type(format).is_none() {
                return Err(super::negotiation::not_acceptable_stream());
            }
            let name = req.info.name.as_deref();
            let events = store.watch_served(ns, name, &req.params.list()?).await?;
            let timeout = req.params.timeout_seconds()?;
            let shutdown = req.shutdown.clone().cancelled_owned();
            Ok(watch::stream(
                info, events, format, include, timeout, shutdown,
            ))
        }
        Verb::Create => {
            let mut write = write_options_of(&req, None)?;
            let obj = body(&req, &mut write, &info.kind)?;
            let obj = store.create(ns, obj, &write).await?;
            out(StatusCode::CREATED, &obj)
        }
        Verb::Update => {
            let mut write = write_options_of(&req, None)?;
            let obj = body(&req, &mut write, &info.kind)?;
            let (obj, created) = store
                .update(ns, name, obj, Subresource::Main, &write)
                .await?;
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            out(code, &obj)
        }
        Verb::Patch => {
            let kind = patch_type(&req.headers)?;
            let mut write = write_options_of(&req, Some(kind))?;
            patch_body(&req, &mut write)?;
            if kind == PatchType::Apply {
                let (obj, created) = store
                    .apply(ns, name, &req.body, Subresource::Main, &write)
                    .await?;
                let code = if created {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                };
                return out(code, &obj);
            }
            let obj = store
                .patch(ns, name, kind, &req.body, Subresource::Main, &write)
                .await?;
            out(StatusCode::OK, &obj)
        }
        Verb::Delete => {
            let opts = req.params.delete(optional_body(&req.headers, &req.body)?)?;
            let orphan_false = opts.orphan_dependents == Some(false);
            let outcome = store.delete(ns, name, opts).await?;
            // Upstream answers 202 only when a cascading delete was asked for the legacy way.
            let code = if !outcome.deleted && orphan_false {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            out(code, &outcome.object)
        }
        Verb::DeleteCollection => {
            let list = req.params.list()?;
            let opts = req.params.delete(optional_body(&req.headers, &req.body)?)?;
            let deleted = store.delete_collection(ns, &list, opts).await?;
            out(StatusCode::OK, &deleted)
        }
    }
}

/// The patch's type; a merge patch's duplicated fields ride in `write` as strict decoding
/// errors, as a body's do.
pub(super) fn patch_body(
    req: &Request,
    write: &mut WriteOptions,
) -> Result<PatchType, RegistryError> {
    let kind = patch_type(&req.headers)?;
    if matches!(kind, PatchType::Merge | PatchType::Strategic) {
        write.decode_errors = super::body::duplicates(&req.body);
    }
    Ok(kind)
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

/// The connect subresource (exec, proxy, ...) the request names, if it names one: whatever
/// its body and Accept header, it goes to the far end as it is (upstream's ConnectResource
/// negotiates nothing and decodes no body).
fn connect_subresource<'a>(store: &'a Store, req: &Request) -> Option<&'a SubresourceInfo> {
    let sub = store.info.subresource(req.info.subresource.as_deref()?)?;
    (sub.answer == Answer::Connect).then_some(sub)
}

/// A request to a connect subresource: its verb must be one it lists, and it takes no
/// dryRun (upstream's ConnectResource refuses one before anything else).
async fn connect(
    store: &Store,
    req: &Request,
    verb: Verb,
    registered: &SubresourceInfo,
) -> Result<Response, RegistryError> {
    let namespace = req.info.namespace.as_deref();
    if namespace.is_none() && store.info.namespaced {
        return Err(method_not_allowed());
    }
    let Some(handler) = subresources::handler(registered.name) else {
        return Err(RegistryError::NoSuchResource);
    };
    if !registered.verbs.contains(&verb.as_str()) {
        return Err(method_not_allowed());
    }
    if req.params.0.iter().any(|(key, _)| key == "dryRun") {
        return Err(RegistryError::BadRequest(
            "dryRun is not supported".to_string(),
        ));
    }
    let call = Call {
        store,
        req,
        verb,
        namespace,
        name: req.info.name.as_deref().unwrap_or_default(),
        format: Format::Json,
        pretty: response::is_pretty(req.params.get("pretty"), &req.headers),
        write: WriteOptions::default(),
    };
    handler.serve(call).await
}

/// A request to one of the resource's subresources, served by the handler registered under
/// its name once the registration allows the verb.
async fn subresource(
    store: &Store,
    req: &Request,
    verb: Verb,
    sub: &str,
    format: Format,
) -> Result<Response, RegistryError> {
    let Some(registered) = store.info.subresource(sub) else {
        return Err(RegistryError::NoSuchResource);
    };
    let patch_kind = match verb {
        Verb::Patch => Some(patch_type(&req.headers)?),
        _ => None,
    };
    let write = write_options_of(req, patch_kind)?;
    let Some(handler) = subresources::handler(registered.name) else {
        return Err(RegistryError::NoSuchResource);
    };
    if !registered.verbs.contains(&verb.as_str()) {
        return Err(method_not_allowed());
    }
    let call = Call {
        store,
        req,
        verb,
        namespace: req.info.namespace.as_deref(),
        name: req.info.name.as_deref().unwrap_or_default(),
        format,
        pretty: response::is_pretty(req.params.get("pretty"), &req.headers),
        write,
    };
    handler.serve(call).await
}

#[cfg(test)]
mod tests {
    use axum::http::{header, HeaderMap, HeaderValue};

    use super::names_protobuf;

    fn accept(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::ACCEPT, HeaderValue::from_static(v));
        }
        headers
    }

    /// Only a request naming protobuf makes the server look for (and so build) its schemas.
    #[test]
    fn protobuf_is_looked_up_only_when_asked_for() {
        assert!(!names_protobuf(&accept(&[])));
        assert!(!names_protobuf(&accept(&["application/json, */*"])));
        assert!(!names_protobuf(&accept(&["application/*"])));
        assert!(names_protobuf(&accept(&[
            "application/vnd.kubernetes.protobuf, application/json"
        ])));
        assert!(names_protobuf(&accept(&[
            "application/json;q=0.5",
            "Application/Vnd.Kubernetes.Protobuf"
        ])));
    }
}
