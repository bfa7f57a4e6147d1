//! The Kubernetes API: discovery at `/api` and `/apis`, and every resource of the catalogue
//! served by one generic handler set. Routes are resolved per request from the catalogue, so
//! resources added while the server runs (custom resources) are served at once.

pub mod attributes;
pub(crate) mod body;
pub mod component_status;
pub mod create_only;
#[doc(hidden)]
pub mod fuzzing;
mod handlers;
mod json_syntax;
mod list_body;
mod manager;
pub(crate) mod negotiation;
mod params;
pub(crate) mod partial_metadata;
mod path;
pub mod protobuf;
pub(crate) mod request_info;
pub(crate) mod response;
pub(crate) mod subresources;
mod watch;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::{Extension, Router};
use registry::auth::UserInfo;
use registry::{Registry, RegistryError};
use tokio_util::sync::CancellationToken;

use self::attributes::Requested;
use self::create_only::{Creater, Creaters};
use self::handlers::Request;
use self::params::Params;
use self::request_info::RequestInfo;
use crate::discovery;

/// Request bodies above this are refused with 413, as upstream's 3 MiB limit.
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;

#[derive(Clone)]
pub struct Api {
    pub registry: Arc<Registry>,
    /// Flips to true when the server shuts down; watches end then.
    pub shutdown: CancellationToken,
    /// What answers the catalogue's create-only resources (the reviews).
    pub creaters: Creaters,
    /// What componentstatuses report.
    pub components: component_status::Components,
    /// Who serves group-versions other than the catalogue (APIServices).
    pub aggregator: Arc<crate::aggregator::Aggregator>,
}

impl Api {
    /// The Creater of the create-only resource whose collection `info` names, if it is one.
    fn creater(&self, info: &RequestInfo) -> Option<&dyn Creater> {
        if info.name.is_some() || info.subresource.is_some() {
            return None;
        }
        let entry = self
            .registry
            .catalogue()
            .lookup(&info.group, &info.version, &info.resource)
            .filter(|entry| entry.create_only && entry.namespaced == info.namespace.is_some())?;
        self.creaters.get(&entry.group, &entry.kind)
    }
}

pub fn router(api: Api) -> Router {
    Router::new()
        .route("/api", get(core_discovery))
        .route("/apis", get(groups_discovery))
        .route("/api/{*path}", any(dispatch_path::<true>))
        .route("/apis/{*path}", any(dispatch_path::<false>))
        .with_state(api)
}

fn accept(headers: &HeaderMap) -> &str {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn discovery_response(headers: &HeaderMap, legacy: bool, api: &Api) -> Response {
    let resources = api.registry.catalogue().all();
    let external = api.aggregator.external_versions();
    match discovery::wants_aggregated(accept(headers)) {
        Some(wanted) => {
            let doc = discovery::aggregated_with(&resources, legacy, wanted.version, &external);
            aggregated_discovery(&doc, wanted)
        }
        None if legacy => plain_discovery(headers, &discovery::core_versions()),
        None => plain_discovery(headers, &discovery::api_groups_with(&resources, &external)),
    }
}

/// An aggregated document in the serializer asked for, under its own Content-Type.
fn aggregated_discovery(doc: &serde_json::Value, wanted: discovery::Aggregated) -> Response {
    use discovery::Encoding;
    let body = match wanted.encoding {
        Encoding::Json => registry::wire::body(doc, registry::wire::Style::Compact)
            .map_err(|e| RegistryError::Internal(format!("encoding discovery: {e}"))),
        Encoding::Yaml => serde_yaml_ng::to_string(doc)
            .map(String::into_bytes)
            .map_err(|e| RegistryError::Internal(format!("encoding discovery: {e}"))),
        Encoding::Protobuf => protobuf::encode::encode(doc)
            .map_err(|e| RegistryError::Internal(format!("encoding discovery: {e}"))),
    };
    match body {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, wanted.content_type())],
            body,
        )
            .into_response(),
        Err(e) => response::error(e),
    }
}

/// A per-version document (APIVersions, APIGroupList, APIGroup, APIResourceList) in JSON,
/// YAML or protobuf as Accept negotiates, with no transformed form (upstream's
/// DefaultEndpointRestrictions); 406 when none of those is acceptable.
fn plain_discovery(headers: &HeaderMap, doc: &serde_json::Value) -> Response {
    match response::negotiate_discovery(headers) {
        Ok(format) => response::encoded(StatusCode::OK, doc, format, false),
        Err(e) => response::error(e),
    }
}

async fn core_discovery(State(api): State<Api>, headers: HeaderMap) -> Response {
    discovery_response(&headers, true, &api)
}

async fn groups_discovery(State(api): State<Api>, headers: HeaderMap) -> Response {
    discovery_response(&headers, false, &api)
}

/// The parts of a resource request the handlers need.
struct Incoming {
    method: Method,
    uri: Uri,
    upgrade: Option<hyper::upgrade::OnUpgrade>,
    path: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Body,
    /// The reading the filters judged (absent only when the router runs without them).
    requested: Option<Requested>,
    /// Who the request acts as (authentication's or impersonation's user).
    user: Option<Arc<UserInfo>>,
}

