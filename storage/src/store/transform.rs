//! Values through the encryption routes on their way to the backend and back: everything the
//! store hands up is plaintext, everything it hands down is in stored form.

use std::sync::Arc;

use bytes::Bytes;

use super::KvStore;
use crate::backend::{RawEvent, RawEventKind};
use crate::encryption::{message, Routes};
use crate::{KeyValue, Result, StorageError};

impl KvStore {
    /// Transforms values as `routes` say (`--encryption-provider-config`).
    pub fn with_encryption(mut self, routes: Arc<Routes>) -> Self {
        self.encryption = Some(routes);
        self
    }

    /// Keys under `storage_path` hold `resource` of `group`, and are transformed as the
    /// encryption configuration says for it. Call before anything reads the path.
    pub fn route_resource(&self, storage_path: &str, group: &str, resource: &str) {
        if let Some(routes) = &self.encryption {
            routes.route(storage_path, group, resource);
        }
    }

    /// The stored form of a value for `full_key` (the key with the storage prefix, which
    /// authenticated providers bind the value to).
    pub(crate) fn encode(&self, full_key: &str, value: Bytes) -> Result<Bytes> {
        let Some(routes) = &self.encryption else {
            return Ok(value);
        };
        routes
            .for_key(self.relative(full_key))
            .transform_to_storage(&value, full_key.as_bytes())
            .map_err(|e| {
                StorageError::Internal(format!(
                    "unable to transform key {full_key:?}: {}",
                    message(e)
                ))
            })
    }

    /// The plaintext of a stored pair (key with the storage prefix), and whether it is stale:
    /// stored by a provider or key other than the one that writes now.
    pub(crate) fn decode(&self, mut kv: KeyValue) -> Result<(KeyValue, bool)> {
        let (value, stale) = self.decode_value(&kv.key, std::mem::take(&mut kv.value))?;
        kv.value = value;
        Ok((kv, stale))
    }

    /// As [`KvStore::decode`], for the value stored at `full_key`.
    pub(crate) fn decode_value(&self, full_key: &str, value: Bytes) -> Result<(Bytes, bool)> {
        let Some(routes) = &self.encryption else {
            return Ok((value, false));
        };
        routes
            .for_key(self.relative(full_key))
            .transform_from_storage(value, full_key.as_bytes())
            .map_err(|e| {
                StorageError::Internal(format!(
                    "unable to transform key {full_key:?}: {}",
                    message(e)
                ))
            })
    }

    pub(crate) fn decode_opt(&self, kv: Option<KeyValue>) -> Result<(Option<KeyValue>, bool)> {
        match kv {
            Some(kv) => self.decode(kv).map(|(kv, stale)| (Some(kv), stale)),
            None => Ok((None, false)),
        }
    }

    /// A backend change with plaintext values (a delete's own value is empty and stays so).
    pub(crate) fn decode_event(&self, mut event: RawEvent) -> Result<RawEvent> {
        if self.encryption.is_none() {
            return Ok(event);
        }
        if event.kind == RawEventKind::Put {
            event.kv = self.decode(event.kv)?.0;
        }
        event.prev = self.decode_opt(event.prev)?.0;
        Ok(event)
    }

    fn relative<'k>(&self, full_key: &'k str) -> &'k str {
        full_key.strip_prefix(&self.prefix).unwrap_or(full_key)
    }
}
