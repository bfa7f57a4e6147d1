//! Who owns what after a write (upstream's merge.Updater): an update takes the fields it
//! changed from whoever owned them; an apply merges its configuration, prunes what its
//! applier stopped setting and nobody else owns, and fails on fields other managers own
//! unless forced.

use crate::compare::{compare, CompareOptions, Comparison};
use crate::conflict::Conflicts;
use crate::members::with_named_fields;
use crate::remove::remove_in_place;
use crate::schema::{Schema, TypeRef};
use crate::set::Set;
use crate::value_order::equal;
use crate::{merge, to_field_set, Error};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The fields one manager owns, in the API version it wrote them in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedSet {
    pub set: Set,
    pub api_version: String,
    /// Whether they were applied (rather than updated).
    pub applied: bool,
}

/// Every manager's fields, by manager identifier.
pub type ManagedFields = BTreeMap<String, VersionedSet>;

/// Why an apply failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// Other managers own fields the configuration changes (and it was not forced).
    Conflicts(Conflicts),
    /// The configuration or the live object does not fit the schema.
    Invalid(Error),
}

impl From<Error> for ApplyError {
    fn from(e: Error) -> Self {
        ApplyError::Invalid(e)
    }
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Conflicts(c) => c.fmt(f),
            ApplyError::Invalid(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ApplyError {}

/// What an apply leads to.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The object to write; `None` when it equals the live one.
    pub object: Option<Value>,
    pub managers: ManagedFields,
}

/// Works out ownership for writes of one type.
pub struct Updater<'a> {
    pub schema: &'a Schema,
    pub root: &'a TypeRef,
    pub options: CompareOptions,
    /// Fields no manager owns through this endpoint (a status subresource owns no spec).
    pub ignored: Set,
}

impl Updater<'_> {
    fn compare(&self, old: &Value, new: &Value) -> Result<Comparison, Error> {
        let comparison = compare(self.schema, self.root, old, new, self.options)?;
        Ok(if self.ignored.is_empty() {
            comparison
        } else {
            comparison.without(&self.ignored)
        })
    }

    fn without_ignored(&self, set: Set) -> Set {
        if self.ignored.is_empty() {
            set
        } else {
            set.recursive_difference(&self.ignored)
        }
    }

    /// The fields of other managers the write changed, by manager.
    fn clashes(
        &self,
        comparison: &Comparison,
        managers: &ManagedFields,
        writer: &str,
    ) -> BTreeMap<String, Set> {
        let changed = comparison.changed();
        managers
            .iter()
            .filter(|(manager, _)| manager.as_str() != writer)
            .filter_map(|(manager, owned)| {
                let clash = owned.set.intersection(&changed);
                (!clash.is_empty()).then(|| (manager.clone(), clash))
            })
            .collect()
    }

    /// Takes what the write changed (`clashes`) and removed from the other managers; those
    /// left with nothing are dropped (the writer too, as upstream).
    fn settle(
        comparison: &Comparison,
        clashes: &BTreeMap<String, Set>,
        managers: &mut ManagedFields,
        writer: &str,
    ) {
        for (manager, owned) in managers.iter_mut() {
            if manager == writer {
                continue;
            }
            if let Some(clash) = clashes.get(manager) {
                owned.set.subtract(clash);
            }
            owned.set.subtract(&comparison.removed);
        }
        managers.retain(|_, owned| !owned.set.is_empty());
    }

    /// An update (create, update or patch) by `manager` from `live` to `new`: it owns what
    /// it changed, besides what it owned and did not remove, and takes what it changed from
    /// whoever owned it. Never conflicts.
    pub fn update(
        &self,
        live: &Value,
        new: &Value,
        version: &str,
        managers: ManagedFields,
        manager: &str,
    ) -> Result<ManagedFields, Error> {
        let comparison = self.compare(live, new)?;
        let mut managers = managers;
        let clashes = self.clashes(&comparison, &managers, manager);
        Self::settle(&comparison, &clashes, &mut managers, manager);
        let mut set = managers
            .remove(manager)
            .map(|m| {
                let mut set = m.set;
                set.subtract(&comparison.removed);
                set
            })
            .unwrap_or_default();
        set.union_with(&comparison.added);
        set.union_with(&comparison.modified);
        let set = self.without_ignored(set);
        if !set.is_empty() {
            managers.insert(
                manager.to_string(),
                VersionedSet {
                    set,
                    api_version: version.to_string(),
                    applied: false,
                },
            );
        }
        Ok(managers)
    }

    /// An apply of `config` by `manager` over `live` (an empty object when there is none).
    /// The applier owns exactly what `config` sets; what it set last time and no longer sets
    /// is removed unless another manager owns it. Changing a field another manager owns is a
    /// conflict, unless `force`, which takes the field from it.
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        version: &str,
        mut managers: ManagedFields,
        manager: &str,
        force: bool,
    ) -> Result<Applied, ApplyError> {
        // First, so that a configuration with duplicate keys is refused before anything.
        let set = self.without_ignored(to_field_set(self.schema, self.root, config)?);
        let mut new = merge(self.schema, self.root, live, config)?;
        let last = managers.insert(
            manager.to_string(),
            VersionedSet {
                set,
                api_version: version.to_string(),
                applied: true,
            },
        );
        if let Some(last) = last.filter(|l| !l.set.is_empty()) {
            self.prune(&mut new, &managers, &last.set)?;
        }
        let comparison = self.compare(live, &new)?;
        let clashes = self.clashes(&comparison, &managers, manager);
        if !force && !clashes.is_empty() {
            return Err(ApplyError::Conflicts(Conflicts::from_managers(&clashes)));
        }
        Self::settle(&comparison, &clashes, &mut managers, manager);
        let object = (!equal(live, &new)).then_some(new);
        Ok(Applied { object, managers })
    }

    /// Removes from `merged` what the applier owned last time (`last`) and no manager (the
    /// applier included, by its new configuration) owns now. Struct fields count as owned
    /// when anything below them is, so a field goes whole only when nobody owns any of it;
    /// fields nobody ever owned stay unless they are below one that goes.
    fn prune(&self, merged: &mut Value, managers: &ManagedFields, last: &Set) -> Result<(), Error> {
        // The usual re-apply sets what it set before: nothing can go, and the schema walks
        // below are skipped. (Struct fields named by `last` lead to its paths, all owned.)
        let mut left: Option<Set> = None;
        for m in managers.values() {
            let next = left.as_ref().unwrap_or(last).difference(&m.set);
            if next.is_empty() {
                return Ok(());
            }
            left = Some(next);
        }
        let mut owned = Set::new();
        for m in managers.values() {
            owned.union_with(&m.set);
        }
        let owned = with_named_fields(self.schema, self.root, &owned)?;
        let last = with_named_fields(self.schema, self.root, last)?;
        let gone = last.difference(&owned);
        if gone.is_empty() {
            return Ok(());
        }
        remove_in_place(self.schema, self.root, merged, &gone)
    }
}

#[cfg(test)]
#[path = "updater_tests.rs"]
mod tests;
