//! The `jsonschema` crate's errors as upstream's causes. Upstream validates with kube-openapi,
//! which names a value by its path (`spec.items[2].name`; map values by `.key` too) and words
//! each failure (`spec.replicas in body should be less than or equal to 10`); apiextensions then
//! turns each into a field error whose kind and value display depend on the failure.

use super::convert::FORMAT_PREFIX;
use super::node::Node;
use super::{cause, child};
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::ValidationError;
use registry::error::Cause;
use registry::go_fmt::{error_value, float, is_int, json_type};
use registry::validation::quote;
use serde_json::{Map, Value};

/// What the mapping needs besides the error: the validated value, the converted schema the
/// error's schema path points into, the structural node (to tell properties from map keys), and
/// the field path the value sits at.
pub(super) struct Context<'a> {
    pub root: &'a Value,
    pub schema: &'a Value,
    pub node: &'a Node,
    pub base: &'a str,
}

impl Context<'_> {
    pub fn causes<'e>(&self, errors: impl Iterator<Item = ValidationError<'e>>) -> Vec<Cause> {
        let mut out = Vec::new();
        for error in errors {
            self.map(&error, &mut out);
        }
        out
    }

    fn map(&self, error: &ValidationError<'_>, out: &mut Vec<Cause>) {
        let name = self.name(error.instance_path().as_str());
        let field = self.field(&name);
        let value: &Value = error.instance();
        let invalid = |shown: String, why: String| Cause::invalid(&field, shown, &why);
        let cause = match error.kind() {
            ValidationErrorKind::Type { kind } => {
                let (expected, actual) = self.type_texts(error, kind, value);
                let q = quote(&actual);
                type_invalid(
                    &field,
                    &q,
                    format!("{name} in body must be of type {expected}: {q}"),
                )
            }
            ValidationErrorKind::Format { format } => {
                let format = format.strip_prefix(FORMAT_PREFIX).unwrap_or(format);
                let q = error_value(value);
                type_invalid(
                    &field,
                    &q,
                    format!("{name} in body must be of type {format}: {q}"),
                )
            }
            ValidationErrorKind::Required { property } => {
                let property = property.as_str().unwrap_or_default();
                Cause::required(&self.field(&format!("{name}.{property}")))
            }
            ValidationErrorKind::Enum { options } => not_supported(&field, value, options),
            ValidationErrorKind::Maximum { limit } => invalid(
                error_value(value),
                format!(
                    "{name} in body should be less than or equal to {}",
                    bound(limit, value)
                ),
            ),
            ValidationErrorKind::ExclusiveMaximum { limit } => invalid(
                error_value(value),
                format!("{name} in body should be less than {}", bound(limit, value)),
            ),
            ValidationErrorKind::Minimum { limit } => invalid(
                error_value(value),
                format!(
                    "{name} in body should be greater than or equal to {}",
                    bound(limit, value)
                ),
            ),
            ValidationErrorKind::ExclusiveMinimum { limit } => invalid(
                error_value(value),
                format!(
                    "{name} in body should be greater than {}",
                    bound(limit, value)
                ),
            ),
            ValidationErrorKind::MultipleOf { multiple_of } => {
                let factor = match value {
                    Value::Number(n) if is_int(n) && multiple_of.fract() == 0.0 => {
                        format!("{}", *multiple_of as i64)
                    }
                    _ => float(*multiple_of),
                };
                invalid(
                    error_value(value),
                    format!("{name} in body should be a multiple of {factor}"),
                )
            }
            ValidationErrorKind::MaxLength { limit } => {
                let unit = if *limit == 1 { "byte" } else { "bytes" };
                let message = format!("Too long: may not be more than {limit} {unit}");
                cause("FieldValueTooLong", &field, message)
            }
            ValidationErrorKind::MinLength { limit } => invalid(
                error_value(value),
                format!("{name} in body should be at least {limit} chars long"),
            ),
            ValidationErrorKind::Pattern { pattern } => invalid(
                error_value(value),
                format!("{name} in body should match '{pattern}'"),
            ),
            ValidationErrorKind::MaxItems { limit } => too_many(&field, size(value), *limit),
            ValidationErrorKind::MinItems { limit } => invalid(
                size(value).to_string(),
                format!("{name} in body should have at least {limit} items"),
            ),
            ValidationErrorKind::UniqueItems => invalid(
                "\"\"".to_string(),
                format!("{name} in body shouldn't contain duplicates"),
            ),
            ValidationErrorKind::MaxProperties { limit } => too_many(&field, size(value), *limit),
            ValidationErrorKind::MinProperties { limit } => invalid(
                size(value).to_string(),
                format!("{name} in body should have at least {limit} properties"),
            ),
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                for key in unexpected {
                    let why = format!("{name}.{key} in body is a forbidden property");
                    out.push(Cause::invalid(&field, quote(key), &why));
                }
                return;
            }
            // additionalProperties: false, reported once for the object.
            ValidationErrorKind::FalseSchema
                if error
                    .schema_path()
                    .as_str()
                    .ends_with("/additionalProperties") =>
            {
                let pointer = error.instance_path().as_str();
                let object = self.root.pointer(pointer).and_then(Value::as_object);
                let schema = self.schema_node(error.schema_path().as_str());
                let known = schema
                    .and_then(|s| s.get("properties"))
                    .and_then(Value::as_object);
                for key in object.into_iter().flat_map(|o| o.keys()) {
                    if !known.is_some_and(|k| k.contains_key(key)) {
                        let why = format!("{name}.{key} in body is a forbidden property");
                        out.push(Cause::invalid(&field, quote(key), &why));
                    }
                }
                return;
            }
            ValidationErrorKind::AnyOf { context } => {
                let why = format!("{} must validate at least one schema (anyOf)", quote(&name));
                out.push(Cause::invalid(&field, "\"\"", &why));
                self.best(context, out);
                return;
            }
            ValidationErrorKind::OneOfNotValid { context } => {
                let why = format!(
                    "{} must validate one and only one schema (oneOf). Found none valid",
                    quote(&name)
                );
                out.push(Cause::invalid(&field, "\"\"", &why));
                self.best(context, out);
                return;
            }
            ValidationErrorKind::OneOfMultipleValid { context } => {
                let valid = context.iter().filter(|c| c.is_empty()).count().max(2);
                let why = format!(
                    "{} must validate one and only one schema (oneOf). Found {valid} valid alternatives",
                    quote(&name)
                );
                Cause::invalid(&field, "\"\"", &why)
            }
            ValidationErrorKind::Not { .. } => {
                let why = format!("{} must not validate the schema (not)", quote(&name));
                Cause::invalid(&field, "\"\"", &why)
            }
            _ => Cause::invalid(&field, "\"\"", &error.to_string()),
        };
        out.push(cause);
    }

    /// Upstream reports the failures of the alternative that came closest; here, the one with
    /// the fewest errors.
    fn best(&self, context: &[Vec<ValidationError<'static>>], out: &mut Vec<Cause>) {
        if let Some(errors) = context.iter().min_by_key(|errors| errors.len()) {
            for error in errors {
                self.map(error, out);
            }
        }
    }

    /// kube-openapi's name for the value at a JSON pointer: properties joined by dots (no dot
    /// at the start), map keys always after a dot, indices in brackets.
    fn name(&self, pointer: &str) -> String {
        let mut name = String::new();
        let mut value = Some(self.root);
        let mut node = Some(self.node);
        for token in pointer.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            if let Some(Value::Array(items)) = value {
                let index: usize = token.parse().unwrap_or_default();
                name = format!("{name}[{index}]");
                value = items.get(index);
                node = node.and_then(|n| n.items.as_deref());
                continue;
            }
            let property = node.and_then(|n| n.property(&token));
            let additional = node.and_then(Node::additional_schema);
            if name.is_empty() && (property.is_some() || additional.is_none()) {
                name = token.clone();
            } else {
                name = format!("{name}.{token}");
            }
            value = value.and_then(|v| v.get(&token));
            node = property.or(additional);
        }
        name
    }

    /// The field path of a kube-openapi name (upstream trims one leading dot).
    fn field(&self, name: &str) -> String {
        let name = name.strip_prefix('.').unwrap_or(name);
        if name.is_empty() {
            self.base.to_string()
        } else {
            child(self.base, name)
        }
    }

    /// The expected and actual type as kube-openapi words them. A value that is neither a
    /// string nor an array, under a schema with a checked format, is judged by the format:
    /// `must be of type date-time: "int64"`.
    fn type_texts(
        &self,
        error: &ValidationError<'_>,
        kind: &TypeKind,
        value: &Value,
    ) -> (String, String) {
        let schema = self.schema_node(error.schema_path().as_str());
        let format = schema
            .and_then(|s| s.get("format"))
            .and_then(Value::as_str)
            .and_then(|f| f.strip_prefix(FORMAT_PREFIX));
        if let (Some(format), false) = (
            format,
            value.is_null() || value.is_string() || value.is_array(),
        ) {
            let actual = match value {
                Value::Number(n) if is_int(n) => "int64",
                Value::Number(_) => "float64",
                _ => "",
            };
            return (format.to_string(), actual.to_string());
        }
        let expected = match schema.and_then(|s| s.get("type")) {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect::<Vec<_>>()
                .join(","),
            _ => match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(_) => String::new(),
            },
        };
        (expected, json_type(value).to_string())
    }

    /// The schema object holding the keyword a schema path ends in.
    fn schema_node(&self, pointer: &str) -> Option<&Map<String, Value>> {
        let tokens: Vec<&str> = pointer.split('/').skip(1).collect();
        let (_, parents) = tokens.split_last()?;
        let mut at = self.schema;
        for token in parents {
            let token = token.replace("~1", "/").replace("~0", "~");
            at = match at {
                Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                other => other.get(&token)?,
            };
        }
        at.as_object()
    }
}

