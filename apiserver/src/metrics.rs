//! `/metrics`: the server's metrics in the Prometheus text format, under kube-apiserver's
//! names and labels (`apiserver_request_total`, `apiserver_request_duration_seconds`,
//! `apiserver_current_inflight_requests`, `apiserver_request_terminations_total`,
//! `apiserver_storage_objects`, `apiserver_watch_events_total`), with the controllers'
//! `workqueue_*` and storage's `etcd_request_duration_seconds` gathered alongside, and
//! `tokio_alive_tasks` and `event_recorder_dropped_events_total` (this server's own, see
//! [`ALIVE_TASKS`] and `client::events`).
//!
//! One process-wide set, as upstream's legacy registry: the request filter
//! ([`crate::limits`]) and the watch streams record into it wherever they run.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    TextEncoder,
};
use registry::{Registry, Verb};

use crate::api::request_info::RequestInfo;

/// What kube-apiserver sends `/metrics` as.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `apiserver_request_duration_seconds`' buckets, upstream's.
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// The `component` label of requests this server serves itself.
const COMPONENT: &str = "apiserver";

/// The tasks alive in the server's async runtime. Upstream's nearest figure is `go_goroutines`
/// (from Go's runtime collector), which leak checks watch; it is not reused: a tokio task is
/// not a goroutine (a request here may be one task or several, and blocking-pool work is not
/// counted), and a `go_*` name would tell dashboards this is a Go process. The name says
/// whose figure it is; it is not an upstream metric.
const ALIVE_TASKS: &str = "tokio_alive_tasks";

/// How long a scrape waits for the stores' object counts.
const COUNT_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Metrics {
    registry: prometheus::Registry,
    request_total: IntCounterVec,
    request_duration: HistogramVec,
    terminations: IntCounterVec,
    inflight: IntGaugeVec,
    storage_objects: IntGaugeVec,
    watch_events: IntCounterVec,
    alive_tasks: IntGauge,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The process's metrics.
pub fn metrics() -> &'static Metrics {
    &METRICS
}

const REQUEST_LABELS: [&str; 8] = [
    "verb",
    "dry_run",
    "group",
    "version",
    "resource",
    "subresource",
    "scope",
    "component",
];

impl Metrics {
    fn new() -> Self {
        let with_code: Vec<&str> = REQUEST_LABELS.iter().copied().chain(["code"]).collect();
        let request_total = IntCounterVec::new(
            Opts::new(
                "apiserver_request_total",
                "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            ),
            &with_code,
        )
        .expect("request_total");
        let request_duration = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_request_duration_seconds",
                "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            )
            .buckets(DURATION_BUCKETS.to_vec()),
            &REQUEST_LABELS,
        )
        .expect("request_duration_seconds");
        let terminations = IntCounterVec::new(
            Opts::new(
                "apiserver_request_terminations_total",
                "Number of requests which apiserver terminated in self-defense.",
            ),
            &with_code,
        )
        .expect("request_terminations_total");
        let inflight = IntGaugeVec::new(
            Opts::new(
                "apiserver_current_inflight_requests",
                "Number of requests in flight, per request kind (readOnly, mutating), that count against the --max-requests-inflight and --max-mutating-requests-inflight limits.",
            ),
            &["request_kind"],
        )
        .expect("current_inflight_requests");
        let storage_objects = IntGaugeVec::new(
            Opts::new(
                "apiserver_storage_objects",
                "Number of stored objects at the time of last check split by kind.",
            ),
            &["resource"],
        )
        .expect("storage_objects");
        let watch_events = IntCounterVec::new(
            Opts::new(
                "apiserver_watch_events_total",
                "Number of events sent in watch clients",
            ),
            &["group", "version", "kind"],
        )
        .expect("watch_events_total");
        let alive_tasks = IntGauge::new(
            ALIVE_TASKS,
            "Number of tasks alive in the server's tokio runtime at the time of the scrape (not an upstream metric; the analogue of go_goroutines).",
        )
        .expect("alive_tasks");
        let registry = prometheus::Registry::new();
        for collector in [
            Box::new(request_total.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(request_duration.clone()),
            Box::new(terminations.clone()),
            Box::new(inflight.clone()),
            Box::new(storage_objects.clone()),
            Box::new(watch_events.clone()),
            Box::new(alive_tasks.clone()),
        ] {
            registry
                .register(collector)
                .expect("metric registered once");
        }
        // The lower layers' own families: the controllers' work queues and the storage
        // backend's request latency.
        client::workqueue::register_metrics(&registry).expect("metric registered once");
        client::events::register_metrics(&registry).expect("metric registered once");
        storage::metrics::register_metrics(&registry).expect("metric registered once");
        crate::webhooks::metrics::register(&registry).expect("metric registered once");
        crate::conversion_webhook::register(&registry).expect("metric registered once");
        crate::flow_control::metrics::register(&registry).expect("metric registered once");
        // Both kinds show from the start, at 0.
        for kind in [RequestKind::ReadOnly, RequestKind::Mutating] {
            inflight.with_label_values(&[kind.as_str()]).set(0);
        }
        Self {
            registry,
            request_total,
            request_duration,
            terminations,
            inflight,
            storage_objects,
            watch_events,
            alive_tasks,
        }
    }

    /// Samples `tokio_alive_tasks` from the runtime the caller runs on (none: left as it is).
    pub fn sample_runtime(&self) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let alive = runtime.metrics().num_alive_tasks();
            self.alive_tasks
                .set(i64::try_from(alive).unwrap_or(i64::MAX));
        }
    }

    /// A finished request: counted with its code, and timed unless it is a watch or a
    /// connect (long-running), as upstream leaves those out of the histogram.
    pub fn record(&self, labels: &RequestLabels, code: u16, elapsed: Duration) {
        let code = code.to_string();
        let values = labels.values();
        let mut with_code = values.to_vec();
        with_code.push(&code);
        self.request_total.with_label_values(&with_code).inc();
        if !matches!(labels.verb, "WATCH" | "CONNECT") {
            self.request_duration
                .with_label_values(&values)
                .observe(elapsed.as_secs_f64());
        }
    }

    /// A request the server refused in self-defense (429 when full, 504 on timeout).
    pub fn terminated(&self, labels: &RequestLabels, code: u16) {
        let code = code.to_string();
        let mut with_code = labels.values().to_vec();
        with_code.push(&code);
        self.terminations.with_label_values(&with_code).inc();
    }

    /// The in-flight gauge of one kind; hold the guard while the request counts.
    pub fn inflight(&self, kind: RequestKind) -> InflightGuard {
        let gauge = self.inflight.with_label_values(&[kind.as_str()]);
        gauge.inc();
        InflightGuard(gauge)
    }

    /// The counter of events sent to watchers of one kind.
    pub fn watch_events(&self, group: &str, version: &str, kind: &str) -> IntCounter {
        self.watch_events.with_label_values(&[group, version, kind])
    }

    /// Every metric in the text exposition format.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::warn!(error = %e, "encoding metrics");
        }
        out
    }

    /// Samples `apiserver_storage_objects` from every Store's storage.
    pub async fn sample_storage(&self, registry: &Registry) {
        for (resource, n) in stored_counts(registry).await {
            self.storage_objects.with_label_values(&[&resource]).set(n);
        }
    }
}

