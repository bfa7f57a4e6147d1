//! The MVCC key-value primitives both backends provide; everything with upstream semantics is
//! built once on top of them (`store`, `cacher`).

pub mod etcd;
mod etcd_leases;
pub mod etcd_members;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;

use crate::{KeyValue, Result};

/// A key range over the raw key bytes: one key, or `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    pub start: Vec<u8>,
    pub end: Option<Vec<u8>>,
}

impl KeyRange {
    pub fn key(key: &str) -> Self {
        Self {
            start: key.as_bytes().to_vec(),
            end: None,
        }
    }

    /// Every key that starts with `prefix`.
    pub fn prefix(prefix: &str) -> Self {
        Self {
            start: prefix.as_bytes().to_vec(),
            end: Some(prefix_end(prefix.as_bytes())),
        }
    }

    /// The keys of `self` strictly after `key` (the next page of a list).
    pub fn after(&self, key: &str) -> Self {
        let mut start = key.as_bytes().to_vec();
        start.push(0);
        Self {
            start,
            end: self.end.clone(),
        }
    }

    pub fn contains(&self, key: impl AsRef<[u8]>) -> bool {
        let key = key.as_ref();
        match &self.end {
            None => key == self.start.as_slice(),
            Some(end) => key >= self.start.as_slice() && key < end.as_slice(),
        }
    }
}

/// The smallest byte string greater than every string with this prefix (etcd's prefix end).
/// Empty when no such bound exists (all 0xff), which etcd reads as "no upper bound" too.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[derive(Clone, Debug, Default)]
pub struct RangeRequest {
    pub range: Option<KeyRange>,
    /// 0: the latest revision.
    pub revision: i64,
    /// 0: no limit.
    pub limit: usize,
    /// Only count the keys; `kvs` stays empty.
    pub count_only: bool,
    /// Return only keys modified at or after this revision (`count` still counts all).
    pub min_mod_revision: i64,
    /// Leave values out.
    pub keys_only: bool,
    /// With a limit: stop at it; `count` then covers the page only and `more` says whether
    /// anything follows (a paged reader needs no total, and counting is a walk of the range).
    pub skip_count: bool,
}

#[derive(Clone, Debug, Default)]
pub struct RangeResponse {
    pub kvs: Vec<KeyValue>,
    /// More keys exist in the range past the limit.
    pub more: bool,
    /// Keys in the whole range at that revision.
    pub count: i64,
    /// The revision the range was read at.
    pub revision: i64,
}

/// The result of a compare-and-swap.
#[derive(Clone, Debug)]
pub enum TxnOutcome {
    /// Written at `revision`; `prev` is the value it replaced (or deleted).
    Applied {
        revision: i64,
        prev: Option<KeyValue>,
        kv: Option<KeyValue>,
    },
    /// The comparison failed; `current` is what is stored now, read in the same transaction.
    Failed { current: Option<KeyValue> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawEventKind {
    Put,
    Delete,
}

/// A change as the backend reports it. For a delete, `kv.mod_revision` is the deleting
/// revision and `kv.value` is empty; `prev` carries the deleted value.
#[derive(Clone, Debug)]
pub struct RawEvent {
    pub kind: RawEventKind,
    pub kv: KeyValue,
    pub prev: Option<KeyValue>,
}

impl RawEvent {
    pub fn is_create(&self) -> bool {
        self.kind == RawEventKind::Put && self.kv.create_revision == self.kv.mod_revision
    }
}

#[derive(Clone, Debug)]
pub enum WatchMessage {
    /// Changes of one or more revisions, in revision order.
    Events(Vec<RawEvent>),
    /// Every change up to this revision has been delivered.
    Progress(i64),
}

/// A backend watch: the messages, and a way to ask for a `Progress` message.
pub struct BackendWatch {
    pub messages: BoxStream<'static, Result<WatchMessage>>,
    pub progress: Arc<dyn Fn() + Send + Sync>,
}

#[async_trait]
pub trait Backend: Send + Sync + 'static {
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse>;

    /// Writes `value` if the key's mod revision is `expected` (0: the key must be absent). With
    /// a `ttl` the key is deleted once it passes with no later write; a write without one
    /// leaves the key with no expiry. An update's outcome need not carry the replaced pair
    /// (`prev`) nor the written one's create revision and version (0 then): the caller holds
    /// the pair it compared against, and reading it back costs etcd a range per write.
    async fn put_if(
        &self,
        key: &str,
        value: Bytes,
        expected: i64,
        ttl: Option<Duration>,
    ) -> Result<TxnOutcome>;

    /// Deletes the key if its mod revision is `expected`.
    async fn delete_if(&self, key: &str, expected: i64) -> Result<TxnOutcome>;

    /// Changes in `range` from `start_revision` on (inclusive; 0: from now); with `with_prev`
    /// each carries the value it replaced. etcd reads that per event (a range at the previous
    /// revision, which on 3.4 copies the writes not yet committed), so a watcher holding the
    /// state itself, the watch cache, asks none. A compacted start revision fails with TooOld.
    async fn watch(
        &self,
        range: KeyRange,
        start_revision: i64,
        with_prev: bool,
    ) -> Result<BackendWatch>;

    /// Discards history before `revision`; reads and watches below it fail with TooOld.
    async fn compact(&self, revision: i64) -> Result<()>;

    async fn current_revision(&self) -> Result<i64>;

    /// Whether `current_revision` is known in-process, covering every acknowledged write, so
    /// that gets and whole lists at the latest revision may be served by the watch cache once
    /// it has caught up with that revision (upstream's consistent reads from cache, here
    /// without a round trip to learn the revision).
    fn current_revision_is_local(&self) -> bool {
        false
    }

    /// Answers quickly whether the backend is serving (`/readyz`).
    async fn check_health(&self) -> Result<()>;

    fn name(&self) -> &'static str;

    /// Whether a watch's progress report at revision R means every change at or before R has
    /// already been delivered on it. etcd before 3.4.26 / 3.5.8 may report progress while
    /// changes are still queued for the watcher, so by default a report is verified first.
    fn progress_is_ordered(&self) -> bool {
        false
    }
}

pub type DynBackend = Arc<dyn Backend>;

/// Opens the backend the server's flags name (`--etcd-servers`, `--data-dir`): etcd when any
/// endpoint is given, else the embedded store in `data_dir`, opened on a blocking thread (it
/// reads its file and may have a log to replay).
pub async fn open(etcd_servers: &[String], data_dir: &Path) -> Result<DynBackend> {
    if !etcd_servers.is_empty() {
        let config = etcd::EtcdConfig::new(etcd_servers.to_vec());
        return Ok(Arc::new(etcd::EtcdBackend::connect(config).await?));
    }
    let dir = data_dir.to_path_buf();
    let backend = tokio::task::spawn_blocking(move || crate::embedded::EmbeddedBackend::open(&dir))
        .await
        .map_err(|e| crate::StorageError::Internal(e.to_string()))??;
    Ok(Arc::new(backend))
}
