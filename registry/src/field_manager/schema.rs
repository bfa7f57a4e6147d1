//! The structured-merge schema of each kind, built once from the kind's OpenAPI schema (the
//! same source field validation reads) and dropped with it when a custom kind changes.

use std::sync::{Arc, PoisonError, RwLock};

use openapi::OpenApi;
use structured_merge::from_openapi::from_root_schema;
use structured_merge::schema::{Atom, Schema, TypeRef, Untyped};
use structured_merge::CompareOptions;

const ROOT: &str = "root";

/// A kind's schema with the way its values are compared.
pub struct TypedSchema {
    pub schema: Schema,
    pub root: TypeRef,
    pub options: CompareOptions,
}

impl TypedSchema {
    /// For kinds with no schema: objects are granular maps, lists atomic (upstream's deduced
    /// type), as upstream tracks fields of a type it cannot find.
    pub fn deduced() -> TypedSchema {
        let mut schema = Schema::new();
        schema.insert(ROOT, Atom::Untyped(Untyped::Deduced));
        TypedSchema {
            schema,
            root: TypeRef::named(ROOT),
            options: CompareOptions {
                struct_members: true,
            },
        }
    }

    /// Custom resources are plain maps upstream, where every object that appears is a change
    /// of its own; built-in kinds are typed, where a struct field is there from the start.
    fn build(api: &OpenApi, group: &str, version: &str, kind: &str) -> TypedSchema {
        let custom = !openapi::is_builtin_kind(group, version, kind);
        let Some(resolved) = api.schema_for(group, version, kind) else {
            return TypedSchema::deduced();
        };
        match from_root_schema(&resolved, ROOT) {
            Ok(schema) => TypedSchema {
                schema,
                root: TypeRef::named(ROOT),
                options: CompareOptions {
                    struct_members: custom,
                },
            },
            Err(e) => {
                tracing::warn!(group, version, kind, error = %e, "no merge schema; fields are deduced");
                TypedSchema::deduced()
            }
        }
    }
}

struct Entry {
    group: String,
    version: String,
    kind: String,
    schema: Arc<TypedSchema>,
}

/// Built schemas by kind; a few dozen, scanned by reference.
#[derive(Default)]
pub struct MergeSchemas {
    entries: RwLock<(u64, Vec<Entry>)>,
}

impl MergeSchemas {
    pub fn invalidate(&self) {
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        entries.0 += 1;
        entries.1.clear();
    }

    /// The kind's schema; `source` is asked only when it is not built yet.
    pub fn get(
        &self,
        source: impl FnOnce() -> Option<Arc<OpenApi>>,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Arc<TypedSchema> {
        let generation = {
            let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
            let found = entries
                .1
                .iter()
                .find(|e| e.kind == kind && e.group == group && e.version == version);
            if let Some(e) = found {
                return e.schema.clone();
            }
            entries.0
        };
        let schema = Arc::new(match source() {
            Some(api) => TypedSchema::build(&api, group, version, kind),
            None => TypedSchema::deduced(),
        });
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        let known = entries
            .1
            .iter()
            .any(|e| e.kind == kind && e.group == group && e.version == version);
        if entries.0 == generation && !known {
            entries.1.push(Entry {
                group: group.to_string(),
                version: version.to_string(),
                kind: kind.to_string(),
                schema: schema.clone(),
            });
        }
        schema
    }
}
