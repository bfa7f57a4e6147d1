//! The router of the whole HTTP surface: the Kubernetes API, OpenAPI, health and version
//! endpoints and the collector's debug graph, behind tracing; a panic or an unknown path is
//! answered with a metav1.Status, never a dropped connection.

use axum::extract::{Path, Query, State};
use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

use crate::api::{self, response, Api};
use crate::authn::{self, impersonation, UserInfo};
use crate::authz::{self, Authorization};
use crate::controllers::Controllers;
use crate::health::{self, Endpoint, Health, HealthQuery};
use crate::version;

/// The router on the loopback HTTP port: the trusted local port, whose requests act as
/// [`UserInfo::loopback`].
pub fn loopback(router: Router) -> Router {
    router.layer(axum::Extension(UserInfo::loopback()))
}

/// The router on the secure port: each request carries the [`UserInfo`] its client
/// certificate or bearer token names (anonymous without credentials), or is answered 401.
pub fn secure(router: Router, authenticator: Arc<authn::Authenticator>) -> Router {
    router.layer(axum::middleware::from_fn_with_state(
        authenticator,
        authn::authenticate,
    ))
}

pub fn router(
    health: Health,
    api: Api,
    controllers: Arc<Controllers>,
    openapi: Arc<openapi::OpenApi>,
    authorization: Authorization,
    flow_control: Option<Arc<crate::flow_control::FlowControl>>,
) -> Router {
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
    let debug = Router::new()
        .route(
            "/debug/controllers/garbagecollector/graph",
            get(garbage_collector_graph),
        )
        .with_state(controllers);
    let mut router = router.with_state(health).merge(debug);
    if let Some(flow_control) = &flow_control {
        router = router.merge(crate::flow_control::debug::router(flow_control.clone()));
    }
    let router = router
        .merge(crate::openapi::router(openapi))
        .merge(crate::metrics::router(api.registry.clone()))
        .merge(api::router(api))
        .fallback(response::not_found)
        // A panic in a handler answers 500 with a Status; the server carries on.
        .layer(CatchPanicLayer::custom(panic_status))
        // Outermost first: authentication (the listener's layer, see `secure` and
        // `loopback`), request info, audit, impersonation, priority and fairness,
        // authorization, the handler.
        .layer(axum::middleware::from_fn_with_state(
            authorization.clone(),
            authz::authorize,
        ));
    // API Priority and Fairness between impersonation and authorization, as upstream's
    // chain: it classifies the user the request acts as.
    let router = match flow_control {
        Some(flow_control) => router.layer(axum::middleware::from_fn_with_state(
            flow_control,
            crate::flow_control::filter::filter,
        )),
        None => router,
    };
    router
        .layer(axum::middleware::from_fn_with_state(
            authorization.authorizer,
            impersonation::impersonate,
        ))
        // (audit wraps all this, right after authentication: see `crate::audit`, which
        // reads the request info itself when it is not there yet)
        .layer(axum::middleware::from_fn(
            api::attributes::with_request_info,
        ))
        .layer(TraceLayer::new_for_http())
}

/// The garbage collector's dependency graph in DOT (`?uid=` narrows it to one object's
/// owners and dependents), as kube-controller-manager serves it.
async fn garbage_collector_graph(
    State(controllers): State<Arc<Controllers>>,
    Query(query): Query<GraphQuery>,
) -> Response {
    match controllers.garbage_collector() {
        Some(gc) => (
            [(header::CONTENT_TYPE, "text/vnd.graphviz")],
            gc.dot(query.uid.as_deref()),
        )
            .into_response(),
        None => {
            let status = registry::RegistryError::ServiceUnavailable(
                "the garbage collector does not run on this server (controllers disabled, or another server leads)".into(),
            )
            .status();
            crate::api::response::json(
                StatusCode::SERVICE_UNAVAILABLE,
                &serde_json::to_value(status).unwrap_or_default(),
            )
        }
    }
}

#[derive(serde::Deserialize)]
struct GraphQuery {
    uid: Option<String>,
}

fn panic_status(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    let status =
        registry::RegistryError::Internal("the server panicked while handling the request".into())
            .status();
    let mut response = crate::api::response::json(
        StatusCode::INTERNAL_SERVER_ERROR,
        &serde_json::to_value(status).unwrap_or_default(),
    );
    // For the audit log's Panic stage.
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    response
        .extensions_mut()
        .insert(crate::audit::Panicked(message));
    response
}
