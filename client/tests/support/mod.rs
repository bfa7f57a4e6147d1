//! A registry over a real backend (the embedded store in a temp dir, or a real etcd) whose
//! configmap watches can be cut, to make an informer miss changes the way a partition would,
//! whose pod watches can be slowed, to make an informer lag behind the store, and which counts
//! the pods ever created.

#![allow(dead_code)]

#[path = "../../../registry/tests/support/mod.rs"]
mod registry_support;

use std::ops::{Deref, DerefMut};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use client::informer::{DeltaObject, Notification, Subscription};
use futures::StreamExt;
use registry::options::{DeleteOptions, ListOptions, WriteOptions};
use registry::{Store, Subresource};
use serde_json::{json, Value};
use storage::backend::{
    Backend, BackendWatch, DynBackend, KeyRange, RangeRequest, RangeResponse, TxnOutcome,
};
use storage::{CacherConfig, StorageError};
use test_support::{FromBackend, TestBackend};
use tokio::sync::watch;

/// Watches under this prefix (the configmaps' watch cache) can be cut.
const CUT_PREFIX: &[u8] = b"/registry/configmaps/";
/// Watches under this prefix (the pods' watch cache) can be slowed, and creations counted.
const PODS_PREFIX: &str = "/registry/pods/";

/// Passes everything through to the real backend, except that while cut, watches under
/// [`CUT_PREFIX`] fail and open ones break, as if the network between them went away.
pub struct Partition {
    inner: DynBackend,
    cut: watch::Sender<bool>,
    /// Each pod watch message waits this long before it is passed on.
    pod_watch_delay: watch::Sender<Duration>,
    pod_creations: AtomicUsize,
}

fn partitioned() -> StorageError {
    StorageError::Unavailable("partitioned by the test".into())
}

#[async_trait]
impl Backend for Partition {
    async fn range(&self, req: RangeRequest) -> storage::Result<RangeResponse> {
        self.inner.range(req).await
    }

    async fn put_if(
        &self,
        key: &str,
        value: Bytes,
        expected: i64,
        ttl: Option<std::time::Duration>,
    ) -> storage::Result<TxnOutcome> {
        let outcome = self.inner.put_if(key, value, expected, ttl).await?;
        if expected == 0
            && key.starts_with(PODS_PREFIX)
            && matches!(outcome, TxnOutcome::Applied { .. })
        {
            self.pod_creations.fetch_add(1, Ordering::SeqCst);
        }
        Ok(outcome)
    }

    async fn delete_if(&self, key: &str, expected: i64) -> storage::Result<TxnOutcome> {
        self.inner.delete_if(key, expected).await
    }

    async fn watch(
        &self,
        range: KeyRange,
        start_revision: i64,
        with_prev: bool,
    ) -> storage::Result<BackendWatch> {
        if range.start.starts_with(PODS_PREFIX.as_bytes()) {
            return self.slowed(range, start_revision, with_prev).await;
        }
        if !range.start.starts_with(CUT_PREFIX) {
            return self.inner.watch(range, start_revision, with_prev).await;
        }
        if *self.cut.borrow() {
            return Err(partitioned());
        }
        let watch = self.inner.watch(range, start_revision, with_prev).await?;
        let mut cut = self.cut.subscribe();
        let mut upstream = watch.messages;
        let messages = async_stream::stream! {
            loop {
                // The cut first: once it is set, no further change may slip through.
                let next = tokio::select! {
                    biased;
                    _ = cut.wait_for(|c| *c) => None,
                    msg = upstream.next() => Some(msg),
                };
                match next {
                    Some(Some(msg)) => yield msg,
                    Some(None) => break,
                    None => {
                        yield Err(partitioned());
                        break;
                    }
                }
            }
        };
        Ok(BackendWatch {
            messages: messages.boxed(),
            progress: watch.progress,
        })
    }

    async fn compact(&self, revision: i64) -> storage::Result<()> {
        self.inner.compact(revision).await
    }

    async fn current_revision(&self) -> storage::Result<i64> {
        self.inner.current_revision().await
    }

    async fn check_health(&self) -> storage::Result<()> {
        self.inner.check_health().await
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }
}

impl Partition {
    async fn slowed(
        &self,
        range: KeyRange,
        start_revision: i64,
        with_prev: bool,
    ) -> storage::Result<BackendWatch> {
        let watch = self.inner.watch(range, start_revision, with_prev).await?;
        let delay = self.pod_watch_delay.subscribe();
        let mut upstream = watch.messages;
        let messages = async_stream::stream! {
            while let Some(msg) = upstream.next().await {
                let wait = *delay.borrow();
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
                yield msg;
            }
        };
        Ok(BackendWatch {
            messages: messages.boxed(),
            progress: watch.progress,
        })
    }
}

