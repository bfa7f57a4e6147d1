//! Where a reflector gets its list and its watch from: the registry Store of a resource,
//! called in-process, or a stand-in in tests.

use async_trait::async_trait;
use registry::options::ListOptions;
use registry::store::watch::WatchEvents;
use serde_json::Value;

#[async_trait]
pub trait ListerWatcher: Send + Sync {
    /// A list object: `metadata.resourceVersion` and `items`.
    async fn list(&self, opts: &ListOptions) -> registry::Result<Value>;

    async fn watch(&self, opts: &ListOptions) -> registry::Result<WatchEvents>;

    /// What is listed, for logs.
    fn describe(&self) -> String;
}

/// All objects of the resource, in every namespace.
#[async_trait]
impl ListerWatcher for registry::Store {
    async fn list(&self, opts: &ListOptions) -> registry::Result<Value> {
        registry::Store::list(self, None, opts).await
    }

    async fn watch(&self, opts: &ListOptions) -> registry::Result<WatchEvents> {
        registry::Store::watch(self, None, None, opts).await
    }

    fn describe(&self) -> String {
        let info = &self.info;
        if info.group.is_empty() {
            format!("{}/{}", info.version, info.plural)
        } else {
            format!("{}/{}/{}", info.group, info.version, info.plural)
        }
    }
}
