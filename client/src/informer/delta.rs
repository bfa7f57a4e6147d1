//! What a DeltaFIFO accumulates per object: the kinds of change, and the tombstone that stands
//! in for an object whose deletion was missed.

use std::sync::Arc;

use registry::store::Encoded;
use serde_json::Value;

use super::key::{object_key, KeyError};

/// The kind of a change, with upstream's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeltaType {
    Added,
    Updated,
    Deleted,
    /// A relist (after a watch broke or expired) saw the object; it may or may not have changed.
    Replaced,
    /// A periodic resync re-delivers the object unchanged.
    Sync,
}

/// What an object key can be taken from: a decoded object, or the stored form whose key the
/// registry read off the storage key.
pub trait Keyed {
    fn object_key(&self) -> Result<String, KeyError>;
}

impl Keyed for Arc<Value> {
    fn object_key(&self) -> Result<String, KeyError> {
        object_key(self)
    }
}

impl Keyed for Encoded {
    fn object_key(&self) -> Result<String, KeyError> {
        if self.key.is_empty() {
            return Err(KeyError);
        }
        Ok(self.key.clone())
    }
}

/// Stands in for an object that vanished while the watch was not looking: the relist no longer
/// has it, so the deletion was missed and `obj` (the last state known, if any) may be stale.
/// Handlers see decoded objects; the DeltaFIFO queues the stored form ([`Encoded`]).
#[derive(Clone, Debug, PartialEq)]
pub struct DeletedFinalStateUnknown<O = Arc<Value>> {
    pub key: String,
    pub obj: Option<O>,
}

/// The object of a delta: a real object, or the tombstone of a missed deletion.
#[derive(Clone, Debug, PartialEq)]
pub enum DeltaObject<O = Arc<Value>> {
    Object(O),
    DeletedFinalStateUnknown(DeletedFinalStateUnknown<O>),
}

impl<O: Keyed> DeltaObject<O> {
    pub fn key(&self) -> Result<String, KeyError> {
        match self {
            Self::Object(obj) => obj.object_key(),
            Self::DeletedFinalStateUnknown(t) => Ok(t.key.clone()),
        }
    }
}

impl<O> DeltaObject<O> {
    /// The object, or the last state a tombstone knew of.
    pub fn object(&self) -> Option<&O> {
        match self {
            Self::Object(obj) => Some(obj),
            Self::DeletedFinalStateUnknown(t) => t.obj.as_ref(),
        }
    }

    pub fn is_tombstone(&self) -> bool {
        matches!(self, Self::DeletedFinalStateUnknown(_))
    }
}

impl From<Value> for DeltaObject {
    fn from(v: Value) -> Self {
        Self::Object(Arc::new(v))
    }
}

impl From<Arc<Value>> for DeltaObject {
    fn from(v: Arc<Value>) -> Self {
        Self::Object(v)
    }
}

impl From<Encoded> for DeltaObject<Encoded> {
    fn from(v: Encoded) -> Self {
        Self::Object(v)
    }
}

impl<O> From<DeletedFinalStateUnknown<O>> for DeltaObject<O> {
    fn from(t: DeletedFinalStateUnknown<O>) -> Self {
        Self::DeletedFinalStateUnknown(t)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Delta {
    pub kind: DeltaType,
    /// The state after the change; for a deletion, the last state before it. Stored bytes,
    /// shared with the watch cache, while queued.
    pub object: DeltaObject<Encoded>,
}

/// Everything that happened to one object since it was last popped, oldest first. Never
/// empty when handed out.
pub type Deltas = Vec<Delta>;

/// Two deletions in a row say the same thing: keep the later one unless it is a tombstone,
/// whose object may be stale where the earlier one's is not.
pub(super) fn dedup_deletions(deltas: &mut Deltas) {
    let n = deltas.len();
    if n < 2 {
        return;
    }
    let (older, newer) = (&deltas[n - 2], &deltas[n - 1]);
    if older.kind != DeltaType::Deleted || newer.kind != DeltaType::Deleted {
        return;
    }
    if newer.object.is_tombstone() {
        deltas.pop();
    } else {
        deltas.remove(n - 2);
    }
}
