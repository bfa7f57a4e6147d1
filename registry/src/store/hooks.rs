//! Hooks a resource's storage runs around the generic writes (upstream's Store.BeginCreate,
//! BeginUpdate and AfterDelete): Services allocate cluster IPs and node ports there, before the
//! object is written, and release them when the write fails or the object goes.

use async_trait::async_trait;
use futures::future::BoxFuture;

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

    /// After an object was removed from storage.
    async fn after_delete(&self, obj: &Object);
}

/// A Finish with nothing to do.
pub fn finish_nothing() -> Finish {
    Box::new(|_| Box::pin(async {}))
}
