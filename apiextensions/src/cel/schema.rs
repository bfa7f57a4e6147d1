//! The schema as validation rules see it: one node per schema node that rules can reach, with
//! the CEL kind of its values, its compiled rules, and whether any rule lives below it (so
//! that validation only walks where there is something to evaluate).

use std::collections::HashMap;

use serde_json::Value as Json;

use super::rules::{self, Rule};
use super::Build;

/// One node of the schema.
pub(super) struct Node {
    pub(super) kind: Kind,
    /// The schema's `type` ("object", "string", ... or "" when it has none): upstream prints
    /// it as the bad value of a failed rule (`Invalid value: "object": ...`).
    pub(super) type_name: String,
    /// Whether the schema has `properties`: a fieldPath segment names a property then, and a
    /// map key only where there is none but `additionalProperties`.
    pub(super) has_properties: bool,
    /// The compiled `x-kubernetes-validations` of this node.
    pub(super) rules: Vec<Rule>,
    /// Whether this node or one below it has rules.
    pub(super) has_rules: bool,
    /// What the cost model knows of the node's values.
    pub(super) bounds: Bounds,
}

/// Upstream's size figures of a schema node (its DeclType's MaxElements and
/// MinSerializedSize, and the cardinality factor of its children), from maxLength, maxItems,
/// maxProperties and enum, else derived from the largest request.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Bounds {
    /// The most bytes of a string, items of a list, entries of a map; 0 for other values.
    pub(super) max_elements: u64,
    /// The fewest bytes a value takes serialized.
    pub(super) min_size: u64,
    /// How many values of each child one value holds: the declared maximum of a list or map,
    /// `None` when it has none (unbounded); 1 for anything else.
    pub(super) fan_out: Option<u64>,
}

/// The largest request the server takes (upstream's celconfig.MaxRequestSizeBytes).
pub(super) const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

impl Bounds {
    fn of(schema: &Json, kind: &Kind) -> Bounds {
        let limit = |name: &str| {
            schema
                .get(name)
                .and_then(Json::as_i64)
                .map(|n| n.max(0) as u64)
        };
        let unbounded_string = MAX_REQUEST_BYTES - 2;
        let string_max = || match limit("maxLength") {
            Some(n) => n.saturating_mul(4),
            None => schema
                .get("enum")
                .and_then(Json::as_array)
                .and_then(|values| {
                    values
                        .iter()
                        .filter_map(Json::as_str)
                        .map(|v| v.len() as u64)
                        .max()
                })
                .unwrap_or(unbounded_string),
        };
        let (max_elements, min_size, fan_out) = match kind {
            Kind::String(Format::Plain) => (string_max(), 2, Some(1)),
            Kind::String(Format::Byte) => {
                (limit("maxLength").unwrap_or(unbounded_string), 2, Some(1))
            }
            Kind::String(Format::Duration) => (0, 3, Some(1)),
            Kind::String(Format::Date) => (0, 12, Some(1)),
            Kind::String(Format::DateTime) => (0, 21, Some(1)),
            Kind::IntOrString => (
                limit("maxLength").map_or(unbounded_string, |n| n.saturating_mul(4)),
                1,
                Some(1),
            ),
            Kind::Integer | Kind::Number => (0, 1, Some(1)),
            Kind::Boolean => (0, 4, Some(1)),
            Kind::Any => (unbounded_string, 1, Some(1)),
            Kind::List { items, .. } => {
                let max = limit("maxItems");
                let derived = (MAX_REQUEST_BYTES - 2) / (items.bounds.min_size + 1);
                (max.unwrap_or(derived), 2, max)
            }
            Kind::Map(values) => {
                let max = limit("maxProperties");
                let derived = (MAX_REQUEST_BYTES - 2) / (values.bounds.min_size + 6);
                (max.unwrap_or(derived), 2, max)
            }
            Kind::Object(fields) => {
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Json::as_array)
                    .map(|r| r.iter().filter_map(Json::as_str).collect())
                    .unwrap_or_default();
                let min = fields
                    .iter()
                    .filter(|(name, f)| {
                        required.contains(&name.as_str()) && f.node.bounds.min_size > 0
                    })
                    .filter(|(name, _)| {
                        let property = schema.get("properties").and_then(|p| p.get(name.as_str()));
                        property.is_some_and(|p| p.get("default").is_none())
                    })
                    .map(|(name, f)| name.len() as u64 + f.node.bounds.min_size + 4)
                    .sum::<u64>();
                (0, 2 + min, Some(1))
            }
        };
        Bounds {
            max_elements,
            min_size,
            fan_out,
        }
    }
}

