//! Views: what a reader keeps of each object it reads again and again, built from the object's
//! stored bytes once per revision and held with the object until it changes or goes.
//!
//! Built outside the indexer's lock (writers do not wait for the decoding) and kept only if
//! the object is still at the revision it was built from, so a view of an older revision is
//! never kept.

use std::any::Any;
use std::sync::Arc;

use bytes::Bytes;
use registry::projection::Projection;
use serde_json::Value;

use super::{Indexer, IndexerError, Item, Marks, Summary};

/// A typed summary of an object, small enough to keep beside every object of its kind.
///
/// An indexer keeps one view type per object: the first one asked for. A reader asking for
/// another gets it built afresh on every read.
pub trait View: Send + Sync + Sized + 'static {
    /// What of the stored object [`View::build`] reads; the rest is skipped undecoded.
    const FIELDS: Projection;

    /// The view of `obj` (the object as served, decoded with [`View::FIELDS`] only), held
    /// under `key` at `revision`; `marks` are its labels and controller as the indexer holds
    /// them.
    fn build(key: &Arc<str>, marks: &Arc<Marks>, revision: i64, obj: &Value) -> Self;
}

/// One object of a read: its view if kept, else what building one takes.
enum Looked<T> {
    Kept(Arc<T>),
    Missing {
        key: Arc<str>,
        marks: Arc<Marks>,
        value: Bytes,
        revision: i64,
    },
}

fn look<T: View>(key: &Arc<str>, item: &Item) -> Looked<T> {
    match item.view.get().map(|v| v.clone().downcast::<T>()) {
        Some(Ok(view)) => Looked::Kept(view),
        _ => Looked::Missing {
            key: key.clone(),
            marks: item.marks.clone(),
            value: item.value.clone(),
            revision: item.revision,
        },
    }
}

impl Indexer {
    /// The views of the objects indexed under `value` in index `name` that `keep` picks.
    /// An object read before at the same revision costs a reference count; only the others
    /// are decoded (as far as [`View::FIELDS`] asks). `keep` runs under the indexer's lock:
    /// it must not call back into it.
    pub fn by_index_view<T: View>(
        &self,
        name: &str,
        value: &str,
        keep: impl Fn(&Summary<'_>) -> bool,
    ) -> Result<Vec<Arc<T>>, IndexerError> {
        let looked = self.by_index_walk(name, value, keep, look::<T>)?;
        let mut views = Vec::with_capacity(looked.len());
        let mut built = Vec::new();
        for looked in looked {
            match looked {
                Looked::Kept(view) => views.push(view),
                Looked::Missing {
                    key,
                    marks,
                    value,
                    revision,
                } => {
                    let Some(obj) = self.decode_with(Some(&key), || {
                        self.decoder.decode_projected(&value, revision, T::FIELDS)
                    }) else {
                        continue;
                    };
                    let view = Arc::new(T::build(&key, &marks, revision, &obj));
                    views.push(view.clone());
                    built.push((key, revision, view));
                }
            }
        }
        self.keep_views(built);
        Ok(views)
    }

    /// Keeps each built view with its object, if the object is still at the view's revision.
    fn keep_views<T: View>(&self, built: Vec<(Arc<str>, i64, Arc<T>)>) {
        if built.is_empty() {
            return;
        }
        let state = self.read();
        for (key, revision, view) in built {
            let Some(item) = state.items.get(&key) else {
                continue;
            };
            if item.revision == revision {
                // Another reader may have kept one of the same revision first: either does.
                let _ = item.view.set(view as Arc<dyn Any + Send + Sync>);
            }
        }
    }
}

#[cfg(test)]
mod tests;
