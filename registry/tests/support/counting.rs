//! A backend that counts the single-key reads reaching it: which paths read the store and
//! which the watch cache serves. Everything else passes through unchanged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use storage::backend::{
    Backend, BackendWatch, DynBackend, KeyRange, RangeRequest, RangeResponse, TxnOutcome,
};
use storage::CacherConfig;
use test_support::{FromBackend, TestBackend};

use crate::support::Harness;

/// A [`Harness`] whose backend counts its single-key reads.
pub struct Counted {
    pub h: Harness,
    pub backend: Arc<CountingBackend>,
}

impl FromBackend for Counted {
    async fn from_backend(test_backend: TestBackend) -> Self {
        let inner = storage::backend::open(&test_backend.etcd_servers(), test_backend.data_dir())
            .await
            .expect("open the test backend");
        let backend = CountingBackend::new(inner);
        let h = Harness::over(test_backend, backend.clone(), CacherConfig::default()).await;
        Self { h, backend }
    }
}

pub struct CountingBackend {
    inner: DynBackend,
    reads: Mutex<HashMap<Vec<u8>, usize>>,
}

impl CountingBackend {
    pub fn new(inner: DynBackend) -> Arc<Self> {
        Arc::new(Self {
            inner,
            reads: Mutex::new(HashMap::new()),
        })
    }

    /// Reads of exactly `key` (the whole storage key, `/registry/...`) so far.
    pub fn reads_of(&self, key: &str) -> usize {
        let reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
        reads.get(key.as_bytes()).copied().unwrap_or(0)
    }
}

#[async_trait]
impl Backend for CountingBackend {
    async fn range(&self, req: RangeRequest) -> storage::Result<RangeResponse> {
        if let Some(KeyRange { start, end: None }) = &req.range {
            let mut reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
            *reads.entry(start.clone()).or_default() += 1;
        }
        self.inner.range(req).await
    }

    async fn put_if(
        &self,
        key: &str,
        value: Bytes,
        expected: i64,
        ttl: Option<Duration>,
    ) -> storage::Result<TxnOutcome> {
        self.inner.put_if(key, value, expected, ttl).await
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
        self.inner.watch(range, start_revision, with_prev).await
    }

    async fn compact(&self, revision: i64) -> storage::Result<()> {
        self.inner.compact(revision).await
    }

    async fn current_revision(&self) -> storage::Result<i64> {
        self.inner.current_revision().await
    }

    fn current_revision_is_local(&self) -> bool {
        self.inner.current_revision_is_local()
    }

    async fn check_health(&self) -> storage::Result<()> {
        self.inner.check_health().await
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn progress_is_ordered(&self) -> bool {
        self.inner.progress_is_ordered()
    }
}
