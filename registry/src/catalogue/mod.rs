//! The resource catalogue: what each resource is (names, scope, verbs, subresources, Table
//! columns, selectable fields, default deletion policy, its Strategy and Store hooks). A
//! built-in kind is one entry of `builtin.rs`; its strategic-merge-patch metadata comes from
//! the OpenAPI definitions by group, version and kind.

mod builtin;
mod printers;
mod priorities;
mod subresource;
mod verb;

pub use printers::{custom_columns, human_duration, is_default_class, DEFAULT_CLASS_ANNOTATIONS};
pub use priorities::{group_priority, version_priority};
pub use subresource::{
    Answer, ScaleSubresource, Speaks, SubresourceInfo, CREATE, READ_WRITE, SCALE,
};
pub use verb::Verb;
#[cfg(test)]
mod tests;

use std::sync::{Arc, RwLock};

use serde_json::Value;
use tokio::sync::watch;

use crate::error::Qualified;
use crate::store::hooks::StoreHooks;
use crate::strategy::{StrategyConfig, StrategyFactory};
use crate::Registry;

/// What deleting an owner does to its dependents when the request names no policy
/// (upstream's GarbageCollectionPolicy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcPolicy {
    /// Background: the owner goes now, the garbage collector removes dependents.
    DeleteDependents,
    /// Orphan: dependents stay (legacy default of core/v1 replicationcontrollers).
    OrphanDependents,
    /// The resource takes no part in garbage collection policies.
    Unsupported,
}

/// How one Table cell is computed from an object.
#[derive(Clone)]
pub enum Cell {
    /// metadata.name
    Name,
    /// Time since metadata.creationTimestamp, as kubectl prints it (`5m`, `3d`).
    Age,
    /// A simple JSON path (`.spec.type`); missing values print as `<none>`.
    Path(String),
    /// Upstream's printer logic for a column that is more than a path.
    Printer(fn(&Value) -> Value),
}

impl std::fmt::Debug for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cell::Name => write!(f, "Name"),
            Cell::Age => write!(f, "Age"),
            Cell::Path(p) => write!(f, "Path({p})"),
            Cell::Printer(_) => write!(f, "Printer"),
        }
    }
}

