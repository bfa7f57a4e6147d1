//! Upstream's request filters around every handler: the in-flight limits
//! (`--max-requests-inflight`, `--max-mutating-requests-inflight`: beyond them a request is
//! answered 429 with `Retry-After: 1`), the timeout of non-long-running requests
//! (`--request-timeout`, shortened by a request's `?timeout=`: 504 past it), and the request
//! metrics (see [`crate::metrics`]). Long-running requests (watches; pods' log, exec, attach,
//! portforward; proxy) count against no limit and have no timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, HttpBody as _};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use futures::StreamExt;
use registry::{Registry, RegistryError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::api::attributes::{self, Requested};
use crate::api::request_info::RequestInfo;
use crate::api::response;
use crate::metrics::{self, RequestKind, RequestLabels};

/// Cancelled once the server is done with a request: its answer has started, its deadline
/// passed, or its client went away (the server dropped it). A handler that runs on its own
/// task past that point reads it where upstream's would see its request context end (API
/// Priority and Fairness: a request still queued leaves its queue).
#[derive(Clone, Debug)]
pub struct RequestEnded(pub CancellationToken);

pub struct Limits {
    read_only: Gate,
    mutating: Gate,
    /// None: no timeout.
    timeout: Option<Duration>,
    /// To label metrics with served resources only (no label from an arbitrary path).
    registry: Arc<Registry>,
}

impl Limits {
    /// Limits of 0 and a zero timeout disable them.
    pub fn new(
        max_requests_inflight: usize,
        max_mutating_requests_inflight: usize,
        request_timeout: Duration,
        registry: Arc<Registry>,
    ) -> Arc<Self> {
        Arc::new(Self {
            read_only: Gate::new(max_requests_inflight),
            mutating: Gate::new(max_mutating_requests_inflight),
            timeout: Some(request_timeout).filter(|t| !t.is_zero()),
            registry,
        })
    }

    /// `router` behind the filters.
    pub fn layer(self: Arc<Self>, router: Router) -> Router {
        router.layer(axum::middleware::from_fn_with_state(self, filter))
    }

    fn served(&self, info: &RequestInfo) -> bool {
        self.registry
            .store(&info.group, &info.version, &info.resource)
            .is_some_and(|store| {
                info.subresource
                    .as_deref()
                    .is_none_or(|sub| store.info.has_subresource(sub))
            })
    }
}

/// A limit on concurrent requests: [`Gate::try_enter`] fails when every permit is taken; a
/// permit is given back when dropped.
#[derive(Clone, Debug)]
pub struct Gate(Option<Arc<Semaphore>>);

/// Held while a request counts against its limit.
#[derive(Debug)]
pub struct Permit(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl Gate {
    /// 0: no limit.
    pub fn new(limit: usize) -> Self {
        Self((limit > 0).then(|| Arc::new(Semaphore::new(limit))))
    }

    /// None when the gate is full.
    pub fn try_enter(&self) -> Option<Permit> {
        match &self.0 {
            None => Some(Permit(None)),
            Some(semaphore) => semaphore
                .clone()
                .try_acquire_owned()
                .ok()
                .map(|p| Permit(Some(p))),
        }
    }
}

/// What the filters need to know of a request.
#[derive(Debug)]
pub struct Classified {
    pub long_running: bool,
    pub kind: RequestKind,
    /// For resource requests.
    pub info: Option<RequestInfo>,
    pub dry_run: bool,
    /// The request's own `?timeout=`.
    pub timeout: Option<Duration>,
}

/// Classifies a request from its method, URI and reading alone (before its body is read).
pub fn classify(method: &Method, uri: &Uri, requested: &Requested) -> Classified {
    let query = uri.query().unwrap_or_default();
    let param = |name: &str| {
        query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then_some(value)
        })
    };
    let info = match requested {
        Requested::Resource(info) => Some(info.clone()),
        Requested::NonResource { .. } => None,
    };
    let kind = if metrics::read_only(method) {
        RequestKind::ReadOnly
    } else {
        RequestKind::Mutating
    };
    Classified {
        long_running: requested.long_running(),
        kind,
        info,
        dry_run: param("dryRun") == Some("All"),
        timeout: param("timeout").and_then(|t| crate::options::parse_duration(t).ok()),
    }
}

