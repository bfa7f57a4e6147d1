//! Field management (upstream's k8s.io/apimachinery/pkg/util/managedfields): who owns which
//! fields of an object, kept in `metadata.managedFields` on every write, and server-side
//! apply on top of it. The merge itself is the `structured-merge` crate's; this module is the
//! chain upstream wraps around it: decoding and encoding entries, manager identities,
//! stripping server-owned metadata, timestamps, the cap on update entries, and the upgrade
//! from client-side apply.

mod cap;
mod entries;
mod last_applied;
mod schema;

use serde_json::Value;
use structured_merge::{ApplyError, Conflicts, ManagedFields, Path, PathElement, Set, Updater};
use tracing::debug;

use crate::error::{Cause, RegistryError, Result};
use crate::object;

pub use entries::{decode, encode, is_reset, Managed, ManagerInfo, APPLY, UPDATE};
pub use schema::{MergeSchemas, TypedSchema};

/// The manager an update's own changes are first recorded under, before they join what the
/// writer owned already (upstream's managedFieldsUpdater).
const CURRENT_OPERATION: &str = "current-operation";

/// Who owns the fields of an object that was never applied to, at its first apply.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The manager kubectl's server-side apply uses; only it upgrades from client-side apply.
pub const KUBECTL: &str = "kubectl";

/// Metadata the server sets: nobody owns it (upstream's stripMetaManager).
const STRIPPED: [&[&str]; 12] = [
    &["apiVersion"],
    &["kind"],
    &["metadata"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "creationTimestamp"],
    &["metadata", "selfLink"],
    &["metadata", "uid"],
    &["metadata", "clusterName"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "resourceVersion"],
];

fn stripped() -> &'static Set {
    static SET: std::sync::LazyLock<Set> = std::sync::LazyLock::new(|| {
        Set::from_paths(
            STRIPPED
                .iter()
                .map(|p| p.iter().map(|f| PathElement::field(*f)).collect::<Vec<_>>()),
        )
    });
    &SET
}

/// The fields of one write: the kind's schema, the version written, and the endpoint
/// (`""`, `status`, `scale`) with the fields it leaves alone.
pub struct FieldManager {
    pub typed: std::sync::Arc<TypedSchema>,
    pub api_version: String,
    pub subresource: &'static str,
    /// Fields this endpoint resets: nobody gains or loses them through it.
    pub ignored: Set,
}

/// The object without its managedFields, and what they were.
fn take_managed(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"))
}

fn live_managed(live: Option<&Value>) -> Managed {
    let entries = live.and_then(|l| l.pointer("/metadata/managedFields"));
    decode(entries).unwrap_or_default()
}

/// Writes the managers into the object; none leaves no field, as upstream's omitempty.
pub fn put_managed(obj: &mut Value, managed: &Managed) {
    let meta = object::meta_mut(obj);
    if managed.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(encode(managed)));
    }
}

