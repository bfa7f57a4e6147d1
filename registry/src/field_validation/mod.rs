//! Server-side field validation (upstream's `fieldValidation`): objects written to a kind
//! with an OpenAPI schema are checked against it. Undeclared fields are dropped, as decoding
//! into a Go struct drops them upstream, and reported as the directive says (Strict refuses,
//! Warn warns, Ignore is silent); values of the wrong type are refused whatever it says.

mod schema;
mod walk;

#[cfg(test)]
mod tests;

use std::sync::{Arc, PoisonError, RwLock};

use openapi::OpenApi;

pub use schema::Schema;
pub use walk::{check, Findings};

use serde_json::Value;

use crate::error::{Cause, Qualified, RegistryError, Result};
use crate::object;
use crate::options::{FieldValidation, WriteOptions};
use crate::validation::quote;
use crate::warning;

/// The compiled schemas of the kinds written so far, from one OpenAPI source. Until a source
/// is set nothing is checked (a registry built without one, as in tests of other layers).
#[derive(Default)]
pub struct FieldSchemas {
    source: RwLock<Option<Arc<OpenApi>>>,
    compiled: RwLock<Compiled>,
    /// The same kinds' schemas as server-side apply merges under them.
    merge: crate::field_manager::MergeSchemas,
}

#[derive(Default)]
struct Compiled {
    /// Bumped when the source or its kinds change, so a compile that raced it is dropped.
    generation: u64,
    /// A few dozen kinds: scanned by reference, so a lookup builds no owned key.
    kinds: Vec<Entry>,
}

struct Entry {
    group: String,
    version: String,
    kind: String,
    schema: Option<Arc<Schema>>,
}

impl FieldSchemas {
    pub fn set_source(&self, api: Arc<OpenApi>) {
        *self.source.write().unwrap_or_else(PoisonError::into_inner) = Some(api);
        self.invalidate();
    }

    /// Where schemas come from, once set.
    pub fn source(&self) -> Option<Arc<OpenApi>> {
        self.source
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets every compiled schema, e.g. after the source learnt a custom kind's change.
    pub fn invalidate(&self) {
        let mut compiled = self
            .compiled
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        compiled.generation += 1;
        compiled.kinds.clear();
        drop(compiled);
        self.merge.invalidate();
    }

    /// The kind's structured-merge schema (deduced when there is no source or no schema).
    pub fn merge_schema(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Arc<crate::field_manager::TypedSchema> {
        self.merge.get(|| self.source(), group, version, kind)
    }

    /// The kind's compiled schema; `None` when there is no source or the kind has no schema.
    /// The first call for a kind compiles it (milliseconds for the largest).
    pub fn get(&self, group: &str, version: &str, kind: &str) -> Option<Arc<Schema>> {
        let generation = {
            let compiled = self.compiled.read().unwrap_or_else(PoisonError::into_inner);
            let found = compiled
                .kinds
                .iter()
                .find(|e| e.kind == kind && e.group == group && e.version == version);
            if let Some(entry) = found {
                return entry.schema.clone();
            }
            compiled.generation
        };
        let source = self
            .source
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()?;
        let schema = source
            .schema_for(group, version, kind)
            .map(|resolved| Arc::new(Schema::compile(&resolved)));
        let mut compiled = self
            .compiled
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let known = compiled
            .kinds
            .iter()
            .any(|e| e.kind == kind && e.group == group && e.version == version);
        if compiled.generation == generation && !known {
            compiled.kinds.push(Entry {
                group: group.to_string(),
                version: version.to_string(),
                kind: kind.to_string(),
                schema: schema.clone(),
            });
        }
        schema
    }
}

/// What is being written, for the errors' words.
pub struct Written<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    /// The result of a patch rather than a decoded body: upstream refuses its unknown fields
    /// as an invalid `patch` (422) instead of a body it cannot decode (400).
    pub patched: bool,
}

impl FieldSchemas {
    /// Checks an object about to be written against its kind's schema, dropping unknown
    /// fields unless the directive refuses them, and judges what was found together with
    /// the strict decoding errors the body's decoder left in `opts`.
    pub fn validate(
        &self,
        written: &Written<'_>,
        obj: &mut Value,
        opts: &WriteOptions,
    ) -> Result<()> {
        let strict = opts.field_validation == FieldValidation::Strict;
        let findings = match self.get(written.group, written.version, written.kind) {
            // Strict keeps them: the request fails, and a patch's error shows them.
            Some(schema) => check(&schema, obj, !strict),
            None => Findings::default(),
        };
        judge(&findings, opts, written, obj)
    }
}

/// Applies the request's directive. Type errors come first: upstream's decoder fails on them
/// before strictness is considered.
fn judge(
    findings: &Findings,
    opts: &WriteOptions,
    written: &Written<'_>,
    obj: &Value,
) -> Result<()> {
    if !findings.invalid.is_empty() {
        return Err(RegistryError::invalid(
            &Qualified::new(written.group, written.kind),
            object::name(obj),
            findings.invalid.clone(),
        ));
    }
    let unknown = findings
        .unknown
        .iter()
        .map(|path| format!("unknown field {}", quote(path)));
    match opts.field_validation {
        FieldValidation::Ignore => Ok(()),
        FieldValidation::Warn => {
            opts.decode_errors.iter().cloned().for_each(warning::add);
            unknown.for_each(warning::add);
            Ok(())
        }
        FieldValidation::Strict => {
            let all: Vec<String> = opts.decode_errors.iter().cloned().chain(unknown).collect();
            if all.is_empty() {
                return Ok(());
            }
            let why = format!("strict decoding error: {}", all.join(", "));
            if written.patched {
                return Err(RegistryError::invalid(
                    &Qualified::default(),
                    "",
                    vec![Cause::invalid("patch", quote(&obj.to_string()), &why)],
                ));
            }
            let kind = written.kind;
            Err(RegistryError::BadRequest(format!(
                "{kind} in version {} cannot be handled as a {kind}: {why}",
                quote(written.version)
            )))
        }
    }
}
