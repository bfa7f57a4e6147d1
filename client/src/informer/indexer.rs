//! The informer's local cache (client-go's Indexer): objects by key, plus named indices that map
//! an index value (a namespace, an owner's uid, ...) to the keys of the objects that have it.
//!
//! Objects are held as the watch cache holds them (its bytes, shared, not copied) and decoded
//! when read. The values an object is indexed under are computed once, from the decode made
//! when it is put in, and kept with it, so taking it out or replacing it decodes nothing.
//! So are its labels and controller's uid, interned, so that callers can pick the objects a
//! selector matches (`by_index_selected`, `list_selected`) and decode only those.
//!
//! A reader that wants a few fields of many objects on every pass (a ReplicaSet's sync over
//! its pods) asks for a [`View`]: built once per stored revision and kept with the object,
//! so a pass over unchanged objects decodes nothing.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::fmt::Display;
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bytes::Bytes;
use registry::object;
use registry::projection::Projection;
use registry::store::{Decoder, Encoded};
use serde_json::Value;
use thiserror::Error;
use tracing::warn;

use self::intern::Interner;
pub use self::labels::{Labels, Marks, Summary};
pub use self::view::View;
use super::delta_fifo::KnownObjects;
use super::factory::controller_uid;

mod intern;
mod labels;
mod view;

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
    #[error("object {key} does not decode: {message}")]
    Decode { key: String, message: String },
}

/// An object as held: its stored bytes (shared with the watch cache) and its revision, which
/// [`Indexer::decode_held`] turns into the object as served.
pub(super) type Held = (Bytes, i64);

/// index value -> keys of the objects indexed under it. Values and keys are shared with the
/// items, so a namespace's name is held once however many objects it has.
type Index = HashMap<Arc<str>, HashSet<Arc<str>>>;

struct NamedIndex {
    name: String,
    func: IndexFunc,
    index: Index,
}

/// One object: its stored form and where it is indexed.
struct Item {
    value: Bytes,
    revision: i64,
    /// (position in `State::indices`, value) for every value the object is indexed under.
    indexed: Box<[(usize, Arc<str>)]>,
    /// Its labels and controller's uid, shared with the objects that have the same.
    marks: Arc<Marks>,
    /// The [`View`] of this revision, once a reader asked for it. A new revision is a new
    /// item, so a view is never kept past the revision it was built from.
    view: OnceLock<Arc<dyn Any + Send + Sync>>,
}

impl Item {
    fn summary<'a>(&'a self, key: &'a str) -> Summary<'a> {
        Summary {
            key,
            labels: &self.marks.labels,
            controller_uid: self.marks.controller_uid.as_deref(),
        }
    }

    fn held(&self) -> Held {
        (self.value.clone(), self.revision)
    }
}

#[derive(Default)]
struct State {
    items: HashMap<Arc<str>, Item>,
    indices: Vec<NamedIndex>,
    interned: Interner,
}

/// Files `key` under `value`; returns the index's own copy of the value.
fn file(index: &mut Index, value: String, key: &Arc<str>) -> Arc<str> {
    let shared = match index.get_key_value(value.as_str()) {
        Some((v, _)) => v.clone(),
        None => Arc::from(value),
    };
    index.entry(shared.clone()).or_default().insert(key.clone());
    shared
}

impl State {
    fn index(&mut self, key: &Arc<str>, obj: &Value) -> Box<[(usize, Arc<str>)]> {
        let mut indexed = Vec::new();
        for (at, named) in self.indices.iter_mut().enumerate() {
            for value in (named.func)(obj) {
                indexed.push((at, file(&mut named.index, value, key)));
            }
        }
        indexed.into_boxed_slice()
    }

    /// Takes `item` out of the indices and gives back its interned parts.
    fn forget(&mut self, key: &str, item: Item) -> (Bytes, i64) {
        self.unindex(key, &item);
        let Item {
            value,
            revision,
            marks,
            view,
            ..
        } = item;
        // A view may hold the marks too: gone first, the interner sees the item's copy alone.
        drop(view);
        self.interned.release_marks(marks);
        (value, revision)
    }

