//! On-disk layout of the embedded store, in three redb tables:
//! - `events`: revision → the one change made at that revision (every write is its own
//!   revision, as in etcd), with a link to the key's previous change; the MVCC history.
//! - `keys`: key → revision of its latest change (high bit set when that change is a delete);
//!   the index that makes latest reads one hop and historical reads a short walk back.
//! - `meta`: the current and compacted revisions.
//!
//! And two for keys written with a ttl (see `expiry`): `deadlines`, key → when it expires
//! (Unix milliseconds), and `expiry`, the same pairs ordered by time for the sweeper.

use bytes::Bytes;
use redb::{ReadableTable, TableDefinition};

use crate::backend::{RawEvent, RawEventKind};
use crate::{KeyValue, Result, StorageError};

pub const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
pub const KEYS: TableDefinition<&[u8], u64> = TableDefinition::new("keys");
pub const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
pub const DEADLINES: TableDefinition<&[u8], u64> = TableDefinition::new("deadlines");
pub const EXPIRY: TableDefinition<&[u8], ()> = TableDefinition::new("expiry");

pub const META_REVISION: &str = "revision";
pub const META_COMPACTED: &str = "compacted";

const TOMBSTONE: u64 = 1 << 63;
const HEADER: usize = 1 + 8 + 8 + 8 + 4;

/// A key's entry in `keys`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyEntry {
    pub revision: u64,
    pub deleted: bool,
}

impl KeyEntry {
    pub fn encode(self) -> u64 {
        self.revision | if self.deleted { TOMBSTONE } else { 0 }
    }

    pub fn decode(raw: u64) -> Self {
        Self {
            revision: raw & !TOMBSTONE,
            deleted: raw & TOMBSTONE != 0,
        }
    }
}

/// One change, as stored in `events`.
#[derive(Clone, Debug)]
pub struct Record {
    pub kind: RawEventKind,
    pub create_revision: u64,
    pub version: u64,
    /// The key's previous change (0: none), which historical reads and watch replay follow.
    pub prev_revision: u64,
    pub key: Vec<u8>,
    pub value: Bytes,
}

impl Record {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.key.len() + self.value.len());
        out.push(match self.kind {
            RawEventKind::Put => 0,
            RawEventKind::Delete => 1,
        });
        out.extend_from_slice(&self.create_revision.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.prev_revision.to_le_bytes());
        out.extend_from_slice(&(self.key.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.key);
        out.extend_from_slice(&self.value);
        out
    }

    pub fn decode(raw: &[u8]) -> Result<Self> {
        let corrupt = || StorageError::Internal("corrupt record in embedded store".into());
        if raw.len() < HEADER {
            return Err(corrupt());
        }
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&raw[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let kind = match raw[0] {
            0 => RawEventKind::Put,
            1 => RawEventKind::Delete,
            _ => return Err(corrupt()),
        };
        let mut len = [0u8; 4];
        len.copy_from_slice(&raw[25..29]);
        let key_len = u32::from_le_bytes(len) as usize;
        if raw.len() < HEADER + key_len {
            return Err(corrupt());
        }
        Ok(Self {
            kind,
            create_revision: u64_at(1),
            version: u64_at(9),
            prev_revision: u64_at(17),
            key: raw[HEADER..HEADER + key_len].to_vec(),
            value: Bytes::copy_from_slice(&raw[HEADER + key_len..]),
        })
    }

    pub fn key_value(&self, revision: u64) -> KeyValue {
        KeyValue {
            key: String::from_utf8_lossy(&self.key).into_owned(),
            value: self.value.clone(),
            create_revision: self.create_revision as i64,
            mod_revision: revision as i64,
            version: self.version as i64,
        }
    }
}

/// A redb failure as a storage error. A full disk gets etcd's wording for its space alarm
/// ("mvcc: database space exceeded"), which kube-apiserver passes on as a 500 InternalError,
/// so clients and operators see the same cause whichever store is behind the server.
pub fn storage_err(err: impl Into<redb::Error>) -> StorageError {
    let err = err.into();
    match &err {
        redb::Error::Io(io) if is_no_space(io) => {
            StorageError::Internal(format!("embedded store: {NO_SPACE}: {io}"))
        }
        _ => StorageError::Internal(format!("embedded store: {err}")),
    }
}

pub const NO_SPACE: &str = "mvcc: database space exceeded";

fn is_no_space(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

pub fn read_record(
    events: &impl ReadableTable<u64, &'static [u8]>,
    revision: u64,
) -> Result<Option<Record>> {
    match events.get(revision).map_err(storage_err)? {
        Some(raw) => Record::decode(raw.value()).map(Some),
        None => Ok(None),
    }
}

/// The value of a key as of revision `at`, walking back from its latest change. A missing link
/// means compaction removed a tombstone there, so the key did not exist.
pub fn resolve(
    events: &impl ReadableTable<u64, &'static [u8]>,
    entry: KeyEntry,
    at: u64,
) -> Result<Option<KeyValue>> {
    if entry.deleted && entry.revision <= at {
        return Ok(None);
    }
    let mut revision = entry.revision;
    while revision != 0 {
        let Some(record) = read_record(events, revision)? else {
            return Ok(None);
        };
        if revision <= at {
            return Ok(match record.kind {
                RawEventKind::Put => Some(record.key_value(revision)),
                RawEventKind::Delete => None,
            });
        }
        revision = record.prev_revision;
    }
    Ok(None)
}

/// The event as a watcher sees it: a delete carries the deleted value as `prev`.
pub fn raw_event(
    events: &impl ReadableTable<u64, &'static [u8]>,
    revision: u64,
    record: Record,
) -> Result<RawEvent> {
    let prev = match record.prev_revision {
        0 => None,
        p => match read_record(events, p)? {
            Some(prev) if prev.kind == RawEventKind::Put => Some(prev.key_value(p)),
            _ => None,
        },
    };
    let kv = match record.kind {
        RawEventKind::Put => record.key_value(revision),
        RawEventKind::Delete => KeyValue {
            key: String::from_utf8_lossy(&record.key).into_owned(),
            value: Bytes::new(),
            create_revision: 0,
            mod_revision: revision as i64,
            version: 0,
        },
    };
    Ok(RawEvent {
        kind: record.kind,
        kv,
        prev,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips() {
        let record = Record {
            kind: RawEventKind::Delete,
            create_revision: 3,
            version: 7,
            prev_revision: 9,
            key: b"/pods/default/web".to_vec(),
            value: Bytes::from_static(b"{\"a\":1}"),
        };
        let back = Record::decode(&record.encode()).expect("decodes");
        assert_eq!(back.kind, RawEventKind::Delete);
        assert_eq!(
            (back.create_revision, back.version, back.prev_revision),
            (3, 7, 9)
        );
        assert_eq!(back.key, record.key);
        assert_eq!(back.value, record.value);
    }

    #[test]
    fn truncated_record_is_an_error_not_a_panic() {
        assert!(Record::decode(&[0, 1, 2]).is_err());
        let mut raw = Record {
            kind: RawEventKind::Put,
            create_revision: 1,
            version: 1,
            prev_revision: 0,
            key: b"/k".to_vec(),
            value: Bytes::new(),
        }
        .encode();
        raw[25] = 200;
        assert!(Record::decode(&raw).is_err());
    }

    #[test]
    fn key_entry_keeps_tombstone_bit() {
        let e = KeyEntry {
            revision: 42,
            deleted: true,
        };
        assert_eq!(KeyEntry::decode(e.encode()), e);
    }
}
