//! client-go's informer machinery over the registry's watch streams, called in-process:
//! a [`Reflector`] lists and watches a resource into a [`DeltaFifo`]; a [`SharedInformer`]
//! pops it into an [`Indexer`] and notifies handlers of adds, updates and deletes.

mod backoff;
mod delta;
mod delta_fifo;
mod dispatch;
mod factory;
#[cfg(test)]
pub(crate) mod fake;
mod indexer;
mod key;
mod lister_watcher;
mod reflector;
mod shared_informer;
mod subscription;

pub use delta::{DeletedFinalStateUnknown, Delta, DeltaObject, DeltaType, Deltas, Keyed};
pub use delta_fifo::{BoxError, DeltaFifo, FifoError, KnownObjects, PopError, ProcessError};
pub use dispatch::{dispatch, dispatch_synced, reload_on_change, HandlerSynced};
pub use factory::{
    controller_uid, controller_uid_index, orphan_index_key, pod_controller_uid_index,
    wait_for_sync, FactoryError, InformerFactory, CONTROLLER_UID_INDEX,
};
pub use indexer::{
    namespace_index, IndexFunc, Indexer, IndexerError, Labels, Marks, Summary, View,
    NAMESPACE_INDEX,
};
pub use key::{object_key, split_key, KeyError};
pub use lister_watcher::ListerWatcher;
pub use reflector::{Reflector, ReflectorConfig};
pub use shared_informer::{EventHandler, HandlerId, InformerConfig, Notification, SharedInformer};
pub use subscription::Subscription;