    fn unindex(&mut self, key: &str, item: &Item) {
        for (at, value) in &*item.indexed {
            let Some(named) = self.indices.get_mut(*at) else {
                continue;
            };
            if let Some(keys) = named.index.get_mut(value) {
                keys.remove(key);
                // Empty sets would pile up for every namespace or owner ever seen.
                if keys.is_empty() {
                    named.index.remove(value);
                }
            }
        }
    }

    /// `obj` is `encoded` decoded: the indices read it.
    fn put(&mut self, encoded: Encoded, obj: &Value) {
        // Interned before the old version is forgotten: an update that keeps the labels
        // keeps their copy.
        let marks = self.interned.marks(
            object::labels(obj)
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?))),
            controller_uid(obj),
        );
        let key = match self.items.remove_entry(encoded.key.as_str()) {
            Some((key, old)) => {
                self.forget(&key, old);
                key
            }
            None => Arc::from(encoded.key),
        };
        let indexed = self.index(&key, obj);
        let item = Item {
            value: encoded.value,
            revision: encoded.revision,
            indexed,
            marks,
            view: OnceLock::new(),
        };
        self.items.insert(key, item);
    }

    fn remove(&mut self, key: &str) -> Option<Encoded> {
        let (key, old) = self.items.remove_entry(key)?;
        let (value, revision) = self.forget(&key, old);
        Some(Encoded {
            key: key.to_string(),
            value,
            revision,
        })
    }

    fn named(&self, name: &str) -> Result<&Index, IndexerError> {
        self.indices
            .iter()
            .find(|n| n.name == name)
            .map(|n| &n.index)
            .ok_or_else(|| IndexerError::NoSuchIndex(name.to_string()))
    }
}

/// Thread-safe; cheap to share behind an `Arc`. Readers see whole updates only.
#[derive(Default)]
pub struct Indexer {
    state: RwLock<State>,
    /// How the stored objects become what the resource serves.
    decoder: Decoder,
    /// Reads that decoded an object, for tests of what a selection decodes.
    #[cfg(test)]
    decodes: std::sync::atomic::AtomicUsize,
}

impl Indexer {
    /// An indexer with no indices, decoding objects with `decoder`.
    pub fn new(decoder: Decoder) -> Self {
        Self {
            state: RwLock::default(),
            decoder,
            #[cfg(test)]
            decodes: Default::default(),
        }
    }

    /// An indexer with the namespace index, which most controllers want.
    pub fn with_namespace_index(decoder: Decoder) -> Self {
        let indexer = Self::new(decoder);
        // A fresh indexer has no index of that name yet.
        let _ = indexer.add_index(NAMESPACE_INDEX, Arc::new(namespace_index));
        indexer
    }

    /// How the held objects are decoded.
    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The object as served, or None (logged) if its bytes do not decode, which bytes that
    /// decoded when put in cannot fail to do.
    pub(super) fn decode_held(&self, (value, revision): &Held) -> Option<Arc<Value>> {
        self.decode(value, *revision, None)
    }

    /// A stored state handed to the informer (held here or not), as served; None, logged,
    /// if it does not decode.
    pub(super) fn decode_encoded(&self, encoded: &Encoded) -> Option<Arc<Value>> {
        self.decode(&encoded.value, encoded.revision, Some(&encoded.key))
    }

    fn decode(&self, value: &Bytes, revision: i64, key: Option<&str>) -> Option<Arc<Value>> {
        self.decode_with(key, || self.decoder.decode_bytes(value, revision))
            .map(Arc::new)
    }

    /// Every read that decodes a held object goes through here, whole or in part: one that
    /// fails is logged and left out (bytes that decoded when put in cannot fail to).
    fn decode_with<T, E: Display>(
        &self,
        key: Option<&str>,
        decode: impl FnOnce() -> Result<T, E>,
    ) -> Option<T> {
        #[cfg(test)]
        self.decodes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        match decode() {
            Ok(obj) => Some(obj),
            Err(error) => {
                warn!(key, %error, "object does not decode");
                None
            }
        }
    }

