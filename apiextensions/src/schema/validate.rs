//! Compiled schemas and the validation of custom resources against them.

use super::convert::convert;
use super::messages::Context;
use super::node::Node;
use super::{defaults, extensions, prune};
use jsonschema::{Draft, PatternOptions, Validator};
use registry::error::Cause;
use serde_json::Value;

/// A schema compiled with the `jsonschema` crate, with what mapping its errors needs.
pub(super) struct Compiled {
    validator: Validator,
    converted: Value,
    pub node: Node,
}

impl Compiled {
    /// Compiles `schema`; a `resource_root` keeps only metadata's name and generateName rules.
    pub fn new(schema: &Value, resource_root: bool) -> Result<Compiled, String> {
        let converted = convert(schema, resource_root);
        // Draft 7 rather than 4: an integral float is an integer there, as in kube-openapi.
        // The `regex` engine's syntax is RE2's, which upstream's patterns are written in.
        let mut options = jsonschema::options()
            .with_draft(Draft::Draft7)
            .should_validate_formats(true)
            .should_ignore_unknown_formats(true)
            .with_pattern_options(PatternOptions::regex());
        for (name, check) in converted.formats {
            options = options.with_format(name, check);
        }
        let validator = options
            .build(&converted.schema)
            .map_err(|e| e.to_string())?;
        Ok(Compiled {
            validator,
            converted: converted.schema,
            node: Node::parse(schema),
        })
    }

    /// The schema errors of `value`, with field paths under `base`.
    pub fn errors(&self, value: &Value, base: &str) -> Vec<Cause> {
        if self.validator.is_valid(value) {
            return Vec::new();
        }
        let context = Context {
            root: value,
            schema: &self.converted,
            node: &self.node,
            base,
        };
        context.causes(self.validator.iter_errors(value))
    }
}

/// A served version's `schema.openAPIV3Schema`, compiled once when its CRD is installed.
pub struct CustomSchema {
    compiled: Compiled,
}

impl CustomSchema {
    /// Compiles a structural schema already accepted by `check_structural`. Err(message) if the
    /// jsonschema crate cannot compile it.
    pub fn compile(schema: &Value) -> Result<CustomSchema, String> {
        Ok(CustomSchema {
            compiled: Compiled::new(schema, true)?,
        })
    }

    /// Applies `default`s where fields are absent (and where null on a non-nullable field),
    /// recursing into properties, array items and additionalProperties as upstream's structural
    /// defaulting does; never inside x-kubernetes-preserve-unknown-fields parts that have no
    /// schema. Metadata is not defaulted (the CRD checks refuse defaults there).
    pub fn apply_defaults(&self, obj: &mut Value) {
        defaults::apply(obj, &self.compiled.node);
    }

    /// Upstream's pruning of a custom resource as it is decoded: drops fields the schema does
    /// not specify (keeping apiVersion, kind and metadata at the root and in embedded
    /// resources, and everything unknown under x-kubernetes-preserve-unknown-fields), then null
    /// fields whose schema neither allows null nor has a default.
    pub fn prune(&self, obj: &mut Value) {
        prune::prune(obj, Some(&self.compiled.node), true);
        prune::prune_nulls(obj, Some(&self.compiled.node));
    }

    /// Validates a whole custom resource: the schema's rules (apiVersion, kind and metadata
    /// aside, but for metadata.name / generateName rules at the root), then embedded resources,
    /// then the uniqueness of x-kubernetes-list-type `set` items and `map` keys. Causes carry
    /// upstream's field paths and wording.
    pub fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = self.compiled.errors(obj, "");
        causes.extend(extensions::embedded_errors(obj, &self.compiled.node, ""));
        causes.extend(extensions::list_errors(obj, &self.compiled.node, ""));
        causes
    }
}

/// Why `pattern` does not compile in the engine validation uses, if it does not. The crate
/// does not pass on the engine's reason, so the text names only the pattern, in Go's form.
pub(super) fn pattern_error(pattern: &str) -> Option<String> {
    jsonschema::options()
        .with_draft(Draft::Draft7)
        .should_validate_formats(false)
        .with_pattern_options(PatternOptions::regex())
        .build(&serde_json::json!({ "pattern": pattern }))
        .err()
        .map(|_| format!("error parsing regexp: invalid or unsupported syntax: `{pattern}`"))
}
