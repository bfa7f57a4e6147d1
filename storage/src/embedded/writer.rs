//! The single writer thread. Every write waits in one queue; the thread takes all that are
//! waiting, applies them in one redb transaction (each its own revision) and commits once, so
//! concurrent writers share one fsync (group commit). Nothing is acknowledged before its
//! commit is durable.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use redb::{Database, ReadableDatabase, ReadableTable, Table};
use tokio::sync::oneshot;
use tracing::{debug, error, info};

use super::expiry::{deadline_after, due, now_millis, schedule_key};
use super::handle::DbHandle;
use super::record::{
    raw_event, read_record, storage_err, KeyEntry, Record, DEADLINES, EVENTS, EXPIRY, KEYS, META,
    META_COMPACTED, META_REVISION,
};
use super::Shared;
use crate::backend::{RawEvent, RawEventKind, TxnOutcome};
use crate::{KeyValue, Result, StorageError};

/// Most writes one commit takes; bounds the latency a large burst adds to its first writer.
const MAX_BATCH: usize = 4096;
/// Events one compaction transaction walks. Writes wait for at most one such transaction:
/// 10,000 took 3.3 s on a 2-core machine under load (81k revisions of 30k pods compacted in
/// 27 s, and a leader's lease renewal missed its deadline meanwhile).
const COMPACT_CHUNK: u64 = 1_000;

pub enum WriteOp {
    Put {
        key: String,
        value: Bytes,
        expected: i64,
        ttl: Option<Duration>,
        reply: oneshot::Sender<Result<TxnOutcome>>,
    },
    Delete {
        key: String,
        expected: i64,
        reply: oneshot::Sender<Result<TxnOutcome>>,
    },
    Compact {
        revision: i64,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Delete the keys whose ttl ran out (the sweeper's request; nobody waits on it).
    Expire,
}

pub(super) struct Tables<'t> {
    events: Table<'t, u64, &'static [u8]>,
    keys: Table<'t, &'static [u8], u64>,
    deadlines: Table<'t, &'static [u8], u64>,
    expiry: Table<'t, &'static [u8], ()>,
}

impl<'t> Tables<'t> {
    pub(super) fn open(txn: &'t redb::WriteTransaction) -> Result<Self> {
        Ok(Self {
            events: txn.open_table(EVENTS).map_err(storage_err)?,
            keys: txn.open_table(KEYS).map_err(storage_err)?,
            deadlines: txn.open_table(DEADLINES).map_err(storage_err)?,
            expiry: txn.open_table(EXPIRY).map_err(storage_err)?,
        })
    }