/// What a node's values are in CEL.
pub(super) enum Kind {
    /// An object with declared properties: a CEL object whose fields are the declared
    /// properties present in the value, under their escaped names. Keyed by property name.
    Object(HashMap<String, Field>),
    /// An object with `additionalProperties`: a CEL map of string keys.
    Map(Box<Node>),
    /// An array. `map_keys` are the `x-kubernetes-list-map-keys` of a list-type=map list,
    /// which correlate its items with the old object's.
    List {
        items: Box<Node>,
        map_keys: Option<Vec<String>>,
    },
    String(Format),
    Integer,
    Number,
    Boolean,
    /// `x-kubernetes-int-or-string`: an int or a string, whichever the value is.
    IntOrString,
    /// No type: the JSON value as it is.
    Any,
}

/// A declared property of an object.
pub(super) struct Field {
    /// The name rules select it by, `None` when the property name cannot be escaped into a
    /// CEL identifier (upstream leaves such properties out of `self`).
    pub(super) cel_name: Option<String>,
    /// The property's schema, with its rules.
    pub(super) node: Node,
    /// What rules see of the property when it is not its schema: at a resource root, the
    /// type strings and the name-only metadata whatever the schema declares.
    pub(super) seen_as: Option<Node>,
}

impl Field {
    /// The schema of the property's value as rules see it.
    pub(super) fn cel(&self) -> &Node {
        self.seen_as.as_ref().unwrap_or(&self.node)
    }
}

/// The string formats whose values are other CEL types.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Plain,
    /// `format: byte`: base64, as bytes.
    Byte,
    /// `format: duration`: a duration.
    Duration,
    /// `format: date`: a timestamp at midnight UTC.
    Date,
    /// `format: date-time`: a timestamp.
    DateTime,
}

impl Node {
    pub(super) fn leaf(kind: Kind, type_name: &str) -> Node {
        Node {
            kind,
            type_name: type_name.to_string(),
            has_properties: false,
            rules: Vec::new(),
            has_rules: false,
            bounds: Bounds {
                max_elements: MAX_REQUEST_BYTES - 2,
                min_size: 2,
                fan_out: Some(1),
            },
        }
    }

    /// The field named `name` as it is, if this is an object that declares it.
    pub(super) fn raw_field(&self, name: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Object(fields) => fields.get(name).map(Field::cel),
            _ => None,
        }
    }

    /// The field a rule selects as `name` (escaped), if this is an object that declares it.
    pub(super) fn cel_field(&self, name: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Object(fields) => fields
                .values()
                .find(|f| f.cel_name.as_deref() == Some(name))
                .map(Field::cel),
            _ => None,
        }
    }
}

/// Builds the node of `schema` at `path` (upstream's path of the schema in the CRD), compiling
/// its rules. `resource_root` is true at the root of the resource and of embedded resources,
/// where `apiVersion`, `kind`, `metadata.name` and `metadata.generateName` are always visible.
/// `uncorrelatable` is the path of the highest list above that is not list-type=map: rules
/// below it cannot use oldSelf.
pub(super) fn build(
    schema: &Json,
    path: &str,
    resource_root: bool,
    uncorrelatable: Option<&str>,
    out: &mut Build,
) -> Node {
    let type_name = schema.get("type").and_then(Json::as_str).unwrap_or("");
    let schema_errors_before = out.schema_errors;
    let kind = if flag(schema, "x-kubernetes-int-or-string") {
        Kind::IntOrString
    } else {
        match type_name {
            "object" => object(schema, path, resource_root, uncorrelatable, out),
            "array" => array(schema, path, uncorrelatable, out),
            "string" => Kind::String(
                match schema.get("format").and_then(Json::as_str).unwrap_or("") {
                    "byte" => Format::Byte,
                    "duration" => Format::Duration,
                    "date" => Format::Date,
                    "date-time" => Format::DateTime,
                    _ => Format::Plain,
                },
            ),
            "integer" => Kind::Integer,
            "number" => Kind::Number,
            "boolean" => Kind::Boolean,
            _ => Kind::Any,
        }
    };
    let bounds = Bounds::of(schema, &kind);
    let mut node = Node {
        bounds,
        kind,
        type_name: type_name.to_string(),
        has_properties: resource_root || schema.get("properties").is_some_and(Json::is_object),
        rules: Vec::new(),
        has_rules: false,
    };
    // Upstream compiles a node's rules only when its schema, and the schema below it, has no
    // other problem: a broken schema makes for unhelpful compilation errors.
    let below_is_sound = out.schema_errors == schema_errors_before;
    node.rules = rules::compile(schema, path, &node, uncorrelatable, below_is_sound, out);
    node.has_rules = !node.rules.is_empty()
        || match &node.kind {
            Kind::Object(fields) => fields.values().any(|f| f.node.has_rules),
            Kind::Map(values) => values.has_rules,
            Kind::List { items, .. } => items.has_rules,
            _ => false,
        };
    node
}

