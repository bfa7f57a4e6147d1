//! The open redb file, replaceable. After a failed write to the file (a full disk, above all)
//! redb refuses every later operation on that `Database` until it is closed and opened again;
//! the writer does that here, and readers, watches and the sweeper take the current one for
//! each operation, so they carry on across the swap.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use redb::Database;

use super::record::storage_err;
use crate::{Result, StorageError};

/// redb's page cache (reads and the write buffer together). Its default, 1 GiB, held a
/// second copy of the whole store in memory beside the watch cache, which serves reads
/// (reads at the latest revision too, once it has caught up: see `current_revision_is_local`);
/// the pages writes and deletes walk (the trees' upper levels) fit in far less, and a miss is
/// a read from the kernel's page cache. In the store benchmark (64 clients) 2 MiB deletes
/// about 20% slower than 1 GiB and 1 MiB 30% slower; each MiB is a MiB of every server's
/// resident memory.
const CACHE_SIZE: usize = 2 << 20;

/// How long a reopen waits for in-flight reads to let go of the failed file, whose lock would
/// otherwise refuse the new open.
const RELEASE_WAIT: Duration = Duration::from_secs(5);

pub struct DbHandle {
    path: PathBuf,
    current: RwLock<Option<Arc<Database>>>,
}

pub fn open_database(path: &Path) -> Result<Database> {
    Database::builder()
        .set_cache_size(CACHE_SIZE)
        .create(path)
        .map_err(|e| StorageError::Internal(format!("opening {}: {e}", path.display())))
}

impl DbHandle {
    pub fn new(path: PathBuf, db: Database) -> Self {
        Self {
            path,
            current: RwLock::new(Some(Arc::new(db))),
        }
    }

    /// The open database; held only for one operation, so a reopen is never kept waiting.
    pub fn get(&self) -> Result<Arc<Database>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| {
                StorageError::Unavailable("embedded store is reopening after an I/O error".into())
            })
    }

    /// Whether a database is open (false after a reopen failed).
    pub fn is_open(&self) -> bool {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Closes the current database and opens the file again, which makes redb recover it to
    /// its last durable commit. Only the writer thread calls this. On failure the store stays
    /// closed and the next call tries again.
    pub fn reopen(&self) -> Result<Arc<Database>> {
        let mut slot = self.current.write().unwrap_or_else(|p| p.into_inner());
        if let Some(mut old) = slot.take() {
            // Readers that took it before the lock finish within milliseconds.
            let deadline = Instant::now() + RELEASE_WAIT;
            loop {
                match Arc::try_unwrap(old) {
                    Ok(db) => {
                        drop(db);
                        break;
                    }
                    Err(still_shared) if Instant::now() < deadline => {
                        old = still_shared;
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(still_shared) => {
                        *slot = Some(still_shared);
                        return Err(storage_err(redb::Error::PreviousIo));
                    }
                }
            }
        }
        let db = Arc::new(open_database(&self.path)?);
        *slot = Some(db.clone());
        Ok(db)
    }
}
