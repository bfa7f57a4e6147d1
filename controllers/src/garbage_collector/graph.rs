//! The dependency graph (upstream's uidToNode): one node per object the monitors observed, plus
//! "virtual" nodes for owners referenced but not observed yet. Edges go both ways: a node keeps
//! its ownerReferences and the uids of the nodes that name it as owner.
//!
//! Only the graph builder writes it; workers read it. One lock guards the whole graph so a
//! worker never sees half of an event applied (upstream's per-field locks allow that).

use std::collections::{HashMap, HashSet};

use super::dependents::Dependents;
use super::reference::{ObjectReference, OwnerReference, Uid};

#[derive(Clone, Debug)]
pub struct Node {
    pub identity: ObjectReference,
    /// The object's ownerReferences as last observed (boxed: never grown in place, 8 bytes
    /// less than a `Vec`).
    pub owners: Box<[OwnerReference]>,
    /// Nodes whose ownerReferences name this one.
    pub dependents: Dependents,
    /// deletionTimestamp is set: a one-way trip.
    pub being_deleted: bool,
    /// Being deleted with the foregroundDeletion finalizer: waits for blocking dependents.
    pub deleting_dependents: bool,
    /// Made up from an ownerReference; not (yet) observed through a monitor.
    pub is_virtual: bool,
}

impl Node {
    pub fn observed(identity: ObjectReference, owners: Vec<OwnerReference>) -> Self {
        Self {
            identity,
            owners: owners.into_boxed_slice(),
            dependents: Dependents::default(),
            being_deleted: false,
            deleting_dependents: false,
            is_virtual: false,
        }
    }

    pub fn virtual_owner(identity: ObjectReference) -> Self {
        Self {
            is_virtual: true,
            ..Self::observed(identity, Vec::new())
        }
    }
}

#[derive(Default)]
pub struct Graph {
    /// Boxed: the table grows by doubling, and its empty slots are a pointer each rather
    /// than a whole node (about 100 bytes less per object of the cluster).
    nodes: HashMap<Uid, Box<Node>>,
}

impl Graph {
    pub fn get(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid).map(|n| &**n)
    }

    pub fn get_mut(&mut self, uid: &str) -> Option<&mut Node> {
        self.nodes.get_mut(uid).map(|n| &mut **n)
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.nodes.contains_key(uid)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values().map(|n| &**n)
    }

    /// Adds or replaces the node under its uid.
    pub fn insert(&mut self, node: Node) {
        self.nodes.insert(node.identity.uid.clone(), Box::new(node));
    }

    /// Removes a node and its edges from the owners it names; returns it with its dependents.
    pub fn remove(&mut self, uid: &str) -> Option<Node> {
        let node = self.nodes.remove(uid)?;
        self.remove_dependent_from_owners(&node.identity.uid, &node.owners);
        Some(*node)
    }

    pub fn remove_dependent_from_owners(&mut self, dependent: &Uid, owners: &[OwnerReference]) {
        for owner in owners {
            if let Some(owner) = self.nodes.get_mut(&*owner.uid) {
                owner.dependents.remove(dependent);
            }
        }
    }

    /// Dependents whose reference to `uid` has blockOwnerDeletion=true: what a foreground
    /// deletion of `uid` waits for.
    pub fn blocking_dependents(&self, uid: &str) -> Vec<&Node> {
        let Some(node) = self.nodes.get(uid) else {
            return Vec::new();
        };
        node.dependents
            .iter()
            .filter_map(|d| self.get(d))
            .filter(|d| {
                d.owners
                    .iter()
                    .any(|o| &*o.uid == uid && o.blocks_owner_deletion())
            })
            .collect()
    }

    /// The nodes among `dependents` whose references to `owner.uid` match `owner` in every
    /// coordinate and namespace, and those that refer to the same uid differently (a dependent
    /// with two such references can be in both).
    pub fn partition_dependents(
        &self,
        dependents: &[Uid],
        owner: &ObjectReference,
    ) -> (Vec<Uid>, Vec<Uid>) {
        let owner_namespaced = !owner.namespace.is_empty();
        let (mut matching, mut nonmatching) = (Vec::new(), Vec::new());
        for uid in dependents {
            let Some(dep) = self.nodes.get(uid) else {
                continue;
            };
            let (mut found_match, mut found_mismatch) = (false, false);
            if owner_namespaced && owner.namespace != dep.identity.namespace {
                // A namespaced owner can only own objects in its own namespace.
                found_mismatch = true;
            } else {
                for reference in dep.owners.iter().filter(|o| o.uid == owner.uid) {
                    if owner.matches_coordinates(reference) {
                        found_match = true;
                    } else {
                        found_mismatch = true;
                    }
                }
            }
            if found_match {
                matching.push(uid.clone());
            }
            if found_mismatch {
                nonmatching.push(uid.clone());
            }
        }
        (matching, nonmatching)
    }

    /// Another identity `dependents` give the owner `absent` (same uid, other coordinates or
    /// namespace): the first after `absent` in reference order, else the first overall.
    pub fn alternate_owner_identity(
        &self,
        dependents: &[Uid],
        absent: &ObjectReference,
    ) -> Option<ObjectReference> {
        let absent_cluster_scoped = absent.namespace.is_empty();
        let mut seen: HashSet<ObjectReference> = HashSet::from([absent.clone()]);
        let mut first: Option<ObjectReference> = None;
        let mut first_following: Option<ObjectReference> = None;
        for dep in dependents.iter().filter_map(|d| self.nodes.get(d)) {
            for reference in dep.owners.iter().filter(|o| o.uid == absent.uid) {
                if absent.matches_coordinates(reference)
                    && (absent_cluster_scoped || absent.namespace == dep.identity.namespace)
                {
                    continue;
                }
                let mut candidate = ObjectReference::of_owner(reference, &dep.identity.namespace);
                if absent_cluster_scoped
                    && candidate.api_version == absent.api_version
                    && candidate.kind == absent.kind
                {
                    // This kind was just verified cluster-scoped.
                    candidate.namespace = Default::default();
                }
                if !seen.insert(candidate.clone()) {
                    continue;
                }
                if first.as_ref().is_none_or(|f| candidate < *f) {
                    first = Some(candidate.clone());
                }
                if *absent < candidate && first_following.as_ref().is_none_or(|f| candidate < *f) {
                    first_following = Some(candidate);
                }
            }
        }
        first_following.or(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The graph holds a node per object of the cluster: 192 bytes with owned strings, an
    /// empty `HashSet` and a `Vec`; what the shared and boxed fields leave is 112.
    #[test]
    fn a_node_stays_small() {
        assert!(
            std::mem::size_of::<Node>() <= 112,
            "{}",
            std::mem::size_of::<Node>()
        );
    }
}
