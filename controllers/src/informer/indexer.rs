//! The informer's local cache (client-go's Indexer): objects by key, plus named indices that map
//! an index value (a namespace, an owner's uid, ...) to the keys of the objects that have it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde_json::Value;
use thiserror::Error;

use super::delta_fifo::KnownObjects;
use super::key::{object_key, KeyError};

/// The values an object is indexed under (several for, e.g., an index by owner).
pub type IndexFunc = Arc<dyn Fn(&Value) -> Vec<String> + Send + Sync>;

/// The name of the index by `metadata.namespace`.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Indexes namespaced objects by namespace; cluster-scoped ones are left out.
pub fn namespace_index(obj: &Value) -> Vec<String> {
    obj["metadata"]["namespace"]
        .as_str()
        .filter(|ns| !ns.is_empty())
        .map(|ns| vec![ns.to_string()])
        .unwrap_or_default()
}

#[derive(Debug, Error)]
pub enum IndexerError {
    #[error("index {0:?} does not exist")]
    NoSuchIndex(String),
    #[error("index {0:?} already exists")]
    IndexExists(String),
    #[error(transparent)]
    Key(#[from] KeyError),
}

/// index value -> keys of the objects indexed under it.
type Index = HashMap<String, HashSet<String>>;

#[derive(Default)]
struct State {
    items: HashMap<String, Arc<Value>>,
    funcs: HashMap<String, IndexFunc>,
    indices: HashMap<String, Index>,
}

impl State {
    fn index(&mut self, key: &str, obj: &Value) {
        for (name, func) in &self.funcs {
            let index = self.indices.entry(name.clone()).or_default();
            for value in func(obj) {
                index.entry(value).or_default().insert(key.to_string());
            }
        }
    }

    fn unindex(&mut self, key: &str, obj: &Value) {
        for (name, func) in &self.funcs {
            let Some(index) = self.indices.get_mut(name) else {
                continue;
            };
            for value in func(obj) {
                if let Some(keys) = index.get_mut(&value) {
                    keys.remove(key);
                    // Empty sets would pile up for every namespace or owner ever seen.
                    if keys.is_empty() {
                        index.remove(&value);
                    }
                }
            }
        }
    }

    fn put(&mut self, key: String, obj: Arc<Value>) {
        if let Some(old) = self.items.insert(key.clone(), obj.clone()) {
            self.unindex(&key, &old);
        }
        self.index(&key, &obj);
    }

    fn remove(&mut self, key: &str) -> Option<Arc<Value>> {
        let old = self.items.remove(key)?;
        self.unindex(key, &old);
        Some(old)
    }
}

/// Thread-safe; cheap to share behind an `Arc`. Readers see whole updates only.
#[derive(Default)]
pub struct Indexer {
    state: RwLock<State>,
}

impl Indexer {
    /// An indexer with no indices.
    pub fn new() -> Self {
        Self::default()
    }

