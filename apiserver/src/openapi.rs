//! `/openapi/v2` and `/openapi/v3` as kube-apiserver serves them: documents of the resources
//! the catalogue holds, with ETags (304 on If-None-Match), v3 documents addressed by content
//! hash (a stale `?hash=` is redirected; the current one is immutable), and v2 as protobuf for
//! kubectl, which asks for nothing else.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use openapi::{Document, OpenApi, V2_PROTOBUF, V2_PROTOBUF_ACCEPTED};
use registry::Catalogue;
use serde::Deserialize;

/// The documents of the catalogue's resources, each built on its first request and kept:
/// built at start they were about 7 MB of an idle server's memory that nothing may ever ask
/// for, while a first build costs a client a fraction of a second.
pub fn for_catalogue(catalogue: &Catalogue) -> Arc<OpenApi> {
    // The create-only resources (the reviews) have no paths in these documents.
    let resources = catalogue
        .all()
        .iter()
        .filter(|i| !i.create_only)
        .map(|i| i.openapi_spec())
        .collect();
    let version = format!(
        "v{}.{}.0",
        crate::version::KUBE_MAJOR,
        crate::version::KUBE_MINOR
    );
    Arc::new(OpenApi::new(resources).with_info_version(&version))
}

/// The schemas writes are checked against (server-side field validation). Its own instance:
/// the served one holds its state while it builds a document (seconds in a debug build),
/// and a write must not wait for that. Every built-in kind has a schema, served or not.
pub fn for_validation() -> Arc<OpenApi> {
    Arc::new(OpenApi::new(Vec::new()))
}

pub fn router(api: Arc<OpenApi>) -> Router {
    Router::new()
        .route("/openapi/v2", get(v2))
        .route("/openapi/v3", get(v3_index))
        .route("/openapi/v3/{*path}", get(v3_group_version))
        .with_state(api)
}

/// Runs a document build off the async threads (cached after the first).
async fn build<T: Send + 'static>(
    api: &Arc<OpenApi>,
    f: impl FnOnce(&OpenApi) -> T + Send + 'static,
) -> Option<T> {
    let api = api.clone();
    tokio::task::spawn_blocking(move || f(&api)).await.ok()
}

fn serve(doc: &Document, content_type: &str, headers: &HeaderMap) -> Response {
    let etag = HeaderValue::from_str(&doc.etag()).ok();
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| doc.matches(v));
    let mut response = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(header::CONTENT_TYPE, content_type.to_string())],
            doc.bytes().clone(),
        )
            .into_response()
    };
    if let Some(etag) = etag {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

fn unavailable() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        "the OpenAPI document could not be built",
    )
        .into_response()
}

async fn v2(State(api): State<Arc<OpenApi>>, headers: HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let protobuf = accept
        .split(',')
        .map(|part| part.split(';').next().unwrap_or_default().trim())
        .any(|media| V2_PROTOBUF_ACCEPTED.contains(&media));
    if protobuf {
        match build(&api, OpenApi::v2_protobuf).await {
            Some(doc) => serve(&doc, V2_PROTOBUF, &headers),
            None => unavailable(),
        }
    } else {
        match build(&api, OpenApi::v2).await {
            Some(doc) => serve(&doc, "application/json", &headers),
            None => unavailable(),
        }
    }
}

async fn v3_index(State(api): State<Arc<OpenApi>>, headers: HeaderMap) -> Response {
    match build(&api, OpenApi::v3_index).await {
        Some(doc) => serve(&doc, "application/json", &headers),
        None => unavailable(),
    }
}

#[derive(Deserialize)]
struct HashQuery {
    hash: Option<String>,
}

async fn v3_group_version(
    State(api): State<Arc<OpenApi>>,
    Path(path): Path<String>,
    Query(query): Query<HashQuery>,
    headers: HeaderMap,
) -> Response {
    let wanted = path.clone();
    let Some(doc) = build(&api, move |a| a.v3_group_version(&wanted))
        .await
        .flatten()
    else {
        return crate::api::response::not_found_in(false);
    };
    match query.hash {
        Some(hash) if hash != doc.hash() => {
            let location = format!("/openapi/v3/{path}?hash={}", doc.hash());
            (
                StatusCode::MOVED_PERMANENTLY,
                [(header::LOCATION, location)],
            )
                .into_response()
        }
        Some(_) => {
            let mut response = serve(&doc, "application/json", &headers);
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, immutable"),
            );
            response
        }
        None => serve(&doc, "application/json", &headers),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// The 200 answer of a DELETE in the v2 document: the deleted object where the kind's
    /// Strategy returns it (pods), a Status elsewhere.
    #[test]
    fn delete_answers_follow_the_kinds_strategy() {
        let api = super::for_catalogue(&registry::Catalogue::builtin());
        let doc: Value = serde_json::from_slice(api.v2().bytes()).expect("v2 is JSON");
        let answer = |path: &str| {
            doc["paths"][path]["delete"]["responses"]["200"]["schema"]["$ref"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(
            answer("/api/v1/namespaces/{namespace}/pods/{name}"),
            "#/definitions/io.k8s.api.core.v1.Pod"
        );
        assert_eq!(
            answer("/api/v1/namespaces/{namespace}/configmaps/{name}"),
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Status"
        );
    }
}