/// A Table column (metav1.TableColumnDefinition) and how to fill it.
#[derive(Clone, Debug)]
pub struct TableColumn {
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean`, `date`.
    pub kind: String,
    /// OpenAPI format: `name` for the NAME column, else empty.
    pub format: String,
    pub description: String,
    /// 0: shown by default; 1: only with `-o wide`.
    pub priority: i32,
    pub cell: Cell,
}

#[derive(Clone, Debug)]
pub struct ResourceInfo {
    /// "" for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    /// Upstream verb names: get, list, watch, create, update, patch, delete, deletecollection.
    pub verbs: Vec<String>,
    /// Nothing is stored (upstream's REST storage without a store: the authentication and
    /// authorization reviews). The registry builds no Store for it; the apiserver answers a
    /// create from the request alone.
    pub create_only: bool,
    /// Nothing is stored either: the apiserver answers get and list from the state of the
    /// server's components (upstream's componentstatuses).
    pub computed: bool,
    /// The subresources served, each with the kind it speaks and its verbs (status first,
    /// then scale, then the others, as the OpenAPI documents list them; discovery sorts).
    pub subresources: Vec<SubresourceInfo>,
    pub default_gc_policy: GcPolicy,
    pub columns: Vec<TableColumn>,
    /// The order of a list's Table rows, when upstream's printer sorts them (FlowSchemas by
    /// precedence); None: the list's own order.
    pub row_order: Option<fn(&Value, &Value) -> std::cmp::Ordering>,
    /// Selectable fields beyond metadata.name and metadata.namespace, as dotted paths into
    /// the object (`spec.nodeName`, `involvedObject.kind`).
    pub field_selectors: Vec<String>,
    /// Whether metadata.generation is tracked (kinds with a spec).
    pub has_generation: bool,
    /// The key segment under the storage prefix: `/pods`, `/deployments`, `/<group>/<plural>`
    /// for custom resources (upstream's layout).
    pub storage_path: String,
    /// What is special about the kind's writes and deletes.
    pub strategy: StrategyFactory,
    /// What its Store runs around writes, in order (Services' allocators).
    pub store_hooks: Vec<HooksFactory>,
}

/// Makes hooks a kind's Store runs around its writes, over the registry that serves it.
pub type HooksFactory = fn(&Registry) -> Arc<dyn StoreHooks>;

impl ResourceInfo {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Group and plural, as errors about the resource name it.
    pub fn qualified_resource(&self) -> Qualified {
        Qualified::new(&self.group, &self.plural)
    }

    /// Group and kind, as Invalid errors name it.
    pub fn qualified_kind(&self) -> Qualified {
        Qualified::new(&self.group, &self.kind)
    }

    pub fn has_verb(&self, verb: Verb) -> bool {
        self.verbs.iter().any(|v| v == verb.as_str())
    }

    /// How the OpenAPI documents describe the resource.
    pub fn openapi_spec(&self) -> openapi::ResourceSpec {
        let subresources = self
            .subresources
            .iter()
            .filter_map(SubresourceInfo::openapi_spec)
            .collect();
        openapi::ResourceSpec {
            group: self.group.clone(),
            version: self.version.clone(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
            namespaced: self.namespaced,
            verbs: self.verbs.clone(),
            subresources,
            // The kind's Strategy decides; made here only to ask (documents are built rarely).
            delete_returns_object: (self.strategy)(self, &StrategyConfig::default())
                .returns_deleted_object(),
        }
    }

    /// The subresource served under `name`.
    pub fn subresource(&self, name: &str) -> Option<&SubresourceInfo> {
        self.subresources.iter().find(|s| s.name == name)
    }

    pub fn has_subresource(&self, name: &str) -> bool {
        self.subresource(name).is_some()
    }

    /// Whether status is written through its own subresource only (the main resource's
    /// writes keep the stored status).
    pub fn status_subresource(&self) -> bool {
        self.has_subresource("status")
    }

    /// Where the `scale` subresource finds replicas, when there is one.
    pub fn scale(&self) -> Option<&ScaleSubresource> {
        self.subresource("scale").and_then(|s| s.scale.as_ref())
    }

    /// The group, version and kind its objects are stored as (upstream's storage version,
    /// which discovery's storageVersionHash is computed from); None when nothing is stored
    /// (the reviews, bindings, componentstatuses), for which upstream lists no hash.
    pub fn storage_version(&self) -> Option<(&str, &str, &str)> {
        if self.create_only || self.computed {
            return None;
        }
        Some(
            builtin::storage_version(&self.group, &self.plural).unwrap_or((
                &self.group,
                &self.version,
                &self.kind,
            )),
        )
    }
}

/// Every resource served, built-in and (later) custom. Readers take a snapshot; `changes`
/// tells discovery and controllers when the set changed.
pub struct Catalogue {
    resources: RwLock<Arc<Vec<Arc<ResourceInfo>>>>,
    changed: watch::Sender<u64>,
}

impl Catalogue {
    pub fn builtin() -> Self {
        let resources = builtin::resources().into_iter().map(Arc::new).collect();
        Self {
            resources: RwLock::new(Arc::new(resources)),
            changed: watch::channel(0).0,
        }
    }

    pub fn all(&self) -> Arc<Vec<Arc<ResourceInfo>>> {
        self.resources
            .read()
            .map(|r| r.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// The resource served at group/version/plural.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.all()
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
            .cloned()
    }

    /// The resource of a kind in a group (any served version).
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        self.all()
            .iter()
            .find(|r| r.group == group && r.kind == kind)
            .cloned()
    }

    /// Adds or replaces (same group, version, plural) a resource.
    pub fn upsert(&self, info: ResourceInfo) {
        self.update(|list| {
            list.retain(|r| {
                !(r.group == info.group && r.version == info.version && r.plural == info.plural)
            });
            list.push(Arc::new(info));
        });
    }

    /// Removes one version of group/plural.
    pub fn remove_version(&self, group: &str, version: &str, plural: &str) {
        self.update(|list| {
            list.retain(|r| !(r.group == group && r.version == version && r.plural == plural))
        });
    }

    /// Removes every version of group/plural.
    pub fn remove(&self, group: &str, plural: &str) {
        self.update(|list| list.retain(|r| !(r.group == group && r.plural == plural)));
    }

    fn update(&self, f: impl FnOnce(&mut Vec<Arc<ResourceInfo>>)) {
        let mut guard = self.resources.write().unwrap_or_else(|p| p.into_inner());
        let mut list = guard.as_ref().clone();
        f(&mut list);
        *guard = Arc::new(list);
        drop(guard);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Notified each time the set of resources changes.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}