/// Every stored resource's object count (a count-only read per resource; resources served
/// at several versions share one count), named `plural` or `plural.group` as
/// `apiserver_storage_objects` names them. Empty when counting takes too long.
pub async fn stored_counts(registry: &Registry) -> Vec<(String, i64)> {
    let mut seen = std::collections::HashSet::new();
    let stores: Vec<_> = registry
        .stores()
        .into_iter()
        .filter(|s| seen.insert(s.info.storage_path.clone()))
        .collect();
    let counts = stores.iter().map(|store| async move {
        let prefix = format!("{}/", store.info.storage_path);
        (store, store.storage().count(&prefix).await)
    });
    let Ok(counts) = tokio::time::timeout(COUNT_TIMEOUT, futures::future::join_all(counts)).await
    else {
        tracing::warn!("counting stored objects timed out");
        return Vec::new();
    };
    counts
        .into_iter()
        .filter_map(|(store, count)| {
            let resource = resource_name(&store.info.group, &store.info.plural);
            match count {
                Ok(n) => Some((resource, n)),
                Err(e) => {
                    tracing::debug!(%resource, error = %e, "counting stored objects");
                    None
                }
            }
        })
        .collect()
}

/// A resource as `apiserver_storage_objects` labels it: `plural`, or `plural.group`.
pub fn resource_name(group: &str, plural: &str) -> String {
    match group {
        "" => plural.to_string(),
        group => format!("{plural}.{group}"),
    }
}

/// The in-flight limit a request counts against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    ReadOnly,
    Mutating,
}

impl RequestKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "readOnly",
            Self::Mutating => "mutating",
        }
    }
}

/// Decrements its in-flight gauge when dropped.
pub struct InflightGuard(prometheus::IntGauge);

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The labels of a resource request, as upstream's metrics name them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestLabels {
    pub verb: &'static str,
    pub dry_run: &'static str,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub scope: &'static str,
}

impl RequestLabels {
    /// None for a request without a verb (405 methods). `headers` tell an apply from other
    /// patches, `dry_run` whether `?dryRun=All` was asked.
    pub fn new(info: &RequestInfo, headers: &HeaderMap, dry_run: bool) -> Option<Self> {
        let verb = match info.verb? {
            Verb::Get => "GET",
            Verb::List => "LIST",
            Verb::Watch => "WATCH",
            Verb::Create => "POST",
            Verb::Update => "PUT",
            Verb::Patch if is_apply(headers) => "APPLY",
            Verb::Patch => "PATCH",
            Verb::Delete => "DELETE",
            Verb::DeleteCollection => "DELETECOLLECTION",
        };
        // Upstream's CleanScope.
        let scope = if info.name.is_some() || info.verb == Some(Verb::Create) {
            "resource"
        } else if info.namespace.is_some() {
            "namespace"
        } else {
            "cluster"
        };
        Some(Self {
            verb,
            dry_run: if dry_run { "All" } else { "" },
            group: info.group.clone(),
            version: info.version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone().unwrap_or_default(),
            scope,
        })
    }