async fn filter(State(limits): State<Arc<Limits>>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let ended = CancellationToken::new();
    request.extensions_mut().insert(RequestEnded(ended.clone()));
    // Dropped with this future: when it returns, or when the server drops it.
    let _ended = ended.drop_guard();
    let (method, uri) = (request.method().clone(), request.uri().clone());
    let class = classify(&method, &uri, attributes::ensure(&mut request));
    let labels = class
        .info
        .as_ref()
        .filter(|info| limits.served(info))
        .and_then(|info| RequestLabels::new(info, request.headers(), class.dry_run));
    let metrics = metrics::metrics();
    let record = |code: StatusCode| {
        if let Some(labels) = &labels {
            metrics.record(labels, code.as_u16(), started.elapsed());
        }
    };
    if class.long_running {
        // Counted when its response starts: its body streams for as long as it lasts.
        let response = next.run(request).await;
        record(response.status());
        return response;
    }
    let gate = match class.kind {
        RequestKind::ReadOnly => &limits.read_only,
        RequestKind::Mutating => &limits.mutating,
    };
    let Some(permit) = gate.try_enter() else {
        if let Some(labels) = &labels {
            metrics.terminated(labels, 429);
        }
        discard_body(request).await;
        return too_many_requests(1);
    };
    let inflight = metrics.inflight(class.kind);
    let timeout = match (limits.timeout, class.timeout.filter(|t| !t.is_zero())) {
        (Some(server), Some(asked)) => Some(server.min(asked)),
        (server, asked) => server.or(asked),
    };
    let response = match timeout {
        None => next.run(request).await,
        // The handler runs to its end on its own task, as upstream's goroutine does after a
        // timeout: a write is never cut off half-way.
        Some(timeout) => {
            // Past the timeout the body reads fail (upstream's timeoutReader), so a handler
            // still waiting on a slow body ends.
            let expired = CancellationToken::new();
            let request = request.map(|body| cut_off(body, expired.clone()));
            match tokio::time::timeout(timeout, tokio::spawn(next.run(request))).await {
                Ok(Ok(response)) => response,
                Ok(Err(e)) => response::error(RegistryError::Internal(format!(
                    "the request handler failed: {e}"
                ))),
                Err(_) => {
                    expired.cancel();
                    if let Some(labels) = &labels {
                        metrics.terminated(labels, 504);
                    }
                    timed_out()
                }
            }
        }
    };
    let code = response.status();
    if response.body().size_hint().exact().is_some() {
        record(code);
        return response;
    }
    // A streamed body (a large list) is still the request's work: it holds its place in
    // the limit until written out, and its duration ends then, as upstream's filter holds
    // it and its metrics observe it when the handler has written it all.
    let recorded = labels.map(|labels| RecordedWhenWritten {
        labels,
        code: code.as_u16(),
        started,
    });
    response.map(|body| {
        let held = (permit, inflight, recorded);
        Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _ = &held;
            chunk
        }))
    })
}

/// A streamed answer's duration, recorded when its body is written out (or dropped).
struct RecordedWhenWritten {
    labels: metrics::RequestLabels,
    code: u16,
    started: Instant,
}

impl Drop for RecordedWhenWritten {
    fn drop(&mut self) {
        metrics::metrics().record(&self.labels, self.code, self.started.elapsed());
    }
}

/// `body`, whose reads fail once `expired` is cancelled.
fn cut_off(body: Body, expired: CancellationToken) -> Body {
    let data = body.into_data_stream();
    Body::from_stream(futures::stream::unfold(
        Some((data, expired)),
        |state| async move {
            let (mut data, expired) = state?;
            tokio::select! {
                biased;
                _ = expired.cancelled() => {
                    Some((Err(axum::Error::new("request did not complete within requested timeout")), None))
                }
                item = data.next() => item.map(|item| (item, Some((data, expired)))),
            }
        },
    ))
}

/// The most of a refused request's body read and thrown away so that its connection stays
/// usable (Go's server discards up to 256 KB after a handler that did not read the body).
const DISCARDED_AT_MOST: usize = 256 * 1024;
/// How long a refused request's body may take to arrive.
const DISCARD_WITHIN: Duration = Duration::from_secs(5);

/// Reads and drops the body of a request answered without it (a 429). Unread, the body's
/// bytes that had not arrived yet when the answer went out make the server close the
/// keep-alive connection (a client sending the next request on it gets a broken pipe),
/// where kube-apiserver keeps it open. A larger or slower body is left, and the connection
/// closed, as Go does.
pub async fn discard_body(request: Request) {
    let body = axum::body::to_bytes(request.into_body(), DISCARDED_AT_MOST);
    let _ = tokio::time::timeout(DISCARD_WITHIN, body).await;
}

/// Upstream's 429 of the max-in-flight and priority-and-fairness filters: not a Status but Go's
/// `http.Error` text (`text/plain`, `nosniff`, a trailing newline) with `Retry-After`, which is
/// what clients (client-go retries on it) see from kube-apiserver.
pub fn too_many_requests(retry_after_seconds: u64) -> Response {
    let mut response = Response::new(Body::from("Too many requests, please try again later.\n"));
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_seconds));
    response
}

