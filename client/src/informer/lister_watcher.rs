//! Where a reflector gets its list and its watch from: the registry Store of a resource,
//! called in-process, or a stand-in in tests. Objects come as stored (the watch cache's
//! bytes, shared), with the decoder that turns them into what the Store serves.

use async_trait::async_trait;
use registry::options::ListOptions;
use registry::store::{Decoder, EncodedEvents, EncodedList};

#[async_trait]
pub trait ListerWatcher: Send + Sync {
    async fn list(&self, opts: &ListOptions) -> registry::Result<EncodedList>;

    async fn watch(&self, opts: &ListOptions) -> registry::Result<EncodedEvents>;

    /// How the listed and watched objects decode into the objects served.
    fn decoder(&self) -> Decoder;

    /// What is listed, for logs.
    fn describe(&self) -> String;
}

/// All objects of the resource, in every namespace.
#[async_trait]
impl ListerWatcher for registry::Store {
    async fn list(&self, opts: &ListOptions) -> registry::Result<EncodedList> {
        registry::Store::list_encoded(self, None, opts).await
    }

    async fn watch(&self, opts: &ListOptions) -> registry::Result<EncodedEvents> {
        registry::Store::watch_encoded(self, None, opts).await
    }

    fn decoder(&self) -> Decoder {
        registry::Store::decoder(self)
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
