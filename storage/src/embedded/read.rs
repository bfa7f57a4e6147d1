//! Reads at a revision: one redb snapshot per request, walking each key back from its latest
//! change to the state it had at that revision.

use redb::{Database, ReadableDatabase};

use super::record::{
    resolve, storage_err, KeyEntry, EVENTS, KEYS, META, META_COMPACTED, META_REVISION,
};
use crate::backend::{KeyRange, RangeRequest, RangeResponse};
use crate::{Result, StorageError};

pub fn range(db: &Database, req: RangeRequest) -> Result<RangeResponse> {
    let txn = db.begin_read().map_err(storage_err)?;
    let meta = txn.open_table(META).map_err(storage_err)?;
    let meta_get = |name| -> Result<u64> {
        Ok(meta
            .get(name)
            .map_err(storage_err)?
            .map(|g| g.value())
            .unwrap_or(0))
    };
    let current = meta_get(META_REVISION)?.max(1);
    let compacted = meta_get(META_COMPACTED)?;
    let at = match u64::try_from(req.revision).unwrap_or(0) {
        0 => current,
        r if r > current => {
            return Err(StorageError::TooLargeResourceVersion {
                requested: req.revision,
                current: current as i64,
            })
        }
        r if r < compacted => {
            return Err(StorageError::TooOld {
                requested: req.revision,
                oldest: compacted as i64,
            })
        }
        r => r,
    };
    let events = txn.open_table(EVENTS).map_err(storage_err)?;
    let keys = txn.open_table(KEYS).map_err(storage_err)?;
    let range = req.range.unwrap_or_else(|| KeyRange::prefix(""));
    let mut out = RangeResponse {
        revision: at as i64,
        ..Default::default()
    };
    let entries: Box<dyn Iterator<Item = _>> = match &range.end {
        None => Box::new(
            keys.get(range.start.as_slice())
                .map_err(storage_err)?
                .map(|g| Ok(g.value()))
                .into_iter(),
        ),
        Some(end) => {
            let iter = if end.as_slice() == [0] {
                keys.range(range.start.as_slice()..)
            } else {
                keys.range(range.start.as_slice()..end.as_slice())
            }
            .map_err(storage_err)?;
            Box::new(iter.map(|item| item.map(|(_, v)| v.value()).map_err(storage_err)))
        }
    };
    for raw in entries {
        let entry = KeyEntry::decode(raw?);
        // At the latest revision a tombstone settles it without reading the record.
        if at == current && entry.deleted {
            continue;
        }
        let full = req.limit > 0 && out.kvs.len() >= req.limit;
        if full && req.skip_count {
            if (at == current && !entry.deleted) || resolve(&events, entry, at)?.is_some() {
                out.more = true;
                break;
            }
            continue;
        }
        if req.count_only || full {
            // Past the page only existence matters; latest live entries need no read.
            let exists =
                (at == current && !entry.deleted) || resolve(&events, entry, at)?.is_some();
            if exists {
                out.count += 1;
                out.more |= full;
            }
            continue;
        }
        if let Some(mut kv) = resolve(&events, entry, at)? {
            out.count += 1;
            if kv.mod_revision >= req.min_mod_revision {
                if req.keys_only {
                    kv.value = Default::default();
                }
                out.kvs.push(kv);
            }
        }
    }
    Ok(out)
}