/// `/api/...` (LEGACY) and `/apis/...` share one handler.
async fn dispatch_path<const LEGACY: bool>(
    State(api): State<Api>,
    // The method, the URI as sent and the connection's upgrade, as one extractor.
    (method, uri, subresources::Upgrade(upgrade)): (Method, Uri, subresources::Upgrade),
    Path(path): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
    // What the filters read and who they let in, as one extractor.
    (requested, user): (Option<Extension<Requested>>, Option<Extension<UserInfo>>),
    headers: HeaderMap,
    body: Body,
) -> Response {
    let incoming = Incoming {
        method,
        uri,
        upgrade,
        path,
        query,
        headers,
        body,
        requested: requested.map(|Extension(r)| r),
        user: user.map(|Extension(u)| Arc::new(u)),
    };
    if !LEGACY {
        if let Some(route) = api.aggregator.route(&incoming.path) {
            return aggregated(&api, route, incoming).await;
        }
    }
    dispatch(api, LEGACY, incoming).await
}

/// A request for a group-version an APIService gives to another server, or to an
/// in-process API outside the catalogue.
async fn aggregated(api: &Api, route: crate::aggregator::Route, incoming: Incoming) -> Response {
    use crate::aggregator::{local::LocalRequest, proxy, Route};
    match route {
        Route::Remote(service) => {
            let outgoing = proxy::Outgoing {
                method: incoming.method,
                uri: incoming.uri,
                headers: incoming.headers,
                body: incoming.body,
                upgrade: incoming.upgrade,
            };
            proxy::serve(
                &api.registry,
                &api.aggregator.front_proxy,
                &service,
                incoming.user.as_deref(),
                outgoing,
            )
            .await
        }
        Route::Local(local) => {
            let body = match axum::body::to_bytes(incoming.body, MAX_BODY).await {
                Ok(body) => body,
                Err(_) => {
                    return response::error(RegistryError::RequestEntityTooLarge(format!(
                        "limit is {MAX_BODY} bytes"
                    )))
                }
            };
            let info = match incoming.requested {
                Some(Requested::Resource(info)) => Some(info),
                _ => None,
            };
            local
                .serve(LocalRequest {
                    method: incoming.method,
                    uri: incoming.uri,
                    headers: incoming.headers,
                    query: incoming.query,
                    body,
                    info,
                    user: incoming.user,
                })
                .await
        }
    }
}

async fn dispatch(api: Api, legacy: bool, incoming: Incoming) -> Response {
    let Incoming {
        method,
        uri,
        upgrade,
        path,
        query,
        headers,
        body,
        requested,
        user,
    } = incoming;
    let params = Params(query);
    // Serve exactly what authorization judged.
    let info = match requested {
        Some(Requested::Resource(info)) => Some(info),
        Some(Requested::NonResource { .. }) => None,
        None => request_info::parse(&method, legacy, &path, params.watch()),
    };
    let store = info.as_ref().and_then(|info| {
        api.registry
            .store(&info.group, &info.version, &info.resource)
    });
    if let (Some(info), None) = (&info, &store) {
        if let Some(creater) = api.creater(info) {
            let namespace = info.namespace.as_deref();
            let user = user.as_deref();
            return create_only::serve(creater, &method, namespace, &headers, body, user).await;
        }
        let computed = api
            .registry
            .catalogue()
            .lookup(&info.group, &info.version, &info.resource)
            .filter(|entry| entry.computed && info.subresource.is_none());
        if let Some(entry) = computed {
            let pretty = response::is_pretty(params.get("pretty"), &headers);
            return api
                .components
                .serve(&entry, &method, info.name.as_deref(), &headers, pretty)
                .await;
        }
    }
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(body) => body,
        Err(_) => {
            return response::error(RegistryError::RequestEntityTooLarge(format!(
                "limit is {MAX_BODY} bytes"
            )))
        }
    };
    let Some(info) = info else {
        return group_discovery(&api, legacy, &path, &headers);
    };
    let Some(store) = store else {
        return response::error(RegistryError::NoSuchResource);
    };
    let request = Request {
        method,
        uri,
        upgrade: std::sync::Mutex::new(upgrade),
        shutdown: api.shutdown.clone(),
        registry: api.registry.clone(),
        info,
        params,
        headers,
        body,
        user,
    };
    handlers::serve(store, request).await
}

/// `/api/v1`, `/apis/<group>` and `/apis/<group>/<version>`.
fn group_discovery(api: &Api, legacy: bool, path: &str, headers: &HeaderMap) -> Response {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let resources = api.registry.catalogue().all();
    let external = api.aggregator.external_versions();
    let doc = match (legacy, parts.as_slice()) {
        (true, [version]) => discovery::resource_list(&resources, "", version),
        (false, [group]) => discovery::api_group_with(&resources, group, &external),
        (false, [group, version]) => discovery::resource_list(&resources, group, version),
        _ => None,
    };
    match doc {
        Some(doc) => plain_discovery(headers, &doc),
        None => response::error(RegistryError::NoSuchResource),
    }
}
