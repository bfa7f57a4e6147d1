//! Keys written with a ttl. The deadline is recorded with the write, in the same transaction,
//! so it survives a restart; a sweeper thread asks the writer to delete keys whose deadline
//! has passed, as ordinary deletes (a revision each, a DELETED event for watchers), and the
//! store sweeps once when it opens so nothing outlives its deadline across a restart.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redb::{ReadableDatabase, ReadableTable, Table};
use tracing::debug;

use super::handle::DbHandle;
use super::record::{storage_err, EXPIRY};
use super::writer::WriteOp;
use crate::Result;

/// How often the sweeper looks for expired keys: deadlines are honoured to within this.
const SWEEP_INTERVAL: Duration = Duration::from_millis(250);

/// Now, in Unix milliseconds: deadlines must mean the same after a restart.
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub fn deadline_after(ttl: Duration) -> u64 {
    now_millis().saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
}

/// The `expiry` table's key: the deadline big-endian, so keys sort by time, then the key.
pub fn schedule_key(deadline: u64, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + key.len());
    out.extend_from_slice(&deadline.to_be_bytes());
    out.extend_from_slice(key);
    out
}

/// The deadline and key of an `expiry` entry; None if it is not one.
fn split_schedule(raw: &[u8]) -> Option<(u64, &[u8])> {
    let (deadline, key) = raw.split_first_chunk::<8>()?;
    Some((u64::from_be_bytes(*deadline), key))
}

/// The keys whose deadline is at or before `now`.
pub fn due(expiry: &Table<'_, &'static [u8], ()>, now: u64) -> Result<Vec<Vec<u8>>> {
    let end = now.saturating_add(1).to_be_bytes();
    let mut keys = Vec::new();
    for item in expiry.range(..end.as_slice()).map_err(storage_err)? {
        let (raw, _) = item.map_err(storage_err)?;
        if let Some((_, key)) = split_schedule(raw.value()) {
            keys.push(key.to_vec());
        }
    }
    Ok(keys)
}

/// Whether some key is due, from a read snapshot (cheap enough to ask every tick).
fn any_due(store: &DbHandle, now: u64) -> Result<bool> {
    let db = store.get()?;
    let txn = db.begin_read().map_err(storage_err)?;
    let expiry = txn.open_table(EXPIRY).map_err(storage_err)?;
    let first = expiry.first().map_err(storage_err)?;
    Ok(first.is_some_and(|(raw, _)| {
        split_schedule(raw.value()).is_none_or(|(deadline, _)| deadline <= now)
    }))
}

/// Runs until `stop` is dropped (the backend closing), then lets go of its sender so the
/// writer can stop too.
pub fn run_sweeper(store: Arc<DbHandle>, writes: Sender<WriteOp>, stop: Receiver<()>) {
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(SWEEP_INTERVAL) {
        match any_due(&store, now_millis()) {
            Ok(false) => {}
            Ok(true) => {
                if writes.send(WriteOp::Expire).is_err() {
                    break;
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the expiry schedule failed"),
        }
    }
    debug!("embedded expiry sweeper stopped");
}
