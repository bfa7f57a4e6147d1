//! `etcd_request_duration_seconds{operation, type}`: how long the backend calls a
//! [`crate::KvStore`] makes take, under upstream's etcd3 store's name and operations (get,
//! list, listWithCount, create, update, delete), whichever backend serves them.
//!
//! `type` is the resource the key belongs to, read from the key as the registry lays keys
//! out: `/<plural>/...` for the built-in kinds, `/<group>/<plural>/...` for others, given as
//! `<plural>.<group>` like upstream's group-resource label.

use std::future::Future;
use std::sync::LazyLock;
use std::time::Duration;

use bytes::Bytes;
use prometheus::{HistogramOpts, HistogramVec};
use tokio::time::Instant;

use crate::backend::{BackendWatch, DynBackend, KeyRange, RangeRequest, RangeResponse, TxnOutcome};
use crate::Result;

/// Upstream's buckets for this histogram.
const BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

static REQUEST_DURATION: LazyLock<HistogramVec> = LazyLock::new(|| {
    HistogramVec::new(
        HistogramOpts::new(
            "etcd_request_duration_seconds",
            "Etcd request latency in seconds for each operation and object type.",
        )
        .buckets(BUCKETS.to_vec()),
        &["operation", "type"],
    )
    .expect("a valid histogram definition")
});

/// Registers `etcd_request_duration_seconds` with `registry` (once per registry).
pub fn register_metrics(registry: &prometheus::Registry) -> prometheus::Result<()> {
    registry.register(Box::new(REQUEST_DURATION.clone()))
}

fn observe(operation: &str, resource: &str, elapsed: Duration) {
    REQUEST_DURATION
        .with_label_values(&[operation, resource])
        .observe(elapsed.as_secs_f64());
}

/// A store's backend, timing the calls upstream's store times.
#[derive(Clone)]
pub(crate) struct TimedBackend {
    backend: DynBackend,
    /// The store's key prefix (`/registry`), left out when reading the resource.
    prefix: String,
}

impl TimedBackend {
    pub(crate) fn new(backend: DynBackend, prefix: &str) -> Self {
        Self {
            backend,
            prefix: prefix.to_string(),
        }
    }

    pub(crate) fn inner(&self) -> &DynBackend {
        &self.backend
    }

    async fn timed<R>(
        &self,
        operation: &str,
        key: &[u8],
        call: impl Future<Output = Result<R>>,
    ) -> Result<R> {
        let start = Instant::now();
        let result = call.await;
        observe(operation, &resource_of(&self.prefix, key), start.elapsed());
        result
    }

    pub(crate) async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        let operation = match &req.range {
            _ if req.count_only => "listWithCount",
            Some(KeyRange { end: None, .. }) => "get",
            _ => "list",
        };
        let key = req
            .range
            .as_ref()
            .map(|r| r.start.clone())
            .unwrap_or_default();
        self.timed(operation, &key, self.backend.range(req)).await
    }

    pub(crate) async fn put_if(
        &self,
        key: &str,
        value: Bytes,
        expected: i64,
        ttl: Option<Duration>,
    ) -> Result<TxnOutcome> {
        let operation = if expected == 0 { "create" } else { "update" };
        let call = self.backend.put_if(key, value, expected, ttl);
        self.timed(operation, key.as_bytes(), call).await
    }

    pub(crate) async fn delete_if(&self, key: &str, expected: i64) -> Result<TxnOutcome> {
        let call = self.backend.delete_if(key, expected);
        self.timed("delete", key.as_bytes(), call).await
    }

    // Not timed, as upstream's store does not time them either.

    pub(crate) async fn watch(
        &self,
        range: KeyRange,
        start_revision: i64,
        with_prev: bool,
    ) -> Result<BackendWatch> {
        self.backend.watch(range, start_revision, with_prev).await
    }

    pub(crate) async fn compact(&self, revision: i64) -> Result<()> {
        self.backend.compact(revision).await
    }

    pub(crate) async fn current_revision(&self) -> Result<i64> {
        self.backend.current_revision().await
    }
}

/// The resource a key (or range start) under `prefix` belongs to.
fn resource_of(prefix: &str, key: &[u8]) -> String {
    let key = String::from_utf8_lossy(key);
    let rest = key.strip_prefix(prefix).unwrap_or(&key);
    let mut segments = rest.split('/').filter(|s| !s.is_empty());
    match (segments.next(), segments.next()) {
        (Some(group), Some(plural)) if group.contains('.') => format!("{plural}.{group}"),
        (Some(first), _) => first.to_string(),
        (None, _) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_is_the_resource_of_the_key() {
        assert_eq!(resource_of("/registry", b"/registry/pods/ns/p"), "pods");
        assert_eq!(
            resource_of("/registry", b"/registry/namespaces/"),
            "namespaces"
        );
        assert_eq!(
            resource_of("/registry", b"/registry/stable.example.com/crontabs/ns/c"),
            "crontabs.stable.example.com"
        );
        assert_eq!(
            resource_of(
                "/registry",
                b"/registry/apiextensions.k8s.io/customresourcedefinitions/x"
            ),
            "customresourcedefinitions.apiextensions.k8s.io"
        );
        assert_eq!(resource_of("/other", b"/registry/pods/"), "registry");
        assert_eq!(resource_of("/registry", b""), "");
    }

    fn count(operation: &str, resource: &str) -> u64 {
        REQUEST_DURATION
            .with_label_values(&[operation, resource])
            .get_sample_count()
    }

    #[tokio::test]
    async fn a_store_times_each_backend_call_by_operation() {
        use crate::{Interface, KvStore, ListOptions, Preconditions, ReadRevision};

        let dir = tempfile::tempdir().expect("temp dir");
        let backend = crate::embedded::EmbeddedBackend::open(dir.path()).expect("embedded");
        let store = KvStore::new(std::sync::Arc::new(backend), "/registry");
        let r = "metricstests";
        let value = Bytes::from_static(br#"{"metadata":{"uid":"u"}}"#);
        store
            .create("/metricstests/ns/a", value)
            .await
            .expect("create");
        assert_eq!(count("create", r), 1);
        store
            .get("/metricstests/ns/a", ReadRevision::Latest)
            .await
            .expect("get");
        assert_eq!(count("get", r), 1);
        let list = ListOptions {
            recursive: true,
            ..Default::default()
        };
        store.get_list("/metricstests/", list).await.expect("list");
        assert_eq!(count("list", r), 1);
        store.count("/metricstests/").await.expect("count");
        assert_eq!(count("listWithCount", r), 1);
        store
            .delete("/metricstests/ns/a", &Preconditions::default(), None)
            .await
            .expect("delete");
        assert_eq!(count("delete", r), 1);
        // A failed call is timed as well.
        let missing = store
            .delete("/metricstests/ns/a", &Preconditions::default(), None)
            .await;
        assert!(missing.is_err());
        assert!(count("get", r) >= 2);
    }
}
