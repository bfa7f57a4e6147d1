//! The Lease as a lock (upstream's resourcelock.LeaseLock): reads and writes go through the
//! registry Store, and every update carries the resourceVersion last read, so of two candidates
//! racing for the same record only one write lands; the other gets Conflict.

use std::sync::Arc;

use registry::options::{ListOptions, WriteOptions};
use registry::{RegistryError, Store, Subresource};
use serde_json::{json, Value};

use super::record::LeaseRecord;

#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("the lease has not been read yet")]
    NotRead,
}

impl LockError {
    /// Losing a race is the election working as meant, not a fault worth a warning.
    pub fn is_lost_race(&self) -> bool {
        matches!(
            self,
            Self::Registry(RegistryError::Conflict { .. } | RegistryError::AlreadyExists { .. })
        )
    }
}

pub(crate) struct LeaseLock {
    store: Arc<Store>,
    namespace: String,
    name: String,
    /// The Lease as last read or written: its resourceVersion guards the next update.
    lease: Option<Value>,
}

impl LeaseLock {
    pub fn new(store: Arc<Store>, namespace: String, name: String) -> Self {
        Self {
            store,
            namespace,
            name,
            lease: None,
        }
    }

    pub fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The stored spec, or None when no Lease exists yet.
    pub async fn get(&mut self) -> Result<Option<Value>, LockError> {
        let found = self
            .store
            .get(Some(&self.namespace), &self.name, &ListOptions::default())
            .await;
        match found {
            Ok(lease) => Ok(Some(self.remember(lease))),
            Err(RegistryError::NotFound { .. }) => {
                self.lease = None;
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Creates the Lease holding `record`; AlreadyExists when another candidate was first.
    pub async fn create(&mut self, record: &LeaseRecord) -> Result<Value, LockError> {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"namespace": self.namespace, "name": self.name},
            "spec": record.to_spec(),
        });
        let created = self
            .store
            .create(Some(&self.namespace), lease, &WriteOptions::default())
            .await?;
        Ok(self.remember(created))
    }

    /// Replaces the spec of the Lease last seen; Conflict when it changed since.
    pub async fn update(&mut self, record: &LeaseRecord) -> Result<Value, LockError> {
        let mut lease = self.lease.clone().ok_or(LockError::NotRead)?;
        if let Some(map) = lease.as_object_mut() {
            map.insert("spec".into(), record.to_spec());
        }
        let (updated, _) = self
            .store
            .update(
                Some(&self.namespace),
                &self.name,
                lease,
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await?;
        Ok(self.remember(updated))
    }

    fn remember(&mut self, lease: Value) -> Value {
        let spec = lease.get("spec").cloned().unwrap_or_else(|| json!({}));
        self.lease = Some(lease);
        spec
    }
}