    fn decode_all(&self, held: Vec<Held>) -> Vec<Arc<Value>> {
        held.iter()
            .filter_map(|held| self.decode_held(held))
            .collect()
    }

    /// Adds an index, built at once over the objects already held (each decoded once).
    pub fn add_index(&self, name: &str, func: IndexFunc) -> Result<(), IndexerError> {
        let mut state = self.write();
        if state.indices.iter().any(|n| n.name == name) {
            return Err(IndexerError::IndexExists(name.to_string()));
        }
        let at = state.indices.len();
        let mut index = Index::new();
        for (key, item) in state.items.iter_mut() {
            let Some(obj) = self.decode(&item.value, item.revision, Some(key)) else {
                continue;
            };
            let filed = func(&obj)
                .into_iter()
                .map(|v| (at, file(&mut index, v, key)));
            let mut indexed = std::mem::take(&mut item.indexed).into_vec();
            indexed.extend(filed);
            item.indexed = indexed.into_boxed_slice();
        }
        state.indices.push(NamedIndex {
            name: name.to_string(),
            func,
            index,
        });
        Ok(())
    }

    /// Adds or replaces the object under its key, decoding it once for the indices; returns
    /// that decode (what the informer hands its handlers).
    pub fn add(&self, encoded: Encoded) -> Result<Arc<Value>, IndexerError> {
        let obj = self
            .decoder
            .decode(&encoded)
            .map_err(|e| IndexerError::Decode {
                key: encoded.key.clone(),
                message: e.to_string(),
            })?;
        let obj = Arc::new(obj);
        self.write().put(encoded, &obj);
        Ok(obj)
    }

    /// The same as [`Indexer::add`]: the key decides what is replaced.
    pub fn update(&self, encoded: Encoded) -> Result<Arc<Value>, IndexerError> {
        self.add(encoded)
    }

    /// Removes the object under `key`, returning its stored form.
    pub fn delete(&self, key: &str) -> Option<Encoded> {
        self.write().remove(key)
    }

    /// Swaps the whole content for `objs`; an object that does not decode is left out.
    pub fn replace(&self, objs: Vec<Encoded>) {
        let mut state = self.write();
        state.items.clear();
        state.interned.clear();
        for named in &mut state.indices {
            named.index.clear();
        }
        for encoded in objs {
            match self.decoder.decode(&encoded) {
                Ok(obj) => state.put(encoded, &obj),
                Err(error) => warn!(key = %encoded.key, %error, "object does not decode; left out"),
            }
        }
    }

    /// The object under `key`, decoded.
    pub fn get(&self, key: &str) -> Option<Arc<Value>> {
        let (value, revision) = {
            let state = self.read();
            let item = state.items.get(key)?;
            (item.value.clone(), item.revision)
        };
        self.decode(&value, revision, Some(key))
    }

    /// The object under `key` as stored: the watch cache's bytes.
    pub fn get_encoded(&self, key: &str) -> Option<Encoded> {
        let state = self.read();
        let (key, item) = state.items.get_key_value(key)?;
        Some(Encoded {
            key: key.to_string(),
            value: item.value.clone(),
            revision: item.revision,
        })
    }

    /// Every object, decoded (outside the lock: writers do not wait for the decoding).
    pub fn list(&self) -> Vec<Arc<Value>> {
        self.list_selected(|_| true)
    }

