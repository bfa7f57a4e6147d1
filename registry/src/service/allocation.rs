//! The persisted record of what a range has handed out (upstream's RangeAllocation objects
//! at `/registry/ranges/serviceips` and `/registry/ranges/servicenodeports`).
//!
//! Why persisted rather than derived: with several servers on one etcd, a bitmap each server
//! rebuilt from the stored Services and kept in memory would let two servers hand out the same
//! address at the same moment. Every allocation and release here is one compare-and-swap of
//! the record through the storage layer (a guaranteed update), so servers sharing the storage
//! serialise on it, and a restart finds exactly what was allocated. The record lists the values
//! themselves (addresses, ports) rather than upstream's bitmap over offsets, so changing the
//! configured range never reinterprets old entries.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use storage::{Interface, KeyValue, ReadRevision, StorageError, Update, UpdateOptions};

use crate::error::{RegistryError, Result};

#[derive(Default, Serialize, Deserialize)]
struct Record {
    /// The range the values were drawn from when last written (for whoever reads the key).
    range: String,
    allocated: BTreeSet<String>,
}

/// One range's record in storage.
pub struct Allocations {
    storage: Arc<dyn Interface>,
    key: String,
    range: String,
}

impl Allocations {
    pub fn new(storage: Arc<dyn Interface>, key: &str, range: String) -> Self {
        Self {
            storage,
            key: key.to_string(),
            range,
        }
    }

    /// What is allocated now.
    pub async fn snapshot(&self) -> Result<BTreeSet<String>> {
        match self.storage.get(&self.key, ReadRevision::Latest).await {
            Ok(kv) => Ok(decode(Some(&kv))?.allocated),
            Err(StorageError::NotFound { .. }) => Ok(BTreeSet::new()),
            Err(e) => Err(internal(e)),
        }
    }

    /// What is allocated now, with the revision of the record (0: none stored yet), for a
    /// later [`Allocations::replace_if_unchanged`].
    pub async fn read(&self) -> Result<(BTreeSet<String>, i64)> {
        match self.storage.get(&self.key, ReadRevision::Latest).await {
            Ok(kv) => Ok((decode(Some(&kv))?.allocated, kv.mod_revision)),
            Err(StorageError::NotFound { .. }) => Ok((BTreeSet::new(), 0)),
            Err(e) => Err(internal(e)),
        }
    }

    /// Replaces the record with `allocated` if nothing changed it since `revision` was read;
    /// false when something did (an allocation raced the caller, who looks again later).
    pub async fn replace_if_unchanged(
        &self,
        revision: i64,
        allocated: BTreeSet<String>,
    ) -> Result<bool> {
        let mut raced = false;
        let range = self.range.clone();
        self.storage
            .guaranteed_update(
                &self.key,
                UpdateOptions {
                    ignore_not_found: true,
                    ..Default::default()
                },
                &mut |current| {
                    if current.map_or(0, |kv| kv.mod_revision) != revision {
                        raced = true;
                        return Ok(Update::Keep);
                    }
                    let record = Record {
                        range: range.clone(),
                        allocated: allocated.clone(),
                    };
                    if decode(current).is_ok_and(|r| r.allocated == record.allocated) {
                        return Ok(Update::Keep);
                    }
                    let bytes = serde_json::to_vec(&record)
                        .map_err(|e| StorageError::Internal(e.to_string()))?;
                    Ok(Update::Write(Bytes::from(bytes)))
                },
            )
            .await
            .map_err(internal)?;
        Ok(!raced)
    }

    /// Records `value`; false if it was already allocated.
    pub async fn allocate(&self, value: &str) -> Result<bool> {
        let mut fresh = false;
        self.change(|record| {
            fresh = record.allocated.insert(value.to_string());
            fresh
        })
        .await?;
        Ok(fresh)
    }

    /// Records the value `pick` chooses among the free ones; None when it finds none.
    pub async fn allocate_next(
        &self,
        pick: impl Fn(&BTreeSet<String>) -> Option<String> + Send + Sync,
    ) -> Result<Option<String>> {
        let mut picked = None;
        self.change(|record| {
            picked = pick(&record.allocated);
            match &picked {
                Some(v) => record.allocated.insert(v.clone()),
                None => false,
            }
        })
        .await?;
        Ok(picked)
    }

    /// Frees `values` (those not allocated are ignored).
    pub async fn release(&self, values: &[String]) -> Result<()> {
        if values.is_empty() {
            return Ok(());
        }
        self.change(|record| {
            let before = record.allocated.len();
            record.allocated.retain(|v| !values.contains(v));
            record.allocated.len() != before
        })
        .await
    }

    /// One guaranteed update of the record; `edit` says whether it changed anything.
    async fn change(&self, mut edit: impl FnMut(&mut Record) -> bool + Send) -> Result<()> {
        let range = self.range.clone();
        self.storage
            .guaranteed_update(
                &self.key,
                UpdateOptions {
                    ignore_not_found: true,
                    ..Default::default()
                },
                &mut |current| {
                    let mut record = decode(current).map_err(RegistryError::into_storage)?;
                    if !edit(&mut record) {
                        return Ok(Update::Keep);
                    }
                    record.range = range.clone();
                    let bytes = serde_json::to_vec(&record)
                        .map_err(|e| StorageError::Internal(e.to_string()))?;
                    Ok(Update::Write(Bytes::from(bytes)))
                },
            )
            .await
            .map(|_| ())
            .map_err(internal)
    }
}

fn decode(kv: Option<&KeyValue>) -> Result<Record> {
    match kv {
        None => Ok(Record::default()),
        Some(kv) => serde_json::from_slice(&kv.value).map_err(|e| {
            RegistryError::Internal(format!("the stored range allocation is unreadable: {e}"))
        }),
    }
}

fn internal(e: StorageError) -> RegistryError {
    match e {
        StorageError::Aborted(inner) => match inner.downcast::<RegistryError>() {
            Ok(e) => *e,
            Err(other) => RegistryError::Internal(other.to_string()),
        },
        other => RegistryError::Internal(format!("range allocation: {other}")),
    }
}
