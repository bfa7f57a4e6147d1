//! Ownership edges as references come and go: owners a dependent names (virtual until seen),
//! owners a reference change may release, and references that cannot be right.

use tracing::{debug, trace};

use client::events::{EventType, InvolvedObject};

use super::super::graph::{Graph, Node};
use super::super::reference::{ObjectReference, OwnerReference, ReferenceDiff, Uid};
use super::GraphBuilder;

impl GraphBuilder {
    /// Records `dependent` as a dependent of each of `owners`, making virtual nodes for owners
    /// not seen yet (verified by a worker), and re-checks the dependent when a reference does
    /// not agree with what is known of its owner.
    pub(super) fn add_dependent_to_owners(
        &self,
        graph: &mut Graph,
        dependent: &Uid,
        owners: &[OwnerReference],
    ) {
        let Some(namespace) = graph.get(dependent).map(|n| n.identity.namespace.clone()) else {
            return;
        };
        let mut potentially_invalid = false;
        for owner in owners {
            let Some(owner_node) = graph.get_mut(&owner.uid) else {
                let mut node = Node::virtual_owner(ObjectReference::of_owner(owner, &namespace));
                node.dependents.insert(dependent.clone());
                trace!(owner = %node.identity, "virtual owner added");
                graph.insert(node);
                self.attempt_to_delete.add(owner.uid.clone());
                continue;
            };
            owner_node.dependents.insert(dependent.clone());
            if potentially_invalid {
                continue;
            }
            let owner_namespace = &owner_node.identity.namespace;
            let observed = !owner_node.is_virtual;
            if !owner_namespace.is_empty() && *owner_namespace != namespace {
                if observed {
                    // A namespaced owner seen in another namespace: definitely wrong.
                    let owner_node = owner_node.identity.clone();
                    if let Some(dep) = graph.get(dependent) {
                        debug!(item = %dep.identity, owner = %owner_node, "owner is in another namespace");
                        self.report_invalid_namespace(dep, &owner.uid);
                    }
                }
                potentially_invalid = true;
            } else if !owner_node.identity.matches_coordinates(owner) {
                if observed {
                    debug!(owner = %owner_node.identity, reference = ?owner, "reference does not match the observed owner");
                }
                potentially_invalid = true;
            } else if owner_namespace.is_empty() && *owner_namespace != namespace && !observed {
                // A virtual cluster-scoped owner named from a namespace: perhaps a namespaced
                // kind a cluster-scoped object referred to first.
                potentially_invalid = true;
            }
        }
        if potentially_invalid {
            self.attempt_to_delete.add(dependent.clone());
        }
    }

    /// A reference that was blocking its owner's foreground deletion was removed or stopped
    /// blocking: the owner may be free to go.
    pub(super) fn add_unblocked_owners_to_delete_queue(&self, graph: &Graph, diff: &ReferenceDiff) {
        let removed = diff
            .removed
            .iter()
            .filter(|r| r.blocks_owner_deletion())
            .map(|r| &r.uid);
        let unblocked = diff
            .changed
            .iter()
            .filter(|c| c.old.blocks_owner_deletion() && !c.new.blocks_owner_deletion())
            .map(|c| &c.new.uid);
        for uid in removed.chain(unblocked) {
            if graph.contains(uid) {
                self.attempt_to_delete.add(uid.clone());
            } else {
                trace!(uid = %uid, "unblocked owner not in the graph");
            }
        }
    }

    pub(super) fn report_invalid_namespace(&self, dependent: &Node, owner_uid: &Uid) {
        let Some(reference) = dependent.owners.iter().find(|o| o.uid == *owner_uid) else {
            return;
        };
        let absent = ObjectReference::of_owner(reference, &dependent.identity.namespace);
        let id = &dependent.identity;
        let involved = InvolvedObject {
            api_version: id.api_version.to_string(),
            kind: id.kind.to_string(),
            namespace: id.namespace.to_string(),
            name: id.name.to_string(),
            uid: id.uid.to_string(),
        };
        self.recorder.record(
            &involved,
            EventType::Warning,
            "OwnerRefInvalidNamespace",
            format!(
                "ownerRef {absent} does not exist in namespace \"{}\"",
                dependent.identity.namespace
            ),
        );
    }
}
