//! The HTTP surface: health, version, and a Status for everything not served yet.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tower_http::trace::TraceLayer;

use crate::health::{self, Endpoint, Health, HealthQuery};
use crate::version;

pub fn router(health: Health) -> Router {
    let mut router = Router::new().route("/version", get(version::handler));
    for endpoint in [Endpoint::Healthz, Endpoint::Livez, Endpoint::Readyz] {
        let path = format!("/{}", endpoint.name());
        router = router
            .route(
                &path,
                get(move |s: State<Health>, q: Query<HealthQuery>| health::all(s, endpoint, q)),
            )
            .route(
                &format!("{path}/{{check}}"),
                get(
                    move |s: State<Health>, p: Path<String>, q: Query<HealthQuery>| {
                        health::one(s, endpoint, p, q)
                    },
                ),
            );
    }
    router
        .fallback(not_found)
        .layer(TraceLayer::new_for_http())
        .with_state(health)
}

/// What kube-apiserver answers for a path it does not serve.
async fn not_found() -> Response {
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server could not find the requested resource",
        "reason": "NotFound",
        "details": {},
        "code": 404
    });
    (StatusCode::NOT_FOUND, Json(status)).into_response()
}
