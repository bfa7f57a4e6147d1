//! What workers read from the graph: copies taken under the read lock, never references into
//! it, so no worker holds the lock across an await.

use super::super::reference::{ObjectReference, Uid};
use super::GraphBuilder;

/// What a worker needs to know of a node, copied out of the graph.
#[derive(Clone, Debug)]
pub struct ItemSnapshot {
    pub identity: ObjectReference,
    pub being_deleted: bool,
    pub deleting_dependents: bool,
    pub is_virtual: bool,
}

impl GraphBuilder {
    pub fn snapshot(&self, uid: &str) -> Option<ItemSnapshot> {
        self.read().get(uid).map(|n| ItemSnapshot {
            identity: n.identity.clone(),
            being_deleted: n.being_deleted,
            deleting_dependents: n.deleting_dependents,
            is_virtual: n.is_virtual,
        })
    }

    /// Whether a monitor has seen the object (true for nodes no longer in the graph).
    pub fn is_observed(&self, uid: &str) -> bool {
        self.read().get(uid).is_none_or(|n| !n.is_virtual)
    }

    /// Whether the node has dependents, and whether one of them is itself deleting its
    /// dependents (a possible cycle of foreground deletions).
    pub fn dependents_state(&self, uid: &str) -> (bool, bool) {
        let graph = self.read();
        let Some(node) = graph.get(uid) else {
            return (false, false);
        };
        let deleting = node
            .dependents
            .iter()
            .filter_map(|d| graph.get(d))
            .any(|d| d.deleting_dependents);
        (!node.dependents.is_empty(), deleting)
    }

    /// The dependents blocking the foreground deletion of `uid`, and whether each is itself
    /// deleting its dependents.
    pub fn blocking_dependents(&self, uid: &str) -> Vec<(Uid, bool)> {
        self.read()
            .blocking_dependents(uid)
            .into_iter()
            .map(|d| (d.identity.uid.clone(), d.deleting_dependents))
            .collect()
    }

    /// An owner and the identities of its dependents.
    pub fn owner_with_dependents(
        &self,
        uid: &str,
    ) -> Option<(ObjectReference, Vec<ObjectReference>)> {
        let graph = self.read();
        let node = graph.get(uid)?;
        let dependents = node
            .dependents
            .iter()
            .filter_map(|d| graph.get(d))
            .map(|d| d.identity.clone())
            .collect();
        Some((node.identity.clone(), dependents))
    }
}