    /// Records when the key expires (None: never), replacing what an earlier write set.
    fn schedule(&mut self, key: &[u8], deadline: Option<u64>) -> Result<()> {
        let old = self.deadlines.remove(key).map_err(storage_err)?;
        if let Some(old) = old.map(|g| g.value()) {
            self.expiry
                .remove(schedule_key(old, key).as_slice())
                .map_err(storage_err)?;
        }
        if let Some(deadline) = deadline {
            self.deadlines.insert(key, deadline).map_err(storage_err)?;
            self.expiry
                .insert(schedule_key(deadline, key).as_slice(), ())
                .map_err(storage_err)?;
        }
        Ok(())
    }
}

/// How long after a failed write to the file the writer answers writes with that failure
/// without trying: each try on a still-full disk costs a reopen of the store.
const RETRY_AFTER: Duration = Duration::from_millis(500);

pub fn run(store: Arc<DbHandle>, rx: Receiver<WriteOp>, shared: Arc<Shared>) {
    let mut writer = Writer {
        store,
        shared,
        failed: None,
    };
    // Compactions under way, in the order asked. One chunk runs between batches of writes,
    // so a compaction of a long history delays a write by one chunk, not by all of it.
    let mut compactions: VecDeque<Compaction> = VecDeque::new();
    loop {
        let first = if !compactions.is_empty() {
            match rx.try_recv() {
                Ok(op) => Some(op),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => break,
            }
        } else if writer.store.is_open() {
            // While a failed reopen left the store closed, reads fail too: try again on a
            // timer rather than waiting for the next write.
            match rx.recv() {
                Ok(op) => Some(op),
                Err(_) => break,
            }
        } else {
            match rx.recv_timeout(RETRY_AFTER) {
                Ok(op) => Some(op),
                Err(RecvTimeoutError::Timeout) => {
                    let _ = writer.recover();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        };
        if let Some(first) = first {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(op) => batch.push(op),
                    Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => break,
                }
            }
            let mut writes = Vec::with_capacity(batch.len());
            for op in batch {
                match op {
                    WriteOp::Compact { revision, reply } => {
                        compactions.push_back(Compaction::new(revision, reply))
                    }
                    op => writes.push(op),
                }
            }
            if !writes.is_empty() {
                writer.commit_writes(writes);
            }
        }
        if let Some(compaction) = compactions.front_mut() {
            let step = writer.db().and_then(|db| {
                compaction
                    .step(&db)
                    .inspect_err(|e| writer.after_failure(db, e))
            });
            match step {
                Ok(false) => {}
                Ok(true) => {
                    if let Some(done) = compactions.pop_front() {
                        done.finish(Ok(()));
                    }
                }
                Err(e) => {
                    if let Some(failed) = compactions.pop_front() {
                        failed.finish(Err(e));
                    }
                }
            }
        }
    }
    debug!("embedded writer stopped");
}

/// A compaction under way: what it aims at, who waits for it, what it has done so far.
struct Compaction {
    target: i64,
    reply: oneshot::Sender<Result<()>>,
    started: Instant,
    removed: u64,
}

impl Compaction {
    fn new(target: i64, reply: oneshot::Sender<Result<()>>) -> Self {
        Self {
            target,
            reply,
            started: Instant::now(),
            removed: 0,
        }
    }

    /// Compacts one more chunk; true once the history before the target is gone.
    fn step(&mut self, db: &Database) -> Result<bool> {
        let (removed, done) = compact_chunk(db, self.target)?;
        self.removed += removed;
        Ok(done)
    }

    fn finish(self, result: Result<()>) {
        match &result {
            Ok(()) => info!(
                revision = self.target,
                removed = self.removed,
                elapsed_ms = self.started.elapsed().as_millis() as u64,
                "compacted embedded store"
            ),
            Err(e) => error!(revision = self.target, error = %e, "embedded compaction failed"),
        }
        let _ = self.reply.send(result);
    }
}

struct Writer {
    store: Arc<DbHandle>,
    shared: Arc<Shared>,
    /// When a write to the file last failed, and why; cleared by the next commit.
    failed: Option<(Instant, String)>,
}

impl Writer {
    /// The database to write to: the last failure again while it is fresh, else the open
    /// database, reopened if an earlier reopen failed.
    fn db(&mut self) -> Result<Arc<Database>> {
        if let Some((at, message)) = &self.failed {
            if at.elapsed() < RETRY_AFTER {
                return Err(StorageError::Internal(message.clone()));
            }
        }
        match self.store.get() {
            Ok(db) => Ok(db),
            Err(_) => self.recover(),
        }
    }

    /// After a failed transaction: redb refuses every write once a write to the file has
    /// failed, and then the store is closed and opened again, which takes it back to its last
    /// durable commit.
    fn after_failure(&mut self, db: Arc<Database>, error: &StorageError) {
        let latched = db.begin_write().is_err();
        drop(db);
        if !latched {
            return;
        }
        self.failed = Some((Instant::now(), message_of(error)));
        // A failure is logged there and retried by the writer's loop.
        let _ = self.recover();
    }

    fn recover(&mut self) -> Result<Arc<Database>> {
        let result = self.store.reopen().and_then(|db| {
            self.catch_up(&db)?;
            Ok(db)
        });
        match &result {
            Ok(_) => info!("reopened the embedded store after an I/O error"),
            Err(e) => {
                error!(error = %e, "reopening the embedded store failed; retrying");
                // Writers keep hearing the cause (a full disk), not the reopen's own error.
                let message = self
                    .failed
                    .take()
                    .map_or_else(|| message_of(e), |(_, message)| message);
                self.failed = Some((Instant::now(), message));
            }
        }
        result
    }

