//! The embedded backend: durable MVCC storage in one redb file under `--data-dir`, with no
//! external process. Writes go through a group-commit thread (`writer`); reads are redb
//! snapshots taken on the caller's thread; watches fan out in memory (`watch`).
//!
//! Why redb: a maintained, pure-Rust, crash-safe B-tree with checksummed commits and fsync on
//! every durable commit; we add only the MVCC layout (`record`) and the batching.

mod expiry;
mod handle;
mod read;
mod record;
mod watch;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use redb::{ReadableDatabase, ReadableTable};
use tokio::sync::oneshot;
use tracing::info;

use self::handle::{open_database, DbHandle};
use self::record::{storage_err, META, META_COMPACTED, META_REVISION};
use self::watch::Hub;
use self::writer::WriteOp;
use crate::backend::{Backend, BackendWatch, KeyRange, RangeRequest, RangeResponse, TxnOutcome};
use crate::{Result, StorageError};

const FILE_NAME: &str = "store.redb";

/// State the writer thread shares with readers and watches.
pub(crate) struct Shared {
    revision: AtomicU64,
    hub: Arc<Hub>,
}

pub struct EmbeddedBackend {
    store: Arc<DbHandle>,
    writes: mpsc::Sender<WriteOp>,
    writer: std::thread::JoinHandle<()>,
    /// Dropped with the backend, which stops the expiry sweeper.
    _sweeper_stop: mpsc::Sender<()>,
    shared: Arc<Shared>,
    path: PathBuf,
}

impl EmbeddedBackend {
    /// Opens (or creates) the store in `dir`. After a crash redb verifies its checksums and
    /// falls back to the last durable commit, so every acknowledged write is there.
    pub fn open(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| StorageError::Internal(format!("creating {}: {e}", dir.display())))?;
        let path = dir.join(FILE_NAME);
        let db = open_database(&path)?;
        // Create the tables so readers never meet a missing one, and delete what expired
        // while the store was closed before anyone can read it.
        let txn = db.begin_write().map_err(storage_err)?;
        let (revision, compacted, expired) = {
            let mut tables = writer::Tables::open(&txn)?;
            let mut meta = txn.open_table(META).map_err(storage_err)?;
            let get = |meta: &redb::Table<&str, u64>, name| -> Result<Option<u64>> {
                Ok(meta.get(name).map_err(storage_err)?.map(|g| g.value()))
            };
            let mut next = get(&meta, META_REVISION)?.unwrap_or(1) + 1;
            let expired = writer::apply_expire(&mut tables, &mut next, &mut Vec::new())?;
            if expired > 0 {
                meta.insert(META_REVISION, next - 1).map_err(storage_err)?;
            }
            (next - 1, get(&meta, META_COMPACTED)?.unwrap_or(0), expired)
        };
        txn.commit().map_err(storage_err)?;
        info!(path = %path.display(), revision, compacted, expired, "opened embedded store");

        let store = Arc::new(DbHandle::new(path.clone(), db));
        let shared = Arc::new(Shared {
            revision: AtomicU64::new(revision),
            hub: Arc::new(Hub::new(revision)),
        });
        let (writes, rx) = mpsc::channel();
        let (writer_store, writer_shared) = (store.clone(), shared.clone());
        let writer = std::thread::Builder::new()
            .name("embedded-writer".into())
            .spawn(move || writer::run(writer_store, rx, writer_shared))
            .map_err(|e| StorageError::Internal(format!("starting writer thread: {e}")))?;
        let (sweeper_stop, stop) = mpsc::channel();
        let (sweeper_store, sweeper_writes) = (store.clone(), writes.clone());
        std::thread::Builder::new()
            .name("embedded-expiry".into())
            .spawn(move || expiry::run_sweeper(sweeper_store, sweeper_writes, stop))
            .map_err(|e| StorageError::Internal(format!("starting expiry thread: {e}")))?;
        Ok(Self {
            store,
            writer,
            writes,
            _sweeper_stop: sweeper_stop,
            shared,
            path,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn submit<T>(&self, op: impl FnOnce(oneshot::Sender<Result<T>>) -> WriteOp) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.writes
            .send(op(tx))
            .map_err(|_| StorageError::Unavailable("embedded writer stopped".into()))?;
        rx.await
            .map_err(|_| StorageError::Internal("embedded writer dropped a write".into()))?
    }
}

#[async_trait]
impl Backend for EmbeddedBackend {
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        // One key comes from redb's cache in microseconds; scans (which also count what lies
        // past a page) go to the blocking pool so they never stall the runtime's workers.
        if req.range.as_ref().is_some_and(|r| r.end.is_none()) {
            return read::range(&*self.store.get()?, req);
        }
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || read::range(&*store.get()?, req))
            .await
            .map_err(|e| StorageError::Internal(format!("embedded read task: {e}")))?
    }

    async fn put_if(
        &self,
        key: &str,
        value: Bytes,
        expected: i64,
        ttl: Option<Duration>,
    ) -> Result<TxnOutcome> {
        let key = key.to_string();
        self.submit(|reply| WriteOp::Put {
            key,
            value,
            expected,
            ttl,
            reply,
        })
        .await
    }

    async fn delete_if(&self, key: &str, expected: i64) -> Result<TxnOutcome> {
        let key = key.to_string();
        self.submit(|reply| WriteOp::Delete {
            key,
            expected,
            reply,
        })
        .await
    }

    /// Previous values cost nothing here (the write hands them over): always given.
    async fn watch(&self, range: KeyRange, start_revision: i64, _: bool) -> Result<BackendWatch> {
        watch::watch(
            self.store.clone(),
            self.shared.hub.clone(),
            range,
            u64::try_from(start_revision).unwrap_or(0),
        )
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        self.submit(|reply| WriteOp::Compact { revision, reply })
            .await
    }

    async fn current_revision(&self) -> Result<i64> {
        Ok(self.shared.revision.load(Ordering::Acquire) as i64)
    }

    async fn check_health(&self) -> Result<()> {
        // Writes need the writer thread; reads need a snapshot.
        if self.writer.is_finished() {
            return Err(StorageError::Unavailable("embedded writer stopped".into()));
        }
        self.store.get()?.begin_read().map_err(storage_err)?;
        Ok(())
    }

    fn name(&self) -> &'static str {
        "embedded"
    }

    /// A watch reports progress at the revision it has delivered up to, in the same stream.
    fn progress_is_ordered(&self) -> bool {
        true
    }

    /// The writer stores the revision before it acknowledges the write.
    fn current_revision_is_local(&self) -> bool {
        true
    }
}
