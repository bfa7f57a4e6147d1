//! The storage interface built once over any backend, as upstream's etcd3 store: keys under a
//! prefix, compare-and-swap on mod revisions, preconditions, paging from one snapshot.

pub mod continue_token;
pub(crate) mod events;
mod list;
mod list_pages;

pub(crate) use list_pages::PAGE_ITEMS;
mod transform;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::backend::{DynBackend, KeyRange, RangeRequest, TxnOutcome};
use crate::interface::{Interface, Update, UpdateFn, UpdateOptions, ValidateDeletion};
use crate::metrics::TimedBackend;
use crate::StorageError;
use crate::{KeyValue, ListOptions, ListPages, ListResult, Preconditions, ReadRevision, Result};
use crate::{WatchOptions, WatchStream};

/// Where a stored value keeps its UID, for UID preconditions.
pub type UidExtractor = Arc<dyn Fn(&[u8]) -> Option<String> + Send + Sync>;

/// The default: values are JSON objects with `metadata.uid`, as every object the API server
/// stores is.
pub fn json_metadata_uid() -> UidExtractor {
    #[derive(serde::Deserialize)]
    struct Meta {
        uid: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Object {
        metadata: Option<Meta>,
    }
    Arc::new(|value: &[u8]| {
        serde_json::from_slice::<Object>(value)
            .ok()
            .and_then(|o| o.metadata)
            .and_then(|m| m.uid)
    })
}

/// storage.Interface straight over a backend (upstream's etcd3 store, here over either
/// backend); the registry reaches it through the watch cache ([`crate::Cacher`]).
#[derive(Clone)]
pub struct KvStore {
    backend: TimedBackend,
    prefix: String,
    uid_of: UidExtractor,
    /// Which values are encrypted at rest, and how; None: all stored as they are.
    encryption: Option<Arc<crate::encryption::Routes>>,
}

impl KvStore {
    /// `prefix` is prepended to every key (`--etcd-prefix`, default `/registry`).
    pub fn new(backend: DynBackend, prefix: &str) -> Self {
        let prefix = prefix.trim_end_matches('/').to_string();
        Self {
            backend: TimedBackend::new(backend, &prefix),
            prefix,
            uid_of: json_metadata_uid(),
            encryption: None,
        }
    }

    pub fn with_uid_extractor(mut self, uid_of: UidExtractor) -> Self {
        self.uid_of = uid_of;
        self
    }

    pub fn backend(&self) -> &DynBackend {
        self.backend.inner()
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub(crate) fn full_key(&self, key: &str) -> String {
        if key.starts_with('/') {
            format!("{}{key}", self.prefix)
        } else {
            format!("{}/{key}", self.prefix)
        }
    }

    /// The caller's key for a stored pair.
    pub(crate) fn strip(&self, mut kv: KeyValue) -> KeyValue {
        if let Some(rest) = kv.key.strip_prefix(&self.prefix) {
            kv.key = rest.to_string();
        }
        kv
    }

    /// The range a (possibly recursive) key denotes; a recursive key always ends in `/` so
    /// `/pods/ns` never lists `/pods/ns2`.
    pub(crate) fn key_range(&self, key: &str, recursive: bool) -> (String, KeyRange) {
        let mut full = self.full_key(key);
        if recursive {
            if !full.ends_with('/') {
                full.push('/');
            }
            let range = KeyRange::prefix(&full);
            (full, range)
        } else {
            let range = KeyRange::key(&full);
            (full, range)
        }
    }

    pub async fn compact(&self, revision: i64) -> Result<()> {
        self.backend.compact(revision).await
    }

    /// The latest value, decoded, and whether it is stale (see [`KvStore::decode`]).
    async fn read_latest(&self, full_key: &str) -> Result<(Option<KeyValue>, bool)> {
        let resp = self
            .backend
            .range(RangeRequest {
                range: Some(KeyRange::key(full_key)),
                ..Default::default()
            })
            .await?;
        self.decode_opt(resp.kvs.into_iter().next())
    }

    fn check_preconditions(
        &self,
        key: &str,
        pre: &Preconditions,
        current: &KeyValue,
    ) -> Result<()> {
        if let Some(uid) = &pre.uid {
            let actual = (self.uid_of)(&current.value);
            if actual.as_deref() != Some(uid.as_str()) {
                return Err(StorageError::conflict(
                    key,
                    format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        actual.unwrap_or_default()
                    ),
                ));
            }
        }
        if let Some(rv) = pre.resource_version {
            if rv != current.mod_revision {
                return Err(StorageError::conflict(
                    key,
                    format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                        current.mod_revision
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Interface for KvStore {
    async fn create_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        let full = self.full_key(key);
        let stored = self.encode(&full, value.clone())?;
        match self.backend.put_if(&full, stored, 0, ttl).await? {
            TxnOutcome::Applied { kv: Some(kv), .. } => Ok(self.strip(KeyValue { value, ..kv })),
            TxnOutcome::Applied { kv: None, .. } => {
                Err(StorageError::Internal("create returned no value".into()))
            }
            TxnOutcome::Failed { .. } => Err(StorageError::AlreadyExists {
                key: key.to_string(),
            }),
        }
    }

    async fn get(&self, key: &str, revision: ReadRevision) -> Result<KeyValue> {
        let full = self.full_key(key);
        let at = match revision {
            ReadRevision::Exact(r) => r,
            _ => 0,
        };
        let resp = self
            .backend
            .range(RangeRequest {
                range: Some(KeyRange::key(&full)),
                revision: at,
                ..Default::default()
            })
            .await?;
        if let ReadRevision::NotOlderThan(min) = revision {
            if resp.revision < min {
                return Err(StorageError::TooLargeResourceVersion {
                    requested: min,
                    current: resp.revision,
                });
            }
        }
        let kv = resp
            .kvs
            .into_iter()
            .next()
            .ok_or_else(|| StorageError::not_found(key))?;
        Ok(self.strip(self.decode(kv)?.0))
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        list::get_list(self, key, opts).await
    }

    async fn get_list_pages(&self, key: &str, opts: ListOptions) -> Result<ListPages> {
        list_pages::get_list_pages(self, key, opts).await
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        opts: UpdateOptions,
        update: &mut UpdateFn<'_>,
    ) -> Result<KeyValue> {
        let full = self.full_key(key);
        let mut from_cache = opts.cached.is_some();
        // A value read through an older provider or key is written again even unchanged, so
        // re-writing objects moves them to the current key (upstream's stale reads).
        let (mut current, mut stale) = match opts.cached {
            Some(cached) => (
                Some(KeyValue {
                    key: full.clone(),
                    ..cached
                }),
                false,
            ),
            None => self.read_latest(&full).await?,
        };
        loop {
            let attempt = (|| {
                match &current {
                    None if !opts.ignore_not_found => return Err(StorageError::not_found(key)),
                    Some(kv) => self.check_preconditions(key, &opts.preconditions, kv)?,
                    None => {}
                }
                update(current.as_ref())
            })();
            let value = match attempt {
                Ok(Update::Write(value)) => value,
                // A decision taken on cached state may not hold for the stored one.
                Err(_) | Ok(Update::Keep) if from_cache => {
                    (current, stale) = self.read_latest(&full).await?;
                    from_cache = false;
                    continue;
                }
                Err(e) => return Err(e),
                Ok(Update::Keep) => {
                    return current
                        .map(|kv| self.strip(kv))
                        .ok_or_else(|| StorageError::not_found(key))
                }
                Ok(Update::Delete) => {
                    let Some(kv) = current else {
                        return Err(StorageError::not_found(key));
                    };
                    match self.backend.delete_if(&full, kv.mod_revision).await? {
                        TxnOutcome::Applied { prev, .. } => {
                            let prev = self.decode_opt(prev)?.0;
                            return Ok(self.strip(prev.unwrap_or(kv)));
                        }
                        TxnOutcome::Failed { current: fresh } => {
                            tracing::trace!(
                                key,
                                "guaranteed delete lost a compare-and-swap; retrying"
                            );
                            (current, stale) = self.decode_opt(fresh)?;
                            from_cache = false;
                            continue;
                        }
                    }
                }
            };
            // An unchanged value is not written, its ttl not renewed either (as upstream).
            if let Some(kv) = &current {
                if kv.value == value && !stale {
                    if from_cache {
                        (current, stale) = self.read_latest(&full).await?;
                        from_cache = false;
                        continue;
                    }
                    return Ok(self.strip(kv.clone()));
                }
            }
            let expected = current.as_ref().map_or(0, |kv| kv.mod_revision);
            let stored = self.encode(&full, value.clone())?;
            match self
                .backend
                .put_if(&full, stored, expected, opts.ttl)
                .await?
            {
                TxnOutcome::Applied { kv: Some(kv), .. } => {
                    // The written pair's history follows from the one it replaced.
                    let (create_revision, version) = current
                        .as_ref()
                        .map_or((kv.create_revision, kv.version), |c| {
                            (c.create_revision, c.version + 1)
                        });
                    return Ok(self.strip(KeyValue {
                        value,
                        create_revision,
                        version,
                        ..kv
                    }));
                }
                TxnOutcome::Applied { kv: None, .. } => {
                    return Err(StorageError::Internal("update returned no value".into()))
                }
                TxnOutcome::Failed { current: fresh } => {
                    tracing::trace!(key, "guaranteed update lost a compare-and-swap; retrying");
                    (current, stale) = self.decode_opt(fresh)?;
                    from_cache = false;
                }
            }
        }
    }

    async fn delete(
        &self,
        key: &str,
        preconditions: &Preconditions,
        validate: Option<&ValidateDeletion<'_>>,
    ) -> Result<KeyValue> {
        let full = self.full_key(key);
        let (current, _) = self.read_latest(&full).await?;
        self.delete_from(key, &full, preconditions, validate, current)
            .await
    }

    async fn delete_cached(
        &self,
        key: &str,
        preconditions: &Preconditions,
        cached: KeyValue,
    ) -> Result<KeyValue> {
        let full = self.full_key(key);
        let cached = KeyValue {
            key: full.clone(),
            ..cached
        };
        self.delete_from(key, &full, preconditions, None, Some(cached))
            .await
    }

    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        watch::watch(self, key, opts).await
    }

    async fn count(&self, key: &str) -> Result<i64> {
        let (_, range) = self.key_range(key, true);
        let resp = self
            .backend
            .range(RangeRequest {
                range: Some(range),
                count_only: true,
                ..Default::default()
            })
            .await?;
        Ok(resp.count)
    }

    async fn current_revision(&self) -> Result<i64> {
        self.backend.current_revision().await
    }
}

impl KvStore {
    /// Delete by compare-and-swap, starting from `current`; a lost swap retries on the value
    /// the failed transaction read.
    async fn delete_from(
        &self,
        key: &str,
        full: &str,
        preconditions: &Preconditions,
        validate: Option<&ValidateDeletion<'_>>,
        mut current: Option<KeyValue>,
    ) -> Result<KeyValue> {
        loop {
            let Some(kv) = current else {
                return Err(StorageError::not_found(key));
            };
            self.check_preconditions(key, preconditions, &kv)?;
            if let Some(validate) = validate {
                validate(&kv)?;
            }
            match self.backend.delete_if(full, kv.mod_revision).await? {
                TxnOutcome::Applied { prev, .. } => {
                    let prev = self.decode_opt(prev)?.0;
                    return Ok(self.strip(prev.unwrap_or(kv)));
                }
                TxnOutcome::Failed { current: fresh } => current = self.decode_opt(fresh)?.0,
            }
        }
    }
}