    /// The objects `keep` picks from what is known of them undecoded; only those are
    /// decoded. `keep` runs under the indexer's lock: it must not call back into it.
    pub fn list_selected(&self, keep: impl Fn(&Summary<'_>) -> bool) -> Vec<Arc<Value>> {
        self.decode_all(self.held_selected(keep))
    }

    /// Every object as held, undecoded: a snapshot that costs a reference count per object,
    /// for a reader that decodes them one at a time later ([`Indexer::decode_held`]).
    pub(super) fn list_held(&self) -> Vec<Held> {
        self.held_selected(|_| true)
    }

    fn held_selected(&self, keep: impl Fn(&Summary<'_>) -> bool) -> Vec<Held> {
        self.read()
            .items
            .iter()
            .filter(|(key, item)| keep(&item.summary(key)))
            .map(|(_, item)| item.held())
            .collect()
    }

    pub fn list_keys(&self) -> Vec<String> {
        self.read().items.keys().map(|k| k.to_string()).collect()
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
        Ok(state
            .named(name)?
            .get(value)
            .map(|keys| keys.iter().map(|k| k.to_string()).collect())
            .unwrap_or_default())
    }

    /// The objects indexed under `value` in index `name`, decoded.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<Value>>, IndexerError> {
        self.by_index_selected(name, value, |_| true)
    }

    /// The objects indexed under `value` in index `name` that `keep` picks from what is
    /// known of them undecoded (labels, controller); only those are decoded. `keep` runs
    /// under the indexer's lock: it must not call back into it.
    pub fn by_index_selected(
        &self,
        name: &str,
        value: &str,
        keep: impl Fn(&Summary<'_>) -> bool,
    ) -> Result<Vec<Arc<Value>>, IndexerError> {
        Ok(self.decode_all(self.held_by_index(name, value, keep)?))
    }

    /// Like [`Indexer::by_index_selected`], each object decoded only as far as `projection`
    /// keeps (for a sync that reads a few fields of many objects); the values are not the
    /// informer's shared ones, and not whole.
    pub fn by_index_projected(
        &self,
        name: &str,
        value: &str,
        keep: impl Fn(&Summary<'_>) -> bool,
        projection: Projection,
    ) -> Result<Vec<Arc<Value>>, IndexerError> {
        let held = self.by_index_walk(name, value, keep, |key, item| (key.clone(), item.held()))?;
        Ok(held
            .iter()
            .filter_map(|(key, (value, revision))| {
                self.decode_with(Some(key), || {
                    self.decoder.decode_projected(value, *revision, projection)
                })
            })
            .map(Arc::new)
            .collect())
    }

    /// The stored bytes of the objects under `value` in index `name` that `keep` picks.
    fn held_by_index(
        &self,
        name: &str,
        value: &str,
        keep: impl Fn(&Summary<'_>) -> bool,
    ) -> Result<Vec<Held>, IndexerError> {
        self.by_index_walk(name, value, keep, |_, item| item.held())
    }

    /// `take` of each object under `value` in index `name` that `keep` picks, under the lock.
    fn by_index_walk<R>(
        &self,
        name: &str,
        value: &str,
        keep: impl Fn(&Summary<'_>) -> bool,
        mut take: impl FnMut(&Arc<str>, &Item) -> R,
    ) -> Result<Vec<R>, IndexerError> {
        let state = self.read();
        let Some(keys) = state.named(name)?.get(value) else {
            return Ok(Vec::new());
        };
        Ok(keys
            .iter()
            .filter_map(|k| state.items.get_key_value(k))
            .filter(|(key, item)| keep(&item.summary(key)))
            .map(|(key, item)| take(key, item))
            .collect())
    }

    /// Every value index `name` currently has objects under.
    pub fn index_values(&self, name: &str) -> Result<Vec<String>, IndexerError> {
        let state = self.read();
        Ok(state.named(name)?.keys().map(|v| v.to_string()).collect())
    }
}

#[cfg(test)]
impl Indexer {
    /// How many reads have decoded an object so far.
    pub(super) fn decodes(&self) -> usize {
        self.decodes.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// (distinct strings, distinct label-and-controller records) held for the objects.
    fn interned_sizes(&self) -> (usize, usize) {
        self.read().interned.sizes()
    }
}

impl KnownObjects for Indexer {
    fn list_keys(&self) -> Vec<String> {
        Indexer::list_keys(self)
    }

    fn get_by_key(&self, key: &str) -> Option<Encoded> {
        self.get_encoded(key)
    }
}

#[cfg(test)]
mod tests;
