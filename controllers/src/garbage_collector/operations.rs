//! What the workers do to objects, through the registry Stores: live reads, deletes guarded
//! by UID (and resourceVersion), ownerReference edits as compare-and-swap JSON patches, and
//! finalizer removal by update with retry on conflict.

use std::sync::Arc;
use std::time::Duration;

use registry::options::{
    DeleteOptions, ListOptions, PreconditionsSpec, PropagationPolicy, WriteOptions,
};
use registry::{object, RegistryError, Store, Subresource};
use serde_json::Value;

use super::errors::GcError;
use super::reference::{raw_owner_references, ObjectReference, Uid};
use super::GarbageCollector;
use client::controller_utils::{self, SyncError};

/// Finalizer removal on conflict: first wait, growth factor and attempts (client-go's
/// retry.DefaultBackoff).
const FINALIZER_RETRY_BASE: Duration = Duration::from_millis(10);
const FINALIZER_RETRY_FACTOR: u32 = 5;
const FINALIZER_ATTEMPTS: usize = 4;

impl GarbageCollector {
    /// The Store of an object and the namespace to address it in.
    fn locate<'a>(
        &self,
        id: &'a ObjectReference,
    ) -> Result<(Arc<Store>, Option<&'a str>), GcError> {
        let store = self.resolver.resolve(&id.api_version, &id.kind)?;
        let namespace = store.info.namespaced.then_some(id.namespace.as_str());
        Ok((store, namespace))
    }

    /// The object as stored now (a quorum read, not a cache).
    /// The item as storage holds it. An item a monitor observed is read from the watch cache:
    /// the graph learnt of it from that same cache, so the cache is never behind what the
    /// graph knows, and every write made from the read carries its uid and resourceVersion (a
    /// newer object only costs a retry). That saves a storage round trip per item of a large
    /// cascade. A virtual node (an owner only named by references) is read live: another
    /// resource's cache may not have seen it yet, and "absent" condemns its dependents.
    pub(super) async fn get_object(
        &self,
        id: &ObjectReference,
        observed: bool,
    ) -> Result<Value, GcError> {
        let (store, namespace) = self.locate(id)?;
        let options = ListOptions {
            resource_version: observed.then(|| "0".to_string()),
            ..Default::default()
        };
        Ok(store.get(namespace, &id.name, &options).await?)
    }

    /// Deletes the object if it is still the one seen at `resource_version`, or at least still
    /// has the ownerReferences the decision was made on (upstream's deleteObject).
    pub(super) async fn delete_object(
        &self,
        id: &ObjectReference,
        resource_version: &str,
        owners_at_version: &Value,
        policy: PropagationPolicy,
    ) -> Result<(), GcError> {
        let (store, namespace) = self.locate(id)?;
        let options = |resource_version: Option<String>| DeleteOptions {
            preconditions: Some(PreconditionsSpec {
                uid: Some(id.uid.to_string()),
                resource_version,
            }),
            propagation_policy: Some(policy),
            ..Default::default()
        };
        let versioned = (!resource_version.is_empty()).then(|| resource_version.to_string());
        let guarded_by_version = versioned.is_some();
        match store.delete(namespace, &id.name, options(versioned)).await {
            Ok(_) => Ok(()),
            Err(RegistryError::Conflict { .. }) if guarded_by_version => {
                // Something else changed; what matters is whether the references did.
                let live = store
                    .get(namespace, &id.name, &ListOptions::default())
                    .await?;
                let same_object = object::uid(&live) == &*id.uid;
                if same_object && raw_owner_references(&live) == owners_at_version {
                    store.delete(namespace, &id.name, options(None)).await?;
                    return Ok(());
                }
                Err(GcError::Registry(RegistryError::conflict(
                    &store.info.qualified_resource(),
                    &id.name,
                    "the object's ownerReferences changed since it was checked",
                )))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Rewrites the object's ownerReferences with `edit` (None from it: nothing to change),
    /// as a JSON patch that tests the uid and the exact references it was computed from, so a
    /// concurrent change makes it fail rather than be overwritten; then it is recomputed from
    /// a fresh read. `latest` saves the first read. Returns the patched object, if patched.
    pub(super) async fn patch_owner_references(
        &self,
        id: &ObjectReference,
        latest: Option<Value>,
        edit: impl Fn(&[Value]) -> Option<Vec<Value>>,
    ) -> Result<Option<Value>, GcError> {
        let (store, namespace) = self.locate(id)?;
        controller_utils::patch_owner_references(&store, namespace, &id.name, &id.uid, latest, edit)
            .await
            .map_err(|e| match e {
                SyncError::Registry(e) => GcError::Registry(e),
                SyncError::Failed(why) => GcError::Failed(why),
            })
    }

    /// Drops the references to `owners`.
    pub(super) async fn remove_owner_references(
        &self,
        id: &ObjectReference,
        latest: Option<Value>,
        owners: &[Uid],
    ) -> Result<Option<Value>, GcError> {
        self.patch_owner_references(id, latest, |refs| {
            let kept: Vec<Value> = refs
                .iter()
                .filter(|r| {
                    let uid = r.get("uid").and_then(Value::as_str).unwrap_or_default();
                    !owners.iter().any(|o| &**o == uid)
                })
                .cloned()
                .collect();
            (kept.len() != refs.len()).then_some(kept)
        })
        .await
    }

    /// Makes every blocking reference non-blocking (to break a cycle of foreground deletions).
    pub(super) async fn unblock_owner_references(
        &self,
        id: &ObjectReference,
        latest: Option<Value>,
    ) -> Result<Option<Value>, GcError> {
        self.patch_owner_references(id, latest, |refs| {
            let mut changed = false;
            let next = refs
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    if r.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
                        r["blockOwnerDeletion"] = Value::Bool(false);
                        changed = true;
                    }
                    r
                })
                .collect();
            changed.then_some(next)
        })
        .await
    }

    /// Removes `finalizer` from the object if it is still there, retrying on conflicts.
    pub(super) async fn remove_finalizer(
        &self,
        id: &ObjectReference,
        finalizer: &str,
    ) -> Result<(), GcError> {
        let (store, namespace) = self.locate(id)?;
        let mut wait = FINALIZER_RETRY_BASE;
        for _ in 0..FINALIZER_ATTEMPTS {
            let mut current = match store
                .get(namespace, &id.name, &ListOptions::default())
                .await
            {
                Ok(obj) => obj,
                Err(RegistryError::NotFound { .. }) => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            if object::uid(&current) != &*id.uid {
                return Ok(());
            }
            let finalizers = object::finalizers(&current);
            if !finalizers.iter().any(|f| f == finalizer) {
                return Ok(());
            }
            let kept: Vec<String> = finalizers.into_iter().filter(|f| f != finalizer).collect();
            object::set_finalizers(&mut current, &kept);
            // The object carries the resourceVersion read: the update is a compare-and-swap.
            match store
                .update(
                    namespace,
                    &id.name,
                    current,
                    Subresource::Main,
                    &WriteOptions::default(),
                )
                .await
            {
                Ok(_) | Err(RegistryError::NotFound { .. }) => return Ok(()),
                Err(RegistryError::Conflict { .. }) => {
                    tokio::time::sleep(wait).await;
                    wait *= FINALIZER_RETRY_FACTOR;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(GcError::Failed(format!(
            "removing finalizer {finalizer} from {id} kept conflicting; will retry later"
        )))
    }
}