/// The registry tests' harness over a [`Partition`] of the test backend.
pub struct Harness {
    inner: registry_support::Harness,
    pub partition: Arc<Partition>,
}

impl FromBackend for Harness {
    async fn from_backend(test_backend: TestBackend) -> Self {
        let partition = Arc::new(Partition {
            inner: storage::backend::open(&test_backend.etcd_servers(), test_backend.data_dir())
                .await
                .expect("open the test backend"),
            cut: watch::Sender::new(false),
            pod_watch_delay: watch::Sender::new(Duration::ZERO),
            pod_creations: AtomicUsize::new(0),
        });
        let cache = CacherConfig {
            progress_interval: Duration::from_millis(100),
            ..CacherConfig::default()
        };
        let inner = registry_support::Harness::over(test_backend, partition.clone(), cache).await;
        Self { inner, partition }
    }
}

impl Deref for Harness {
    type Target = registry_support::Harness;

    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl DerefMut for Harness {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.inner
    }
}

impl Harness {
    pub fn configmaps(&self) -> Arc<Store> {
        self.store("", "configmaps")
    }

    /// Breaks the configmaps' watches and keeps new ones from starting.
    pub fn cut_watches(&self) {
        self.partition.cut.send_replace(true);
    }

    pub fn heal(&self) {
        self.partition.cut.send_replace(false);
    }

    /// Delays every pod watch message by `delay` from now on (zero: no delay).
    pub fn slow_pod_watches(&self, delay: Duration) {
        self.partition.pod_watch_delay.send_replace(delay);
    }

    /// Pods created in storage so far.
    pub fn pod_creations(&self) -> usize {
        self.partition.pod_creations.load(Ordering::SeqCst)
    }

    /// Compacts all history up to now; returns the revision.
    pub async fn compact_all(&self) -> i64 {
        let revision = self
            .partition
            .current_revision()
            .await
            .expect("current revision");
        self.partition.compact(revision).await.expect("compact");
        revision
    }
}

pub async fn create_configmap(store: &Store, ns: &str, name: &str, value: &str) -> Value {
    store
        .create(
            Some(ns),
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns},
                "data": {"value": value},
            }),
            &WriteOptions::default(),
        )
        .await
        .expect("create configmap")
}

pub async fn update_configmap(store: &Store, ns: &str, name: &str, value: &str) -> Value {
    let mut current = store
        .get(Some(ns), name, &ListOptions::default())
        .await
        .expect("get configmap");
    current["data"]["value"] = json!(value);
    store
        .update(
            Some(ns),
            name,
            current,
            Subresource::Main,
            &WriteOptions::default(),
        )
        .await
        .expect("update configmap")
        .0
}

pub async fn delete_configmap(store: &Store, ns: &str, name: &str) {
    store
        .delete(Some(ns), name, DeleteOptions::default())
        .await
        .expect("delete configmap");
}

/// Object key → resourceVersion of everything a list of the store returns.
pub async fn store_versions(store: &Store) -> Vec<(String, String)> {
    let list = store
        .list(None, &ListOptions::default())
        .await
        .expect("list");
    let mut out: Vec<(String, String)> = list["items"]
        .as_array()
        .map(|items| items.iter().filter_map(versioned).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// key and resourceVersion of an object.
pub fn versioned(obj: &Value) -> Option<(String, String)> {
    let key = client::informer::object_key(obj).ok()?;
    let rv = obj["metadata"]["resourceVersion"].as_str()?.to_string();
    Some((key, rv))
}

/// A notification in short: `add app/a`, `update app/a`, `delete app/a`, `tombstone app/a`.
pub fn describe(n: &Notification) -> String {
    let key = |o: &Value| client::informer::object_key(o).unwrap_or_default();
    match n {
        Notification::Add(o) => format!("add {}", key(o)),
        Notification::Update { new, .. } => format!("update {}", key(new)),
        Notification::Delete(DeltaObject::Object(o)) => format!("delete {}", key(o)),
        Notification::Delete(DeltaObject::DeletedFinalStateUnknown(t)) => {
            format!("tombstone {}", t.key)
        }
    }
}

/// The next `n` notifications, failing the test after 10 seconds.
pub async fn next(rx: &mut Subscription, n: usize) -> Vec<Notification> {
    let mut out = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(notification)) => out.push(notification),
            Ok(None) => panic!("channel closed after {:?}", summary(&out)),
            Err(_) => panic!("timed out after {:?}", summary(&out)),
        }
    }
    out
}

pub fn summary(notifications: &[Notification]) -> Vec<String> {
    notifications.iter().map(describe).collect()
}

/// The notifications about one key, in order.
pub fn about(notifications: &[Notification], key: &str) -> Vec<String> {
    summary(notifications)
        .into_iter()
        .filter(|s| s.split(' ').nth(1) == Some(key))
        .collect()
}