/// Upstream's 504 for a request that outlived its deadline (apierrors.NewTimeoutError).
pub fn timed_out() -> Response {
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Timeout: request did not complete within requested timeout - context deadline exceeded",
        "reason": "Timeout",
        "details": {},
        "code": 504,
    });
    crate::api::response::json(StatusCode::GATEWAY_TIMEOUT, &status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;
    use registry::Verb;

    fn class(method: Method, uri: &str) -> Classified {
        let uri: Uri = uri.parse().unwrap();
        let requested = Requested::read(&method, uri.path(), uri.query());
        classify(&method, &uri, &requested)
    }

    #[test]
    fn long_running_requests() {
        for (method, uri) in [
            (Method::GET, "/api/v1/namespaces/d/pods?watch=true"),
            (Method::GET, "/api/v1/namespaces/d/pods?limit=5&watch=1"),
            (Method::GET, "/api/v1/watch/namespaces/d/pods"),
            (Method::GET, "/apis/apps/v1/deployments?watch=true"),
            (Method::GET, "/api/v1/namespaces/d/pods/p/log?follow=true"),
            (Method::GET, "/api/v1/namespaces/d/pods/p/log"),
            (Method::POST, "/api/v1/namespaces/d/pods/p/exec?command=ls"),
            (Method::GET, "/api/v1/nodes/n/proxy/stats/summary"),
            (Method::POST, "/api/v1/namespaces/d/pods/p/portforward"),
        ] {
            assert!(class(method, uri).long_running, "{uri}");
        }
        for (method, uri) in [
            (Method::GET, "/api/v1/namespaces/d/pods"),
            (Method::GET, "/api/v1/namespaces/d/pods?watch=false"),
            (Method::GET, "/api/v1/namespaces/d/pods?watching=true"),
            (Method::GET, "/api/v1/namespaces/d/pods/p"),
            (Method::POST, "/api/v1/namespaces/d/pods"),
            (Method::GET, "/healthz"),
            (Method::GET, "/metrics?watch=true"),
            (Method::GET, "/apis/apps/v1"),
        ] {
            assert!(!class(method, uri).long_running, "{uri}");
        }
    }

    #[test]
    fn mutating_requests() {
        for method in [Method::GET, Method::HEAD] {
            assert_eq!(class(method, "/api/v1/pods").kind, RequestKind::ReadOnly);
        }
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert_eq!(
                class(method, "/api/v1/namespaces/d/pods/p").kind,
                RequestKind::Mutating
            );
        }
        let c = class(
            Method::POST,
            "/api/v1/namespaces/d/pods?dryRun=All&timeout=5s",
        );
        assert!(c.dry_run);
        assert_eq!(c.timeout, Some(Duration::from_secs(5)));
        assert_eq!(c.info.and_then(|i| i.verb), Some(Verb::Create));
    }

    #[test]
    fn a_full_gate_refuses_until_a_permit_is_dropped() {
        let gate = Gate::new(2);
        let first = gate.try_enter().expect("first");
        let _second = gate.try_enter().expect("second");
        assert!(gate.try_enter().is_none());
        drop(first);
        let _third = gate.try_enter().expect("a permit given back");
        assert!(gate.try_enter().is_none());
        // 0: no limit.
        let open = Gate::new(0);
        let held: Vec<_> = (0..1000).map(|_| open.try_enter().expect("open")).collect();
        assert_eq!(held.len(), 1000);
    }

    #[tokio::test]
    async fn refusals_are_upstream_statuses() {
        let response = too_many_requests(1);
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()["retry-after"], "1");
        assert_eq!(
            response.headers()["content-type"],
            "text/plain; charset=utf-8"
        );
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        assert_eq!(body, "Too many requests, please try again later.\n");
        let response = timed_out();
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (status["reason"].as_str(), status["code"].as_i64()),
            (Some("Timeout"), Some(504))
        );
    }

    /// A streamed answer (a large list) keeps its permit until its body is written out.
    #[tokio::test]
    async fn a_streamed_body_holds_its_permit_to_the_end() {
        use tower::ServiceExt;
        let backend = test_support::TestBackend::embedded().await;
        let registry = crate::testing::registry(&backend).await;
        let limits = Limits::new(1, 1, Duration::ZERO, registry);
        let (mut tx, rx) =
            futures::channel::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(1);
        let rx = Arc::new(std::sync::Mutex::new(Some(rx)));
        let router = limits.layer(Router::new().route(
            "/api/v1/configmaps",
            axum::routing::get(move || {
                let rx = rx.lock().ok().and_then(|mut r| r.take());
                async move {
                    match rx {
                        Some(rx) => Body::from_stream(rx).into_response(),
                        None => "whole".into_response(),
                    }
                }
            }),
        ));
        let get = || {
            axum::http::Request::get("/api/v1/configmaps")
                .body(Body::empty())
                .expect("request")
        };
        let streamed = router.clone().oneshot(get()).await.expect("first");
        assert_eq!(streamed.status(), StatusCode::OK);
        let refused = router.clone().oneshot(get()).await.expect("second");
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        futures::SinkExt::send(&mut tx, Ok("end".into()))
            .await
            .expect("send");
        drop(tx);
        let body = axum::body::to_bytes(streamed.into_body(), 1 << 16)
            .await
            .expect("body");
        assert_eq!(body, "end");
        let whole = router.clone().oneshot(get()).await.expect("third");
        assert_eq!(whole.status(), StatusCode::OK);
        // A body of known size gives the permit back at once.
        let again = router.oneshot(get()).await.expect("fourth");
        assert_eq!(again.status(), StatusCode::OK);
    }
}
