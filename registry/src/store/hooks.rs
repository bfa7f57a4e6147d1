//! Hooks a resource's storage runs around the generic writes (upstream's Store.BeginCreate,
//! BeginUpdate and AfterDelete): Services allocate cluster IPs and node ports there, before the
//! object is written, and release them when the write fails or the object goes.

use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::auth::UserInfo;
use crate::error::Result;
use crate::object::Object;

/// Called once the write a `begin_*` hook prepared has landed (true) or failed (false), like
/// upstream's FinishFunc: a failed write gives back what the hook took.
pub type Finish = Box<dyn FnOnce(bool) -> BoxFuture<'static, ()> + Send>;

#[async_trait]
pub trait StoreHooks: Send + Sync {
    /// Before a create is written, after defaults and validation; may fill in fields
    /// (`obj`). A dry run checks without taking anything.
    async fn begin_create(&self, obj: &mut Object, dry_run: bool) -> Result<Finish>;

    /// Before an update of the main resource is written, with the stored object.
    async fn begin_update(&self, new: &mut Object, old: &Object, dry_run: bool) -> Result<Finish>;

    /// Whether `begin_update` does anything: updates of kinds whose hooks only admit creates
    /// keep the plain write (no read ahead of the compare-and-swap).
    fn hooks_updates(&self) -> bool {
        true
    }

    /// After an object was removed from storage.
    async fn after_delete(&self, obj: &Object);
}

/// A Finish with nothing to do.
pub fn finish_nothing() -> Finish {
    Box::new(|_| Box::pin(async {}))
}

/// A write as a [`WriteGuard`] judges it.
pub struct GuardedWrite<'a> {
    /// The request's namespace; None for cluster-scoped resources.
    pub namespace: Option<&'a str>,
    /// The name the request's path gives: empty for a create, whose path names none.
    pub path_name: &'a str,
    /// The object to be written, defaulted and validated.
    pub new: &'a Object,
    /// The stored object an update replaces; None when the write creates.
    pub old: Option<&'a Object>,
    /// Who writes; None for in-process writers.
    pub user: Option<&'a Arc<UserInfo>>,
}

/// Judges every create and update of a resource's main object by who makes it (upstream's
/// RBAC storages refuse writes granting more than the writer holds). Installed on a Store
/// that already serves, since such judges are built after the Stores. Synchronous: it runs
/// inside the storage update function, on every attempt, against the state that attempt
/// replaces.
pub trait WriteGuard: Send + Sync {
    fn admit(&self, write: &GuardedWrite<'_>) -> Result<()>;
}
