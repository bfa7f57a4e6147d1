//! One shared informer per resource for every controller in the process (client-go's
//! SharedInformerFactory): a controller asks the factory for the informer of a resource and
//! subscribes to it, never lists or watches by itself, so each object is held once by the
//! informer layer however many controllers follow it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use registry::{Registry, Store};
use serde_json::Value;
use thiserror::Error;
use tracing::debug;

use super::indexer::IndexFunc;
use super::shared_informer::{InformerConfig, SharedInformer};

/// The index of objects by the uid of their controller (the ownerReference with
/// `controller: true`), for controllers finding what they own.
pub const CONTROLLER_UID_INDEX: &str = "controller-uid";

/// Indexes an object by its controller's uid; objects without a controller are left out.
pub fn controller_uid_index(obj: &Value) -> Vec<String> {
    controller_uid(obj)
        .map(|u| vec![u.to_string()])
        .unwrap_or_default()
}

/// The pods' [`CONTROLLER_UID_INDEX`] (upstream's AddPodControllerUIDIndexer): a pod without
/// a controller is found under its namespace's [`orphan_index_key`], so a controller looks
/// for pods to adopt among the orphans rather than walking every pod of the namespace.
/// Only pods are indexed so: other kinds' orphans are most of their objects (ConfigMaps,
/// Secrets) and nothing walks them.
pub fn pod_controller_uid_index(obj: &Value) -> Vec<String> {
    match controller_uid(obj) {
        Some(uid) => vec![uid.to_string()],
        None => vec![orphan_index_key(registry::object::namespace(obj))],
    }
}

/// The key of a namespace's orphaned pods in [`CONTROLLER_UID_INDEX`]; a "/" never appears
/// in a uid the server makes.
pub fn orphan_index_key(namespace: &str) -> String {
    format!("orphan/{namespace}")
}

/// The uid in the object's controller reference, if it has one.
pub fn controller_uid(obj: &Value) -> Option<&str> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"].as_bool() == Some(true))?["uid"]
        .as_str()
}

#[derive(Debug, Error)]
pub enum FactoryError {
    #[error("the registry serves no {0}")]
    NotServed(String),
}

struct Entry {
    store: Arc<Store>,
    informer: SharedInformer,
}

pub struct InformerFactory {
    registry: Arc<Registry>,
    config: InformerConfig,
    /// By storage path: resources sharing storage are one set of objects, informed once.
    informers: Mutex<HashMap<String, Entry>>,
}

impl InformerFactory {
    pub fn new(registry: Arc<Registry>, config: InformerConfig) -> Arc<Self> {
        Arc::new(Self {
            registry,
            config,
            informers: Mutex::new(HashMap::new()),
        })
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    fn informers(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.informers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The registry's Store of a served resource (a controller writes through it).
    pub fn store(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<Arc<Store>, FactoryError> {
        self.registry.store(group, version, plural).ok_or_else(|| {
            FactoryError::NotServed(if group.is_empty() {
                format!("{version}/{plural}")
            } else {
                format!("{group}/{version}/{plural}")
            })
        })
    }

    /// The running informer of a served resource, started at the first ask.
    pub fn informer(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<SharedInformer, FactoryError> {
        Ok(self.informer_for(&self.store(group, version, plural)?))
    }

    /// The running informer over `store`'s storage. An informer left over from a store the
    /// registry no longer serves under that path (a re-created custom resource) is replaced.
    pub fn informer_for(&self, store: &Arc<Store>) -> SharedInformer {
        let path = &store.info.storage_path;
        let mut informers = self.informers();
        if let Some(entry) = informers.get(path) {
            let current = Arc::ptr_eq(&entry.store, store) || self.is_served(&entry.store);
            if current && !entry.informer.is_stopped() {
                return entry.informer.clone();
            }
        }
        let informer = SharedInformer::for_store(store.clone(), self.config.clone());
        // A fresh indexer has neither index yet.
        let index: IndexFunc = match store.info.group.is_empty() && store.info.plural == "pods" {
            true => Arc::new(pod_controller_uid_index),
            false => Arc::new(controller_uid_index),
        };
        let _ = informer.indexer().add_index(CONTROLLER_UID_INDEX, index);
        informer.start();
        debug!(path = %path, "started shared informer");
        let old = informers.insert(
            path.clone(),
            Entry {
                store: store.clone(),
                informer: informer.clone(),
            },
        );
        drop(informers);
        if let Some(old) = old {
            tokio::spawn(async move { old.informer.stop().await });
        }
        informer
    }

    fn is_served(&self, store: &Arc<Store>) -> bool {
        let info = &store.info;
        self.registry
            .store(&info.group, &info.version, &info.plural)
            .is_some_and(|s| Arc::ptr_eq(&s, store))
    }

    /// Stops the informers of stores the registry no longer serves (a deleted custom
    /// resource definition), so nothing keeps their objects.
    pub async fn forget_removed(&self) {
        let removed: Vec<Entry> = {
            let mut informers = self.informers();
            let stale: Vec<String> = informers
                .iter()
                .filter(|(_, e)| !self.is_served(&e.store))
                .map(|(p, _)| p.clone())
                .collect();
            stale.iter().filter_map(|p| informers.remove(p)).collect()
        };
        for entry in removed {
            debug!(path = %entry.store.info.storage_path, "stopping informer of a removed resource");
            entry.informer.stop().await;
        }
    }

    /// Stops every informer; later asks start new ones.
    pub async fn stop(&self) {
        let all: Vec<Entry> = self.informers().drain().map(|(_, e)| e).collect();
        futures::future::join_all(all.iter().map(|e| e.informer.stop())).await;
    }
}

/// Waits until every informer has synced; false if one stopped first.
pub async fn wait_for_sync(informers: &[&SharedInformer]) -> bool {
    futures::future::join_all(informers.iter().map(|i| i.wait_for_sync()))
        .await
        .into_iter()
        .all(|synced| synced)
}