    fn values(&self) -> [&str; 8] {
        [
            self.verb,
            self.dry_run,
            &self.group,
            &self.version,
            &self.resource,
            &self.subresource,
            self.scope,
            COMPONENT,
        ]
    }
}

fn is_apply(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/apply-patch"))
}

/// Whether a method only reads (what the read-only in-flight limit counts).
pub fn read_only(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD)
}

/// `/metrics` (behind authorization, as upstream: system:monitoring may read it).
pub fn router(registry: Arc<Registry>) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(registry)
}

async fn scrape(State(registry): State<Arc<Registry>>) -> Response {
    let metrics = metrics();
    metrics.sample_storage(&registry).await;
    metrics.sample_runtime();
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        metrics.encode(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn info(method: Method, legacy: bool, path: &str, watch: bool) -> RequestInfo {
        crate::api::request_info::parse(&method, legacy, path, watch).expect("resource request")
    }

    #[test]
    fn labels_as_upstream_reports_them() {
        let none = HeaderMap::new();
        let l = RequestLabels::new(
            &info(Method::POST, true, "v1/namespaces/d/pods", false),
            &none,
            false,
        )
        .unwrap();
        assert_eq!(
            (l.verb, l.scope, l.resource.as_str()),
            ("POST", "resource", "pods")
        );
        let l = RequestLabels::new(
            &info(
                Method::GET,
                false,
                "apps/v1/namespaces/d/deployments",
                false,
            ),
            &none,
            true,
        )
        .unwrap();
        assert_eq!(
            (l.verb, l.scope, l.group.as_str(), l.dry_run),
            ("LIST", "namespace", "apps", "All")
        );
        let l =
            RequestLabels::new(&info(Method::GET, true, "v1/nodes", true), &none, false).unwrap();
        assert_eq!((l.verb, l.scope), ("WATCH", "cluster"));
        let mut apply = HeaderMap::new();
        apply.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/apply-patch+yaml"),
        );
        let i = info(Method::PATCH, true, "v1/namespaces/d/pods/p/status", false);
        let l = RequestLabels::new(&i, &apply, false).unwrap();
        assert_eq!((l.verb, l.subresource.as_str()), ("APPLY", "status"));
        assert_eq!(RequestLabels::new(&i, &none, false).unwrap().verb, "PATCH");
        let i = info(Method::DELETE, true, "v1/namespaces/d/pods", false);
        assert_eq!(
            RequestLabels::new(&i, &none, false).unwrap().verb,
            "DELETECOLLECTION"
        );
    }

    #[test]
    fn recorded_requests_show_in_the_text_format() {
        let metrics = metrics();
        let labels = RequestLabels {
            verb: "GET",
            dry_run: "",
            group: "metrics.test".into(),
            version: "v1".into(),
            resource: "widgets".into(),
            subresource: String::new(),
            scope: "resource",
        };
        metrics.record(&labels, 200, Duration::from_millis(30));
        let watch = RequestLabels {
            verb: "WATCH",
            ..labels.clone()
        };
        metrics.record(&watch, 200, Duration::from_secs(100));
        let text = String::from_utf8(metrics.encode()).unwrap();
        assert!(text.contains(
            r#"apiserver_request_total{code="200",component="apiserver",dry_run="",group="metrics.test",resource="widgets",scope="resource",subresource="",verb="GET",version="v1"} 1"#
        ), "{text}");
        assert!(text.contains(r#"apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="metrics.test",resource="widgets",scope="resource",subresource="",verb="GET",version="v1",le="0.05"} 1"#), "{text}");
        // Watches are counted, not timed.
        assert!(text.contains(r#"verb="WATCH",version="v1"} 1"#));
        assert!(!text.contains(r#"apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="metrics.test",resource="widgets",scope="resource",subresource="",verb="WATCH""#));
        assert!(text.contains(r#"apiserver_current_inflight_requests{request_kind="mutating"}"#));
        // The event recorders' drops are exported with the rest, from the start.
        assert!(text.contains("# TYPE event_recorder_dropped_events_total counter\n"));
    }

    #[tokio::test]
    async fn alive_tasks_follow_the_runtime() {
        let metrics = metrics();
        let gauge = |text: &str| -> i64 {
            text.lines()
                .find_map(|l| l.strip_prefix("tokio_alive_tasks "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(-1)
        };
        metrics.sample_runtime();
        let before = gauge(&String::from_utf8(metrics.encode()).unwrap());
        let stop = tokio_util::sync::CancellationToken::new();
        let parked: Vec<_> = (0..5)
            .map(|_| tokio::spawn(stop.clone().cancelled_owned()))
            .collect();
        metrics.sample_runtime();
        let during = gauge(&String::from_utf8(metrics.encode()).unwrap());
        assert_eq!(during, before + 5, "five parked tasks more");
        stop.cancel();
        for task in parked {
            task.await.unwrap();
        }
        metrics.sample_runtime();
        assert_eq!(gauge(&String::from_utf8(metrics.encode()).unwrap()), before);
    }
}
