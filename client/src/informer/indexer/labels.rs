//! What the indexer knows of an object without decoding it: enough to pick the objects a
//! label selector (and a controller reference) selects before paying for their decoding.

use std::sync::Arc;

use registry::object;
use registry::selector::labels::LabelSelector;
use serde_json::Value;

use crate::informer::controller_uid;

/// An object's `metadata.labels` with string values (what selectors read), sorted by key.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Labels(Box<[(Arc<str>, Arc<str>)]>);

impl Labels {
    /// `pairs` sorted by key, one per key.
    pub(super) fn new(pairs: Box<[(Arc<str>, Arc<str>)]>) -> Self {
        Self(pairs)
    }

    pub(super) fn into_pairs(self) -> Box<[(Arc<str>, Arc<str>)]> {
        self.0
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|at| &*self.0[at].1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// As `selector.matches_labels` on the decoded object's labels.
    pub fn matches(&self, selector: &LabelSelector) -> bool {
        selector.matches(&|key| self.get(key))
    }
}

/// What selections read of an object, interned as a whole: the pods of one ReplicaSet share
/// one copy. A [`super::View`] holds the record of its object rather than a copy of it.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Marks {
    pub(super) labels: Labels,
    pub(super) controller_uid: Option<Arc<str>>,
}

impl Marks {
    /// The labels and controller of `obj`, as the indexer would record them, but a copy of
    /// their own (for an object the indexer does not hold, such as a patch's answer).
    pub fn of(obj: &Value) -> Self {
        let mut pairs: Vec<(Arc<str>, Arc<str>)> = object::labels(obj)
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((Arc::from(k.as_str()), Arc::from(v.as_str()?))))
            .collect();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        Self {
            labels: Labels::new(pairs.into_boxed_slice()),
            controller_uid: controller_uid(obj).map(Arc::from),
        }
    }

    pub fn labels(&self) -> &Labels {
        &self.labels
    }

    /// The uid in the object's controller reference.
    pub fn controller_uid(&self) -> Option<&str> {
        self.controller_uid.as_deref()
    }
}

/// One held object as a selection sees it.
#[derive(Clone, Copy, Debug)]
pub struct Summary<'a> {
    pub(super) key: &'a str,
    pub(super) labels: &'a Labels,
    pub(super) controller_uid: Option<&'a str>,
}

impl<'a> Summary<'a> {
    /// The object's key (`namespace/name`, or `name`).
    pub fn key(&self) -> &'a str {
        self.key
    }

    /// The object's name, from its key.
    pub fn name(&self) -> &'a str {
        self.key.rsplit_once('/').map_or(self.key, |(_, name)| name)
    }

    pub fn labels(&self) -> &'a Labels {
        self.labels
    }

    /// The uid in the object's controller reference, as [`crate::informer::controller_uid`]
    /// reads it.
    pub fn controller_uid(&self) -> Option<&'a str> {
        self.controller_uid
    }
}
