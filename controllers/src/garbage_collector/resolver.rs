//! apiVersion + kind → the Store serving it (the collector's REST mapper), rebuilt whenever
//! the registry's set of Stores changes.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use registry::{Registry, Store};
use tokio::sync::watch;

use super::errors::GcError;

type Mapping = HashMap<(String, String), Arc<Store>>;

pub struct Resolver {
    registry: Arc<Registry>,
    changes: watch::Receiver<u64>,
    /// The mapping and the registry version it was built at.
    cache: RwLock<Option<(u64, Arc<Mapping>)>>,
}

impl Resolver {
    pub fn new(registry: Arc<Registry>) -> Self {
        Self {
            changes: registry.changes(),
            registry,
            cache: RwLock::new(None),
        }
    }

    /// The Store of objects of `kind` at `api_version`. Like upstream's REST mapping, the
    /// version must be served: a reference to an unserved version cannot be checked.
    pub fn resolve(&self, api_version: &str, kind: &str) -> Result<Arc<Store>, GcError> {
        self.mapping()
            .get(&(api_version.to_string(), kind.to_string()))
            .cloned()
            .ok_or_else(|| GcError::RestMapping {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            })
    }

    fn mapping(&self) -> Arc<Mapping> {
        // Read before listing the Stores: a change in between only makes the next call rebuild.
        let version = *self.changes.borrow();
        if let Some((built, mapping)) = self
            .cache
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            if *built == version {
                return mapping.clone();
            }
        }
        let mut stores = self.registry.stores();
        // Deterministic when several resources serve one kind: the first plural wins.
        stores.sort_by(|a, b| a.info.plural.cmp(&b.info.plural));
        let mut mapping = Mapping::new();
        for store in stores {
            mapping
                .entry((store.info.api_version(), store.info.kind.clone()))
                .or_insert(store);
        }
        let mapping = Arc::new(mapping);
        *self.cache.write().unwrap_or_else(|p| p.into_inner()) = Some((version, mapping.clone()));
        mapping
    }
}