    /// Publishes what the reopened store holds beyond the last published revision: a commit
    /// that reported an error may still have become durable, and watchers must see it.
    fn catch_up(&self, db: &Database) -> Result<()> {
        let known = self.shared.revision.load(Ordering::Acquire);
        let txn = db.begin_read().map_err(storage_err)?;
        let stored = current_revision(&txn.open_table(META).map_err(storage_err)?)?;
        if stored <= known {
            return Ok(());
        }
        let events_table = txn.open_table(EVENTS).map_err(storage_err)?;
        let mut events = Vec::new();
        for revision in known + 1..=stored {
            if let Some(record) = read_record(&events_table, revision)? {
                events.push(raw_event(&events_table, revision, record)?);
            }
        }
        info!(
            from = known + 1,
            to = stored,
            "a commit reported as failed was durable"
        );
        self.shared.revision.store(stored, Ordering::Release);
        self.shared.hub.publish(events, stored);
        Ok(())
    }

    fn commit_writes(&mut self, ops: Vec<WriteOp>) {
        let count = ops.len();
        let mut ops = ops.into_iter();
        let mut events = Vec::new();
        let mut pending = Vec::with_capacity(count);
        let mut batch_revision = 0;
        let mut used = None;
        let result = (|| -> Result<u64> {
            let db = self.db()?;
            let txn = db.begin_write().map_err(storage_err);
            used = Some(db.clone());
            let txn = txn?;
            {
                let mut meta = txn.open_table(META).map_err(storage_err)?;
                let mut tables = Tables::open(&txn)?;
                let mut next = current_revision(&meta)? + 1;
                for op in ops.by_ref() {
                    let (outcome, reply) = match op {
                        WriteOp::Put {
                            key,
                            value,
                            expected,
                            ttl,
                            reply,
                        } => (
                            apply_put(&mut tables, &mut next, &key, value, expected, ttl),
                            reply,
                        ),
                        WriteOp::Expire => {
                            apply_expire(&mut tables, &mut next, &mut events)?;
                            continue;
                        }
                        WriteOp::Delete {
                            key,
                            expected,
                            reply,
                        } => (apply_delete(&mut tables, &mut next, &key, expected), reply),
                        WriteOp::Compact { .. } => continue,
                    };
                    // Kept before `?` so this write is answered too if it failed.
                    let outcome = match outcome {
                        Ok(outcome) => outcome,
                        Err(e) => {
                            pending.push((reply, None));
                            return Err(e);
                        }
                    };
                    if let Some(event) = outcome.1 {
                        events.push(event);
                    }
                    pending.push((reply, Some(outcome.0)));
                }
                batch_revision = next - 1;
                meta.insert(META_REVISION, batch_revision)
                    .map_err(storage_err)?;
            }
            txn.commit().map_err(storage_err)?;
            Ok(batch_revision)
        })();
        let result = match result {
            Ok(revision) => {
                self.failed = None;
                self.shared.revision.store(revision, Ordering::Release);
                if !events.is_empty() {
                    self.shared.hub.publish(events, revision);
                }
                Ok(())
            }
            Err(e) => {
                if let Some(db) = used {
                    self.after_failure(db, &e);
                }
                let landed = batch_revision > 0
                    && self.shared.revision.load(Ordering::Acquire) >= batch_revision;
                if landed {
                    // `catch_up` published it; the writers get their outcomes.
                    Ok(())
                } else {
                    error!(error = %e, writes = count, "embedded commit failed; nothing of the batch was written");
                    Err(message_of(&e))
                }
            }
        };
        let answer = |outcome: Option<TxnOutcome>| match (&result, outcome) {
            (Ok(()), Some(outcome)) => Ok(outcome),
            (Ok(()), None) => Err(StorageError::Internal(
                "embedded store: write was not applied".into(),
            )),
            (Err(message), _) => Err(StorageError::Internal(message.clone())),
        };
        for (reply, outcome) in pending {
            let _ = reply.send(answer(outcome));
        }
        // Writes the batch never reached: answered with the failure, never dropped.
        for op in ops {
            match op {
                WriteOp::Put { reply, .. } | WriteOp::Delete { reply, .. } => {
                    let _ = reply.send(answer(None));
                }
                WriteOp::Compact { .. } | WriteOp::Expire => {}
            }
        }
    }
}

/// The message of a storage error, to repeat to every writer the failure concerns.
fn message_of(e: &StorageError) -> String {
    match e {
        StorageError::Internal(message) | StorageError::Unavailable(message) => message.clone(),
        other => other.to_string(),
    }
}

fn current_revision(meta: &impl ReadableTable<&'static str, u64>) -> Result<u64> {
    // An empty store is at revision 1, as etcd's is.
    Ok(meta
        .get(META_REVISION)
        .map_err(storage_err)?
        .map(|g| g.value())
        .unwrap_or(1))
}

/// The key's entry and its live value, if any.
fn current(tables: &Tables<'_>, key: &str) -> Result<(Option<KeyEntry>, Option<KeyValue>)> {
    let entry = tables
        .keys
        .get(key.as_bytes())
        .map_err(storage_err)?
        .map(|g| KeyEntry::decode(g.value()));
    let live = match entry {
        Some(e) if !e.deleted => {
            read_record(&tables.events, e.revision)?.map(|r| r.key_value(e.revision))
        }
        _ => None,
    };
    Ok((entry, live))
}

type Applied = (TxnOutcome, Option<RawEvent>);

fn apply_put(
    tables: &mut Tables<'_>,
    next: &mut u64,
    key: &str,
    value: Bytes,
    expected: i64,
    ttl: Option<Duration>,
) -> Result<Applied> {
    let (entry, live) = current(tables, key)?;
    if live.as_ref().map_or(0, |kv| kv.mod_revision) != expected {
        return Ok((TxnOutcome::Failed { current: live }, None));
    }
    let revision = *next;
    *next += 1;
    let record = Record {
        kind: RawEventKind::Put,
        create_revision: live
            .as_ref()
            .map_or(revision, |kv| kv.create_revision as u64),
        version: live.as_ref().map_or(1, |kv| kv.version as u64 + 1),
        prev_revision: entry.map_or(0, |e| e.revision),
        key: key.as_bytes().to_vec(),
        value,
    };
    tables
        .events
        .insert(revision, record.encode().as_slice())
        .map_err(storage_err)?;
    let entry = KeyEntry {
        revision,
        deleted: false,
    };
    tables
        .keys
        .insert(key.as_bytes(), entry.encode())
        .map_err(storage_err)?;
    tables.schedule(key.as_bytes(), ttl.map(deadline_after))?;
    let kv = record.key_value(revision);
    let event = RawEvent {
        kind: RawEventKind::Put,
        kv: kv.clone(),
        prev: live.clone(),
    };
    Ok((
        TxnOutcome::Applied {
            revision: revision as i64,
            prev: live,
            kv: Some(kv),
        },
        Some(event),
    ))
}

fn apply_delete(
    tables: &mut Tables<'_>,
    next: &mut u64,
    key: &str,
    expected: i64,
) -> Result<Applied> {
    let (entry, live) = current(tables, key)?;
    let (Some(entry), Some(prev)) = (entry, live.clone()) else {
        return Ok((TxnOutcome::Failed { current: None }, None));
    };
    if prev.mod_revision != expected {
        return Ok((TxnOutcome::Failed { current: live }, None));
    }
    let revision = *next;
    *next += 1;
    let record = Record {
        kind: RawEventKind::Delete,
        create_revision: 0,
        version: 0,
        prev_revision: entry.revision,
        key: key.as_bytes().to_vec(),
        value: Bytes::new(),
    };
    tables
        .events
        .insert(revision, record.encode().as_slice())
        .map_err(storage_err)?;
    let tombstone = KeyEntry {
        revision,
        deleted: true,
    };
    tables
        .keys
        .insert(key.as_bytes(), tombstone.encode())
        .map_err(storage_err)?;
    tables.schedule(key.as_bytes(), None)?;
    let event = RawEvent {
        kind: RawEventKind::Delete,
        kv: KeyValue {
            key: key.to_string(),
            value: Bytes::new(),
            create_revision: 0,
            mod_revision: revision as i64,
            version: 0,
        },
        prev: Some(prev.clone()),
    };
    Ok((
        TxnOutcome::Applied {
            revision: revision as i64,
            prev: Some(prev),
            kv: None,
        },
        Some(event),
    ))
}

/// Deletes every key whose deadline has passed, each at its own revision as any delete.
pub(super) fn apply_expire(
    tables: &mut Tables<'_>,
    next: &mut u64,
    events: &mut Vec<RawEvent>,
) -> Result<usize> {
    let mut expired = 0;
    for key in due(&tables.expiry, now_millis())? {
        let Ok(key) = String::from_utf8(key.clone()) else {
            // Keys are written from strings; anything else cannot be live, so just forget it.
            tables.schedule(&key, None)?;
            continue;
        };
        let (_, live) = current(tables, &key)?;
        let Some(live) = live else {
            tables.schedule(key.as_bytes(), None)?;
            continue;
        };
        if let (TxnOutcome::Applied { .. }, Some(event)) =
            apply_delete(tables, next, &key, live.mod_revision)?
        {
            events.push(event);
            expired += 1;
        }
    }
    if expired > 0 {
        debug!(expired, "deleted expired keys");
    }
    Ok(expired)
}

/// Drops one chunk of the history before `target`, keeping for every key its state as of
/// `target` so reads at `target` and later still work (etcd's compaction rule). Returns the
/// records removed and whether the history before `target` is all gone.
fn compact_chunk(db: &Database, target: i64) -> Result<(u64, bool)> {
    let target = u64::try_from(target)
        .map_err(|_| StorageError::Invalid(format!("compaction revision {target} < 0")))?;
    let txn = db.begin_write().map_err(storage_err)?;
    let mut removed = 0u64;
    let done;
    {
        let mut meta = txn.open_table(META).map_err(storage_err)?;
        let current = current_revision(&meta)?;
        if target > current {
            return Err(StorageError::TooLargeResourceVersion {
                requested: target as i64,
                current: current as i64,
            });
        }
        let compacted = meta
            .get(META_COMPACTED)
            .map_err(storage_err)?
            .map(|g| g.value())
            .unwrap_or(0);
        if compacted >= target {
            return Ok((0, true));
        }
        let upto = target.min(compacted + COMPACT_CHUNK);
        let mut tables = Tables::open(&txn)?;
        let mut touched = std::collections::BTreeSet::new();
        for item in tables
            .events
            .range(compacted + 1..=upto)
            .map_err(storage_err)?
        {
            let (_, raw) = item.map_err(storage_err)?;
            touched.insert(Record::decode(raw.value())?.key);
        }
        for key in touched {
            removed += compact_key(&mut tables, &key, upto)?;
        }
        meta.insert(META_COMPACTED, upto).map_err(storage_err)?;
        done = upto == target;
    }
    txn.commit().map_err(storage_err)?;
    Ok((removed, done))
}

/// Removes the key's changes older than its state at `upto`, and that state too if it is a
/// delete. Returns how many records went.
fn compact_key(tables: &mut Tables<'_>, key: &[u8], upto: u64) -> Result<u64> {
    let Some(entry) = tables
        .keys
        .get(key)
        .map_err(storage_err)?
        .map(|g| KeyEntry::decode(g.value()))
    else {
        return Ok(0);
    };
    // Find the change that is the key's state at `upto`.
    let mut revision = entry.revision;
    let mut state = None;
    while revision != 0 {
        let Some(record) = read_record(&tables.events, revision)? else {
            break;
        };
        if revision <= upto {
            state = Some((revision, record));
            break;
        }
        revision = record.prev_revision;
    }
    let Some((state_revision, state_record)) = state else {
        return Ok(0);
    };
    let mut removed = 0;
    let mut older = state_record.prev_revision;
    while older != 0 {
        let Some(record) = read_record(&tables.events, older)? else {
            break;
        };
        tables.events.remove(older).map_err(storage_err)?;
        removed += 1;
        older = record.prev_revision;
    }
    if state_record.kind == RawEventKind::Delete {
        tables.events.remove(state_revision).map_err(storage_err)?;
        removed += 1;
        if entry.revision == state_revision {
            tables.keys.remove(key).map_err(storage_err)?;
        }
    }
    Ok(removed)
}
