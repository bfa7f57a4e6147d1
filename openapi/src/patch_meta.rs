//! Strategic-merge-patch metadata of the built-in kinds: upstream's `patchStrategy` and
//! `patchMergeKey` struct tags, as a small graph of types generated at build time from the
//! definitions' `x-kubernetes-patch-*` extensions (build/patch_meta.rs). A type lists only
//! the fields that carry a strategy or lead to one; every other field merges as upstream
//! merges an untagged field (maps recursively, lists replaced).

/// How a field is patched (upstream's `patchStrategy`, less `retainKeys`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strategy {
    /// Untagged: maps merge key by key, lists are replaced.
    #[default]
    Default,
    /// Lists merge: by `merge_key` for lists of objects, as a set for lists of primitives.
    Merge,
    /// The patch value replaces the field wholesale.
    Replace,
}

/// One field of a type.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub strategy: Strategy,
    pub merge_key: Option<&'static str>,
    /// `patchStrategy:"...retainKeys"`: clients send `$retainKeys` for this field.
    pub retain_keys: bool,
    /// The field's type, or its elements' type for a list.
    pub ty: Option<&'static PatchSchema>,
}

/// A type: the fields that matter to a strategic merge patch.
#[derive(Debug)]
pub struct PatchSchema {
    pub name: &'static str,
    pub fields: &'static [Field],
}

/// What an undescribed field gets.
pub static UNTAGGED: Field = Field {
    name: "",
    strategy: Strategy::Default,
    merge_key: None,
    retain_keys: false,
    ty: None,
};

impl PatchSchema {
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

impl Field {
    /// A struct-typed field with no strategy of its own.
    pub const fn nested(name: &'static str, ty: &'static PatchSchema) -> Self {
        Self {
            name,
            strategy: Strategy::Default,
            merge_key: None,
            retain_keys: false,
            ty: Some(ty),
        }
    }

    /// A list of objects merged by `key`.
    pub const fn merge(name: &'static str, key: &'static str) -> Self {
        Self {
            name,
            strategy: Strategy::Merge,
            merge_key: Some(key),
            retain_keys: false,
            ty: None,
        }
    }

    /// A list of objects merged by `key`, whose elements have nested strategies.
    pub const fn merge_of(name: &'static str, key: &'static str, ty: &'static PatchSchema) -> Self {
        Self {
            ty: Some(ty),
            ..Self::merge(name, key)
        }
    }

    /// `patchStrategy:"merge,retainKeys"`.
    pub const fn merge_retain(name: &'static str, key: &'static str) -> Self {
        Self {
            retain_keys: true,
            ..Self::merge(name, key)
        }
    }

    /// A list of primitives merged as an ordered set.
    pub const fn set(name: &'static str) -> Self {
        Self {
            name,
            strategy: Strategy::Merge,
            merge_key: None,
            retain_keys: false,
            ty: None,
        }
    }

    /// `patchStrategy:"retainKeys"` on a struct field.
    pub const fn retain(name: &'static str) -> Self {
        Self {
            name,
            strategy: Strategy::Default,
            merge_key: None,
            retain_keys: true,
            ty: None,
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/patch_meta.rs"));

/// The patch metadata of a built-in kind; `None` for kinds that are not built in (custom
/// resources), for which upstream refuses strategic merge patches.
pub fn patch_schema(group: &str, version: &str, kind: &str) -> Option<&'static PatchSchema> {
    KINDS
        .binary_search_by(|(g, v, k, _)| (*g, *v, *k).cmp(&(group, version, kind)))
        .ok()
        .map(|at| KINDS[at].3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_sorted_for_the_lookup() {
        assert!(KINDS
            .windows(2)
            .all(|w| (w[0].0, w[0].1, w[0].2) < (w[1].0, w[1].1, w[1].2)));
    }

    #[test]
    fn pod_lists_merge_by_their_keys() {
        let pod = patch_schema("", "v1", "Pod").expect("Pod");
        let spec = pod.field("spec").and_then(|f| f.ty).expect("spec");
        let containers = spec.field("containers").expect("containers");
        assert_eq!(containers.strategy, Strategy::Merge);
        assert_eq!(containers.merge_key, Some("name"));
        let container = containers.ty.expect("Container");
        assert_eq!(
            container.field("env").and_then(|f| f.merge_key),
            Some("name")
        );
        let volumes = spec.field("volumes").expect("volumes");
        assert!(volumes.retain_keys);
        let meta = pod.field("metadata").and_then(|f| f.ty).expect("metadata");
        assert_eq!(
            meta.field("finalizers").map(|f| (f.strategy, f.merge_key)),
            Some((Strategy::Merge, None))
        );
        assert_eq!(
            meta.field("ownerReferences").and_then(|f| f.merge_key),
            Some("uid")
        );
    }

    #[test]
    fn every_kind_with_metadata_has_its_finalizers_merged() {
        for (group, version, kind, root) in KINDS {
            if kind.ends_with("List") || root.field("metadata").is_none() {
                continue;
            }
            let meta = root
                .field("metadata")
                .and_then(|f| f.ty)
                .expect("ObjectMeta");
            assert_eq!(
                meta.field("finalizers").map(|f| f.strategy),
                Some(Strategy::Merge),
                "{group}/{version} {kind}"
            );
        }
    }

    #[test]
    fn custom_kinds_have_none() {
        assert!(patch_schema("example.com", "v1", "Widget").is_none());
        assert!(patch_schema("apps", "v1", "Pod").is_none());
        assert!(patch_schema("storage.k8s.io", "v1", "StorageClass").is_some());
        assert!(patch_schema("discovery.k8s.io", "v1", "EndpointSlice").is_some());
    }
}
