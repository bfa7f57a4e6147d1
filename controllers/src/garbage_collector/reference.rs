//! How the collector names objects: an object's identity (the coordinates an ownerReference
//! carries, plus the namespace a client needs to reach it) and the ownerReferences read from
//! metadata.

use std::fmt;
use std::sync::Arc;

use serde_json::{json, Value};

pub use client::controller_utils::raw_owner_references;

use super::interned::Interned;

/// Object UIDs are cloned into queues and graph edges constantly; a shared str keeps that cheap.
pub type Uid = Arc<str>;

/// An object as the graph knows it. Field order is the sort order upstream uses to pick among
/// alternative identities (kind and apiVersion before namespace, namespace before name).
/// The graph holds one per object of the cluster: the values objects share are interned, and
/// the name is a `Box<str>` (8 bytes less than a `String`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectReference {
    pub kind: Interned,
    pub api_version: Interned,
    pub namespace: Interned,
    pub name: Box<str>,
    pub uid: Uid,
}

impl ObjectReference {
    /// The identity an owner reference implies for an owner living in `namespace` (the
    /// dependent's namespace, or "" when the owner is known to be cluster-scoped).
    pub fn of_owner(owner: &OwnerReference, namespace: &str) -> Self {
        Self {
            kind: owner.kind.clone(),
            api_version: owner.api_version.clone(),
            namespace: namespace.into(),
            name: owner.name.clone(),
            uid: owner.uid.clone(),
        }
    }

    /// Whether an owner reference names this object with the same uid, name, kind and
    /// apiVersion (the namespace is not part of a reference).
    pub fn matches_coordinates(&self, owner: &OwnerReference) -> bool {
        self.uid == owner.uid
            && self.name == owner.name
            && self.kind == owner.kind
            && self.api_version == owner.api_version
    }

    /// A metadata-only stand-in, for delete events the collector makes up itself.
    pub fn to_stub(&self) -> Value {
        json!({
            "apiVersion": self.api_version.as_str(),
            "kind": self.kind.as_str(),
            "metadata": {"name": &*self.name, "namespace": self.namespace.as_str(), "uid": &*self.uid},
        })
    }
}

impl fmt::Display for ObjectReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}/{}, namespace: {}, name: {}, uid: {}]",
            self.api_version, self.kind, self.namespace, self.name, self.uid
        )
    }
}

/// One entry of metadata.ownerReferences.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerReference {
    pub api_version: Interned,
    pub kind: Interned,
    pub name: Box<str>,
    pub uid: Uid,
    pub controller: Option<bool>,
    pub block_owner_deletion: Option<bool>,
}

impl OwnerReference {
    pub fn blocks_owner_deletion(&self) -> bool {
        self.block_owner_deletion == Some(true)
    }

    fn parse(value: &Value) -> Option<Self> {
        let text = |field: &str| value.get(field).and_then(Value::as_str);
        let uid = text("uid").filter(|u| !u.is_empty())?;
        Some(Self {
            api_version: text("apiVersion")?.into(),
            kind: text("kind")?.into(),
            name: text("name")?.into(),
            uid: Uid::from(uid),
            controller: value.get("controller").and_then(Value::as_bool),
            block_owner_deletion: value.get("blockOwnerDeletion").and_then(Value::as_bool),
        })
    }
}

/// The ownerReferences of an object. Entries the registry would never have admitted (no uid,
/// no kind) are skipped rather than failing the whole object.
pub fn owner_references(obj: &Value) -> Vec<OwnerReference> {
    raw_owner_references(obj)
        .as_array()
        .map(|refs| refs.iter().filter_map(OwnerReference::parse).collect())
        .unwrap_or_default()
}

/// An ownerReference before and after an update, matched by uid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangedReference {
    pub old: OwnerReference,
    pub new: OwnerReference,
}

/// What changed between two ownerReference lists, matched by owner uid.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReferenceDiff {
    pub added: Vec<OwnerReference>,
    pub removed: Vec<OwnerReference>,
    pub changed: Vec<ChangedReference>,
}

impl ReferenceDiff {
    pub fn between(old: &[OwnerReference], new: &[OwnerReference]) -> Self {
        let mut diff = Self::default();
        let mut unmatched: Vec<&OwnerReference> = old.iter().collect();
        for reference in new {
            match unmatched.iter().position(|o| o.uid == reference.uid) {
                Some(at) => {
                    let before = unmatched.swap_remove(at);
                    if before != reference {
                        diff.changed.push(ChangedReference {
                            old: before.clone(),
                            new: reference.clone(),
                        });
                    }
                }
                None => diff.added.push(reference.clone()),
            }
        }
        diff.removed = unmatched.into_iter().cloned().collect();
        diff
    }

    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Splits an apiVersion into group and version (`v1` is the core group).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn owner(uid: &str, block: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: format!("cm-{uid}").into(),
            uid: uid.into(),
            controller: None,
            block_owner_deletion: block,
        }
    }

    #[test]
    fn parses_owner_references_and_skips_malformed_ones() {
        let obj = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1",
             "controller": true, "blockOwnerDeletion": true},
            {"apiVersion": "v1", "kind": "Pod", "name": "no-uid"},
            "not an object",
        ]}});
        let refs = owner_references(&obj);
        assert_eq!(refs.len(), 1);
        assert_eq!(&*refs[0].uid, "u1");
        assert!(refs[0].blocks_owner_deletion());
        assert_eq!(refs[0].controller, Some(true));
        assert!(owner_references(&json!({"metadata": {}})).is_empty());
    }

    #[test]
    fn reference_diff_matches_by_uid() {
        let old = vec![owner("a", Some(true)), owner("b", None), owner("c", None)];
        let new = vec![owner("a", Some(false)), owner("c", None), owner("d", None)];
        let diff = ReferenceDiff::between(&old, &new);
        assert_eq!(diff.added, vec![owner("d", None)]);
        assert_eq!(diff.removed, vec![owner("b", None)]);
        assert_eq!(
            diff.changed,
            vec![ChangedReference {
                old: owner("a", Some(true)),
                new: owner("a", Some(false)),
            }]
        );
        assert!(ReferenceDiff::between(&old, &old).is_empty());
    }

    #[test]
    fn api_versions_split_into_group_and_version() {
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
    }
}
