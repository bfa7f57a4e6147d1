//! A kind's OpenAPI schema compiled into the small tree the walker needs. The resolved schema
//! is a JSON document looked up by string keys; compiling it once per kind leaves each write
//! with sorted field tables and plain enums, so checking an object costs a few comparisons
//! per field and allocates nothing unless something is wrong.

use serde_json::{Map, Value};

/// What a value at one place in an object may be.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    /// Anything: a preserved-unknown object without properties, RawExtension and FieldsV1
    /// (objects with no declared fields: Go keeps their raw JSON), an untyped schema.
    Any,
    Object(Box<ObjectNode>),
    Array(Box<Node>),
    Scalar(Scalar),
}

#[derive(Clone, Debug, Default)]
pub(crate) struct ObjectNode {
    /// Each declared field's name's first eight bytes as a big-endian number (zero-padded),
    /// in name order: comparing these orders names as the strings do, so a lookup is a
    /// binary search over one dense array of integers (field lookup was most of the walk's
    /// time when it compared strings).
    prefixes: Vec<u64>,
    /// The names and schemas of the fields, in the same order.
    fields: Vec<(Box<str>, Node)>,
    /// The schema of every value of a map (`additionalProperties`).
    pub values: Option<Node>,
    /// `x-kubernetes-preserve-unknown-fields`: undeclared fields are kept, unchecked.
    pub preserve_unknown: bool,
}

fn prefix(name: &str) -> u64 {
    let bytes = name.as_bytes();
    if let Some(head) = bytes.first_chunk::<8>() {
        return u64::from_be_bytes(*head);
    }
    bytes
        .iter()
        .enumerate()
        .fold(0, |acc, (i, b)| acc | u64::from(*b) << (56 - 8 * i))
}

impl ObjectNode {
    pub fn field(&self, name: &str) -> Option<&Node> {
        self.position(name).ok().map(|at| &self.fields[at].1)
    }

    /// Where `name` is, or would go.
    fn position(&self, name: &str) -> Result<usize, usize> {
        let key = prefix(name);
        let mut at = self.prefixes.partition_point(|p| *p < key);
        // Names sharing the first eight bytes ("terminationGracePeriodSeconds",
        // "terminationMessagePath") are told apart by the whole name.
        while self.prefixes.get(at) == Some(&key) {
            match (*self.fields[at].0).cmp(name) {
                std::cmp::Ordering::Less => at += 1,
                std::cmp::Ordering::Equal => return Ok(at),
                std::cmp::Ordering::Greater => break,
            }
        }
        Err(at)
    }

    fn insert(&mut self, name: &str, node: Node) {
        match self.position(name) {
            Ok(at) => self.fields[at].1 = node,
            Err(at) => {
                self.prefixes.insert(at, prefix(name));
                self.fields.insert(at, (name.into(), node));
            }
        }
    }
}

/// The JSON types a scalar may take; several for int-or-string and Quantity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Scalar {
    pub string: bool,
    pub boolean: bool,
    /// Any number, integral or not.
    pub number: bool,
    pub integer: Option<IntFormat>,
    /// What a string must spell, where Go parses it into a richer type.
    pub format: Option<StringFormat>,
}

/// Strings Go decodes into a type of its own, failing on a malformed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StringFormat {
    /// resource.Quantity
    Quantity,
    /// metav1.Time and MicroTime (RFC 3339)
    DateTime,
}

/// The Go integer type a field decodes into, which bounds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntFormat {
    Int32,
    Int64,
}

impl IntFormat {
    pub fn bounds(self) -> (i64, i64) {
        match self {
            IntFormat::Int32 => (i32::MIN.into(), i32::MAX.into()),
            IntFormat::Int64 => (i64::MIN, i64::MAX),
        }
    }
}

impl Scalar {
    /// The expected types as upstream's schema errors name them ("integer,string").
    pub fn type_names(self) -> String {
        let names = [
            (self.integer.is_some(), "integer"),
            (self.number, "number"),
            (self.string, "string"),
            (self.boolean, "boolean"),
        ];
        let named: Vec<&str> = names
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
        named.join(",")
    }
}

/// A kind's compiled schema.
#[derive(Debug)]
pub struct Schema {
    pub(crate) root: Node,
}