fn object(
    schema: &Json,
    path: &str,
    resource_root: bool,
    uncorrelatable: Option<&str>,
    out: &mut Build,
) -> Kind {
    if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        let at = join(path, "additionalProperties");
        return Kind::Map(Box::new(build(
            values,
            &at,
            flag(values, "x-kubernetes-embedded-resource"),
            uncorrelatable,
            out,
        )));
    }
    let mut fields = HashMap::new();
    if let Some(properties) = schema.get("properties").and_then(Json::as_object) {
        for (name, property) in properties {
            let at = join(path, &format!("properties[{name}]"));
            let node = build(
                property,
                &at,
                flag(property, "x-kubernetes-embedded-resource"),
                uncorrelatable,
                out,
            );
            fields.insert(
                name.clone(),
                Field {
                    cel_name: escape(name),
                    node,
                    seen_as: None,
                },
            );
        }
    }
    if resource_root {
        // What upstream's WithTypeAndObjectMeta gives every resource root, whatever the schema
        // declares: the type strings, and of the metadata only its name and generateName.
        let string = || Node::leaf(Kind::String(Format::Plain), "string");
        let mut meta = HashMap::new();
        for name in ["name", "generateName"] {
            meta.insert(
                name.to_string(),
                Field {
                    cel_name: Some(name.to_string()),
                    node: string(),
                    seen_as: None,
                },
            );
        }
        let mut metadata = Node::leaf(Kind::Object(meta), "object");
        metadata.has_properties = true;
        for (name, seen_as) in [
            ("apiVersion", string()),
            ("kind", string()),
            ("metadata", metadata),
        ] {
            match fields.get_mut(name) {
                // Declared: its schema keeps its rules, rules above see the fixed shape.
                Some(declared) => declared.seen_as = Some(seen_as),
                None => {
                    fields.insert(
                        name.to_string(),
                        Field {
                            cel_name: Some(name.to_string()),
                            node: seen_as,
                            seen_as: None,
                        },
                    );
                }
            }
        }
    }
    Kind::Object(fields)
}

fn array(schema: &Json, path: &str, uncorrelatable: Option<&str>, out: &mut Build) -> Kind {
    let list_type = schema
        .get("x-kubernetes-list-type")
        .and_then(Json::as_str)
        .unwrap_or("atomic");
    let map_keys = (list_type == "map").then(|| {
        schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Json::as_array)
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    });
    // Only the items of list-type=map lists correlate with old items (by their keys): below
    // any other list, oldSelf has nothing to refer to.
    let below: Option<&str> = match (&map_keys, uncorrelatable) {
        (_, Some(higher)) => Some(higher),
        (Some(_), None) => None,
        (None, None) => Some(path),
    };
    let items = match schema.get("items").filter(|i| i.is_object()) {
        Some(items) => build(
            items,
            &join(path, "items"),
            flag(items, "x-kubernetes-embedded-resource"),
            below,
            out,
        ),
        None => Node::leaf(Kind::Any, ""),
    };
    Kind::List {
        items: Box::new(items),
        map_keys,
    }
}

fn flag(schema: &Json, name: &str) -> bool {
    schema.get(name).and_then(Json::as_bool).unwrap_or(false)
}

/// `path.segment`, or `segment` at the root (an empty path).
pub(super) fn join(path: &str, segment: &str) -> String {
    if path.is_empty() {
        segment.to_string()
    } else {
        format!("{path}.{segment}")
    }
}

/// The words CEL reserves: a property so named is selected as `__name__`.
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The CEL identifier of a property, as upstream escapes it: reserved words as `__word__`,
/// `__` as `__underscores__`, `.` `-` `/` as `__dot__` `__dash__` `__slash__`. `None` for
/// names that cannot be escaped (a leading digit, other characters).
pub(super) fn escape(name: &str) -> Option<String> {
    let first = *name.as_bytes().first()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let bytes = name.as_bytes();
    let mut out = String::with_capacity(name.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'_' if bytes.get(i + 1) == Some(&b'_') => {
                out.push_str("__underscores__");
                i += 2;
                continue;
            }
            b'.' => out.push_str("__dot__"),
            b'-' => out.push_str("__dash__"),
            b'/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == b'_' => out.push(c as char),
            _ => return None,
        }
        i += 1;
    }
    Some(out)
}