impl FieldManager {
    fn updater(&self) -> Updater<'_> {
        Updater {
            schema: &self.typed.schema,
            root: &self.typed.root,
            options: self.typed.options,
            ignored: self.ignored.clone(),
        }
    }

    fn identifier(&self, manager: &str, operation: &str) -> String {
        ManagerInfo {
            manager: manager.to_string(),
            operation: operation.to_string(),
            api_version: self.api_version.clone(),
            subresource: self.subresource.to_string(),
        }
        .identifier()
    }

    /// Records a create, update or patch by `manager` from `live` (None: a create) to `new`,
    /// whose managedFields are what the client sent (`requested`, taken off it by the
    /// caller). Never fails (upstream's UpdateNoErrors): when the fields cannot be worked out
    /// the live object's managers are kept.
    pub fn update(
        &self,
        live: Option<&Value>,
        new: &mut Value,
        requested: Option<Value>,
        manager: &str,
    ) {
        take_managed(new);
        let managed = if !self.subresource.is_empty() {
            live_managed(live)
        } else if is_reset(requested.as_ref()) {
            Managed::default()
        } else {
            match decode(requested.as_ref()) {
                Ok(m) if !m.is_empty() => m,
                _ => live_managed(live),
            }
        };
        // An existing object nobody manages stays unmanaged until someone applies
        // (upstream's skipNonAppliedManager); this is also what makes a reset stick.
        if managed.is_empty() && live.is_some() {
            return;
        }
        match self.track_update(live, new, managed, manager) {
            Ok(managed) => put_managed(new, &managed),
            Err(e) => {
                debug!(error = %e, "managedFields not updated; the live object's are kept");
                put_managed(new, &live_managed(live));
            }
        }
    }

    fn track_update(
        &self,
        live: Option<&Value>,
        new: &Value,
        mut managed: Managed,
        manager: &str,
    ) -> std::result::Result<Managed, structured_merge::Error> {
        // The live object's own managedFields compare as removed, which takes nothing from
        // anyone (nobody owns them): no copy of the object without them is needed.
        let empty = Value::Object(Default::default());
        let live = live.unwrap_or(&empty);
        let fields = std::mem::take(&mut managed.fields);
        let mut fields =
            self.updater()
                .update(live, new, &self.api_version, fields, CURRENT_OPERATION)?;
        if let Some(mut current) = fields.remove(CURRENT_OPERATION) {
            current.set.subtract(stripped());
            if !current.set.is_empty() {
                let id = self.identifier(manager, UPDATE);
                if let Some(previous) = fields.get(&id) {
                    current.set = current.set.union(&previous.set);
                }
                fields.insert(id.clone(), current);
                managed.times.insert(id, object::now());
            }
        }
        managed.fields = fields;
        cap::cap_update_managers(&mut managed);
        managed
            .times
            .retain(|id, _| managed.fields.contains_key(id));
        Ok(managed)
    }

    /// Server-side apply of `config` by `manager` over `live` (None: the object does not
    /// exist yet): the object to write, with its managers. Conflicts are a 409 unless
    /// `force`.
    pub fn apply(
        &self,
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
    ) -> Result<Value> {
        if config.pointer("/metadata/managedFields").is_some() {
            return Err(RegistryError::BadRequest(
                "metadata.managedFields must be nil".into(),
            ));
        }
        let mut managed = match live {
            Some(l) => decode(l.pointer("/metadata/managedFields")).map_err(|e| {
                RegistryError::Internal(format!("failed to decode managed fields: {}", e.0))
            })?,
            None => Managed::default(),
        };
        let mut live_plain = live
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        take_managed(&mut live_plain);
        // Fields of an object nobody manages yet belong to `before-first-apply`, so the
        // first applier conflicts with what it would change (upstream's skipNonApplied).
        if managed.is_empty() && live.is_some() {
            managed = self
                .track_update(None, &live_plain, Managed::default(), BEFORE_FIRST_APPLY)
                .map_err(|e| {
                    RegistryError::Internal(format!(
                        "failed to create manager for existing fields: {e}"
                    ))
                })?;
        }
        let id = self.identifier(manager, APPLY);
        let updater = self.updater();
        let attempt = |force: bool| {
            updater.apply(
                &live_plain,
                config,
                &self.api_version,
                managed.fields.clone(),
                &id,
                force,
            )
        };
        let applied = match attempt(force) {
            Err(ApplyError::Conflicts(conflicts)) if manager == KUBECTL => {
                match last_applied::allowed(&self.typed, live, &conflicts) {
                    last_applied::Upgrade::Force => attempt(true),
                    last_applied::Upgrade::Refuse(left) => Err(ApplyError::Conflicts(left)),
                }
            }
            other => other,
        };
        let applied = applied.map_err(|e| match e {
            ApplyError::Conflicts(c) => conflict_error(&c),
            ApplyError::Invalid(e) => RegistryError::BadRequest(e.to_string()),
        })?;
        let mut fields: ManagedFields = applied.managers;
        if let Some(mine) = fields.get_mut(&id) {
            mine.set.subtract(stripped());
            if mine.set.is_empty() {
                fields.remove(&id);
            }
        }
        let mut times = managed.times;
        let changed = applied.object.is_some();
        let mut out = applied.object.unwrap_or(live_plain);
        if changed {
            times.insert(id, object::now());
        }
        if manager == KUBECTL {
            last_applied::sync_annotation(&mut out, config);
        }
        let mut managed = Managed { fields, times };
        cap::cap_update_managers(&mut managed);
        managed
            .times
            .retain(|id, _| managed.fields.contains_key(id));
        put_managed(&mut out, &managed);
        Ok(out)
    }
}

/// Upstream's NewConflictError: 409 Conflict, one FieldManagerConflict cause per field.
pub fn conflict_error(conflicts: &Conflicts) -> RegistryError {
    let causes: Vec<Cause> = conflicts
        .iter()
        .map(|c| {
            Cause::new(
                "FieldManagerConflict",
                &c.path.to_string(),
                format!("conflict with {}", printed(&c.manager)),
            )
        })
        .collect();
    RegistryError::ApplyConflict {
        message: conflict_message(conflicts),
        causes,
    }
}

fn conflict_message(conflicts: &Conflicts) -> String {
    let all: Vec<_> = conflicts.iter().collect();
    if let [only] = all.as_slice() {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            printed(&only.manager),
            only.path
        );
    }
    let mut by_manager: std::collections::BTreeMap<&str, Vec<&Path>> = Default::default();
    for c in &all {
        by_manager.entry(&c.manager).or_default().push(&c.path);
    }
    let mut lines = Vec::new();
    for (manager, paths) in by_manager {
        lines.push(format!("conflicts with {}:", printed(manager)));
        lines.extend(paths.iter().map(|p| format!("- {p}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        all.len(),
        lines.join("\n")
    )
}

/// A manager as upstream's printManager names it in conflicts:
/// `"kubectl-client-side-apply" using apps/v1`, with the subresource when there is one.
fn printed(identifier: &str) -> String {
    let info = ManagerInfo::parse(identifier);
    let mut out = format!("{:?}", info.manager);
    if !info.subresource.is_empty() {
        out = format!("{out} with subresource {:?}", info.subresource);
    }
    if info.operation == UPDATE {
        out = format!("{out} using {}", info.api_version);
    }
    out
}

#[cfg(test)]
mod tests;
