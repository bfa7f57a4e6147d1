//! A backend that records what reaches it and passes everything through: single-key reads
//! by key (which paths read the store and which the watch cache serves), reads from a
//! minimum mod revision (the watch cache's checks of progress reports) and whether each
//! watch asked for previous values. Shared by the storage, registry and kubelet tests.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use storage::backend::{
    Backend, BackendWatch, DynBackend, KeyRange, RangeRequest, RangeResponse, TxnOutcome,
};

#[derive(Default)]
struct Seen {
    reads: HashMap<Vec<u8>, usize>,
    checks: usize,
    watches_with_prev: Vec<bool>,
}

pub struct RecordingBackend {
    inner: DynBackend,
    seen: Mutex<Seen>,
}

impl RecordingBackend {
    pub fn new(inner: DynBackend) -> Arc<Self> {
        Arc::new(Self {
            inner,
            seen: Mutex::default(),
        })
    }

    fn seen<T>(&self, f: impl FnOnce(&mut Seen) -> T) -> T {
        f(&mut self.seen.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Reads of exactly `key` (the whole storage key, `/registry/...`) so far.
    pub fn reads_of(&self, key: &str) -> usize {
        self.seen(|s| s.reads.get(key.as_bytes()).copied().unwrap_or(0))
    }

    /// Reads from a minimum mod revision so far.
    pub fn checks(&self) -> usize {
        self.seen(|s| s.checks)
    }

    /// Whether each watch so far asked for previous values.
    pub fn watches_with_prev(&self) -> Vec<bool> {
        self.seen(|s| s.watches_with_prev.clone())
    }
}

#[async_trait]
impl Backend for RecordingBackend {
    async fn range(&self, req: RangeRequest) -> storage::Result<RangeResponse> {
        self.seen(|s| {
            if let Some(KeyRange { start, end: None }) = &req.range {
                *s.reads.entry(start.clone()).or_default() += 1;
            }
            if req.min_mod_revision > 0 {
                s.checks += 1;
            }
        });
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
        self.seen(|s| s.watches_with_prev.push(with_prev));
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
