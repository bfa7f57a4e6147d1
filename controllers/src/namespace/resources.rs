//! Which resources hold namespace content (upstream's discovery of deletable namespaced
//! resources): the registry's Stores are read afresh at every sync, so resources installed
//! since (custom resources) are covered too.

use std::collections::HashSet;
use std::sync::Arc;

use registry::{ResourceInfo, Store, Verb};

/// Every namespaced resource that can be deleted from, once per group and resource: the
/// versions of one resource share their objects, and deleting through one is enough.
pub fn deletable(stores: Vec<Arc<Store>>) -> Vec<Arc<Store>> {
    let mut seen = HashSet::new();
    stores
        .into_iter()
        .filter(|s| s.info.namespaced && s.info.has_verb(Verb::Delete))
        .filter(|s| seen.insert((s.info.group.clone(), s.info.plural.clone())))
        .collect()
}

pub fn is_pods(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "pods"
}

/// `<resource>.<group>`, as the remaining-content condition names a resource (`pods.` for the
/// core group: upstream prints it so).
pub fn group_resource(info: &ResourceInfo) -> String {
    format!("{}.{}", info.plural, info.group)
}

/// Go's GroupVersionResource string (`/v1, Resource=pods`), as upstream's errors print it.
pub fn group_version_resource(info: &ResourceInfo) -> String {
    format!("{}/{}, Resource={}", info.group, info.version, info.plural)
}