fn type_invalid(field: &str, shown: &str, why: String) -> Cause {
    cause(
        "FieldValueTypeInvalid",
        field,
        format!("Invalid value: {shown}: {why}"),
    )
}

/// field.NotSupported: the value, then the allowed ones (strings as they are, other values as
/// JSON), each quoted.
fn not_supported(field: &str, value: &Value, options: &Value) -> Cause {
    let supported: Vec<String> = options
        .as_array()
        .map(|values| {
            values
                .iter()
                .map(|v| match v {
                    Value::String(s) => quote(s),
                    other => quote(&other.to_string()),
                })
                .collect()
        })
        .unwrap_or_default();
    let message = format!(
        "Unsupported value: {}: supported values: {}",
        error_value(value),
        supported.join(", ")
    );
    cause("FieldValueNotSupported", field, message)
}

/// field.TooMany.
fn too_many(field: &str, actual: usize, limit: u64) -> Cause {
    let unit = if limit == 1 { "item" } else { "items" };
    let message = format!("Too many: {actual}: must have at most {limit} {unit}");
    cause("FieldValueTooMany", field, message)
}

fn size(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.len(),
        Value::Object(map) => map.len(),
        _ => 0,
    }
}

/// A bound as kube-openapi prints it: for an integer value, the bound as an int64
/// (truncated); otherwise as a float64.
fn bound(limit: &Value, value: &Value) -> String {
    let limit = limit.as_f64().unwrap_or_default();
    match value {
        Value::Number(n) if is_int(n) => format!("{}", limit.trunc() as i64),
        _ => float(limit),
    }
}