impl Schema {
    /// Compiles a resolved schema (every `$ref` inlined, as `OpenApi::schema_for` gives it).
    /// The root always admits `apiVersion`, `kind` and `metadata`; an embedded resource's
    /// metadata is checked against the root's.
    pub fn compile(schema: &Value) -> Schema {
        let metadata = schema
            .get("properties")
            .and_then(|p| p.get("metadata"))
            .map(|m| compile(m, &Node::Any))
            .unwrap_or(Node::Any);
        let mut root = compile(schema, &metadata);
        if let Node::Object(object) = &mut root {
            let string = Node::Scalar(Scalar {
                string: true,
                ..Scalar::default()
            });
            object.insert("apiVersion", string.clone());
            object.insert("kind", string);
            if object.field("metadata").is_none() {
                object.insert("metadata", metadata);
            }
        }
        Schema { root }
    }
}

fn flag(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn compile(schema: &Value, metadata: &Node) -> Node {
    let Some(map) = schema.as_object() else {
        return Node::Any;
    };
    if flag(map, "x-kubernetes-int-or-string") {
        return Node::Scalar(Scalar {
            string: true,
            integer: Some(IntFormat::Int32),
            ..Scalar::default()
        });
    }
    match map.get("type").and_then(Value::as_str) {
        Some("object") => object(map, metadata),
        Some("array") => Node::Array(Box::new(
            map.get("items")
                .map_or(Node::Any, |items| compile(items, metadata)),
        )),
        Some(other) => scalar(other, map).map_or(Node::Any, Node::Scalar),
        None if map.contains_key("properties") => object(map, metadata),
        None => alternatives(map),
    }
}

fn scalar(kind: &str, map: &Map<String, Value>) -> Option<Scalar> {
    let mut out = Scalar::default();
    match kind {
        "string" => {
            out.string = true;
            if map.get("format").and_then(Value::as_str) == Some("date-time") {
                out.format = Some(StringFormat::DateTime);
            }
        }
        "boolean" => out.boolean = true,
        "number" => out.number = true,
        "integer" => {
            out.integer = Some(match map.get("format").and_then(Value::as_str) {
                Some("int32") => IntFormat::Int32,
                _ => IntFormat::Int64,
            })
        }
        _ => return None,
    }
    Some(out)
}

/// `oneOf` / `anyOf` of plain types (Quantity: string or number), as one scalar; anything
/// richer is left unchecked.
fn alternatives(map: &Map<String, Value>) -> Node {
    let Some(options) = map
        .get("oneOf")
        .or_else(|| map.get("anyOf"))
        .and_then(Value::as_array)
    else {
        return Node::Any;
    };
    let mut out = Scalar::default();
    for option in options {
        let Some(option) = option.as_object() else {
            return Node::Any;
        };
        let Some(one) = option
            .get("type")
            .and_then(Value::as_str)
            .and_then(|t| scalar(t, option))
        else {
            return Node::Any;
        };
        out.string |= one.string;
        out.boolean |= one.boolean;
        out.number |= one.number;
        out.integer = out.integer.or(one.integer);
    }
    if out == Scalar::default() {
        return Node::Any;
    }
    // Quantity is the one definition that is a string or a number.
    if out.string && out.number && out.integer.is_none() && !out.boolean {
        out.format = Some(StringFormat::Quantity);
    }
    Node::Scalar(out)
}

fn object(map: &Map<String, Value>, metadata: &Node) -> Node {
    let properties = map.get("properties").and_then(Value::as_object);
    let values = match map.get("additionalProperties") {
        Some(Value::Bool(true)) => Some(Node::Any),
        Some(schema @ Value::Object(_)) => Some(compile(schema, metadata)),
        _ => None,
    };
    let preserve_unknown = flag(map, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(map, "x-kubernetes-embedded-resource");
    // No declared fields and no map values: Go keeps such a value's raw JSON.
    if properties.is_none_or(Map::is_empty) && values.is_none() && !embedded {
        return Node::Any;
    }
    let mut fields: Vec<(Box<str>, Node)> = properties
        .into_iter()
        .flatten()
        .map(|(name, schema)| (name.as_str().into(), compile(schema, metadata)))
        .collect();
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = ObjectNode {
        prefixes: fields.iter().map(|(name, _)| prefix(name)).collect(),
        fields,
        values,
        preserve_unknown,
    };
    if embedded {
        let string = Node::Scalar(Scalar {
            string: true,
            ..Scalar::default()
        });
        out.insert("apiVersion", string.clone());
        out.insert("kind", string);
        out.insert("metadata", metadata.clone());
    }
    Node::Object(Box::new(out))
}