    /// An indexer with the namespace index, which most controllers want.
    pub fn with_namespace_index() -> Self {
        let indexer = Self::new();
        // A fresh indexer has no index of that name yet.
        let _ = indexer.add_index(NAMESPACE_INDEX, Arc::new(namespace_index));
        indexer
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds an index, built at once over the objects already held.
    pub fn add_index(&self, name: &str, func: IndexFunc) -> Result<(), IndexerError> {
        let mut state = self.write();
        if state.funcs.contains_key(name) {
            return Err(IndexerError::IndexExists(name.to_string()));
        }
        let mut index = Index::new();
        for (key, obj) in &state.items {
            for value in func(obj) {
                index.entry(value).or_default().insert(key.clone());
            }
        }
        state.funcs.insert(name.to_string(), func);
        state.indices.insert(name.to_string(), index);
        Ok(())
    }

    /// Adds or replaces the object under its key.
    pub fn add(&self, obj: Arc<Value>) -> Result<(), KeyError> {
        let key = object_key(&obj)?;
        self.write().put(key, obj);
        Ok(())
    }

    /// The same as [`Indexer::add`]: the key decides what is replaced.
    pub fn update(&self, obj: Arc<Value>) -> Result<(), KeyError> {
        self.add(obj)
    }

    /// Removes the object under `key`, returning it.
    pub fn delete(&self, key: &str) -> Option<Arc<Value>> {
        self.write().remove(key)
    }

    /// Swaps the whole content for `objs` (objects without a key are skipped).
    pub fn replace(&self, objs: Vec<Arc<Value>>) {
        let mut state = self.write();
        state.items.clear();
        for index in state.indices.values_mut() {
            index.clear();
        }
        for obj in objs {
            if let Ok(key) = object_key(&obj) {
                state.put(key, obj);
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<Arc<Value>> {
        self.read().items.get(key).cloned()
    }

    pub fn list(&self) -> Vec<Arc<Value>> {
        self.read().items.values().cloned().collect()
    }

    pub fn list_keys(&self) -> Vec<String> {
        self.read().items.keys().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.read().items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys of the objects indexed under `value` in index `name`.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<String>, IndexerError> {
        let state = self.read();
        let index = state
            .indices
            .get(name)
            .ok_or_else(|| IndexerError::NoSuchIndex(name.to_string()))?;
        Ok(index
            .get(value)
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default())
    }

    /// The objects indexed under `value` in index `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<Value>>, IndexerError> {
        let state = self.read();
        let index = state
            .indices
            .get(name)
            .ok_or_else(|| IndexerError::NoSuchIndex(name.to_string()))?;
        Ok(index
            .get(value)
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| state.items.get(k).cloned())
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Every value index `name` currently has objects under.
    pub fn index_values(&self, name: &str) -> Result<Vec<String>, IndexerError> {
        let state = self.read();
        let index = state
            .indices
            .get(name)
            .ok_or_else(|| IndexerError::NoSuchIndex(name.to_string()))?;
        Ok(index.keys().cloned().collect())
    }
}

impl KnownObjects for Indexer {
    fn list_keys(&self) -> Vec<String> {
        Indexer::list_keys(self)
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<Value>> {
        self.get(key)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(ns: &str, name: &str, owner: Option<&str>) -> Arc<Value> {
        let mut o = json!({"metadata": {"namespace": ns, "name": name}});
        if let Some(uid) = owner {
            o["metadata"]["ownerReferences"] = json!([{"uid": uid}]);
        }
        Arc::new(o)
    }

    fn owner_index(obj: &Value) -> Vec<String> {
        obj["metadata"]["ownerReferences"]
            .as_array()
            .map(|refs| {
                refs.iter()
                    .filter_map(|r| r["uid"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    fn names(objs: Vec<Arc<Value>>) -> Vec<String> {
        sorted(
            objs.iter()
                .map(|o| {
                    o["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect(),
        )
    }

    #[test]
    fn indices_follow_adds_updates_and_deletes() {
        let idx = Indexer::with_namespace_index();
        idx.add_index("owner", Arc::new(owner_index))
            .expect("new index");
        idx.add(obj("a", "x", Some("u1"))).expect("key");
        idx.add(obj("a", "y", Some("u1"))).expect("key");
        idx.add(obj("b", "z", None)).expect("key");
        assert_eq!(
            names(idx.by_index(NAMESPACE_INDEX, "a").expect("index")),
            ["x", "y"]
        );
        assert_eq!(
            names(idx.by_index("owner", "u1").expect("index")),
            ["x", "y"]
        );

        // An update moves the object from one index value to another.
        idx.update(obj("a", "y", Some("u2"))).expect("key");
        assert_eq!(names(idx.by_index("owner", "u1").expect("index")), ["x"]);
        assert_eq!(idx.index_keys("owner", "u2").expect("index"), ["a/y"]);

        idx.delete("a/x");
        assert!(idx.by_index("owner", "u1").expect("index").is_empty());
        // Values with no objects left disappear.
        assert_eq!(sorted(idx.index_values("owner").expect("index")), ["u2"]);
        assert_eq!(sorted(idx.list_keys()), ["a/y", "b/z"]);
        assert!(matches!(
            idx.by_index("nope", "a"),
            Err(IndexerError::NoSuchIndex(_))
        ));
    }

    #[test]
    fn replace_rebuilds_indices_and_late_indices_see_existing_objects() {
        let idx = Indexer::with_namespace_index();
        idx.add(obj("a", "x", Some("u1"))).expect("key");
        idx.replace(vec![obj("b", "y", Some("u1")), obj("b", "z", None)]);
        assert!(idx.get("a/x").is_none());
        assert!(idx
            .by_index(NAMESPACE_INDEX, "a")
            .expect("index")
            .is_empty());
        assert_eq!(
            names(idx.by_index(NAMESPACE_INDEX, "b").expect("index")),
            ["y", "z"]
        );

        idx.add_index("owner", Arc::new(owner_index))
            .expect("new index");
        assert_eq!(idx.index_keys("owner", "u1").expect("index"), ["b/y"]);
        assert!(matches!(
            idx.add_index("owner", Arc::new(owner_index)),
            Err(IndexerError::IndexExists(_))
        ));
        assert_eq!(idx.len(), 2);
        assert!(idx.add(Arc::new(json!({"metadata": {}}))).is_err());
    }
}
