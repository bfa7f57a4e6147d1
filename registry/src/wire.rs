//! JSON as kube-apiserver writes it, byte for byte: the one encoder of objects for storage and
//! for every response.
//!
//! - A built-in type's fields come in its Go struct's order (`kind`, `apiVersion`,
//!   `metadata`, `spec`, `status`; ObjectMeta's `name`, `generateName`, `namespace`, ...), from
//!   the table the openapi crate generates from the Kubernetes protos. Maps (labels, data)
//!   and everything untyped, custom resources included, have their keys sorted, as Go writes
//!   a map (upstream serves custom resources as `map[string]interface{}`).
//! - Strings are escaped as encoding/json escapes them: `<`, `>`, `&`, U+2028 and U+2029 as
//!   `\u003c`-style escapes besides what JSON requires; floats as Go formats them.
//! - A response body is the compact encoding and a newline (json.Encoder), or the indented
//!   encoding without one (json.MarshalIndent, two spaces), as upstream's JSON serializer
//!   writes it.
//!
//! Values are `serde_json::Value`s whose maps keep no order of their own: the order is
//! decided here, while writing.

use std::io;

use openapi::wire_order::{self, Def, Shape};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};
use serde_json::{Map, Value};

use crate::error::{RegistryError, Result};

/// Compact (one line) or indented as `?pretty=true` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Compact,
    Pretty,
}

/// The struct type of an object, by its apiVersion and kind; None for custom resources and
/// anything else upstream handles as a map.
pub fn type_of(obj: &Value) -> Option<&'static Def> {
    let api_version = obj.get("apiVersion")?.as_str()?;
    let kind = obj.get("kind")?.as_str()?;
    wire_order::kind(api_version, kind)
}

/// The struct type of a built-in kind.
pub fn kind(api_version: &str, kind: &str) -> Option<&'static Def> {
    wire_order::kind(api_version, kind)
}

/// Appends `obj` (an object, or any value) in wire order, its type taken from its own
/// apiVersion and kind. No trailing newline: this is also what storage holds.
pub fn write(out: &mut Vec<u8>, obj: &Value, style: Style) -> Result<()> {
    write_as(out, obj, type_of(obj), style)
}

/// Appends `value` as a value of type `def` (None: a map, keys sorted).
pub fn write_as(
    out: &mut Vec<u8>,
    value: &Value,
    def: Option<&'static Def>,
    style: Style,
) -> Result<()> {
    let value = Ordered {
        value,
        shape: def.map_or(Shape::Scalar, Shape::Object),
        item: false,
    };
    serialize(out, &value, style)
}

/// Appends an item of a built-in list: upstream's typed lists hold items without their
/// TypeMeta, so `kind` and `apiVersion` are left out. A custom resource's item (`def` None)
/// keeps them, as an unstructured list's items do.
pub fn write_item(
    out: &mut Vec<u8>,
    item: &Value,
    def: Option<&'static Def>,
    style: Style,
) -> Result<()> {
    let value = Ordered {
        value: item,
        shape: def.map_or(Shape::Scalar, Shape::Object),
        item: def.is_some(),
    };
    serialize(out, &value, style)
}

/// A whole response body: compact with the newline json.Encoder ends with, or indented
/// without one (json.MarshalIndent).
pub fn body(obj: &Value, style: Style) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(1024);
    write(&mut out, obj, style)?;
    if style == Style::Compact {
        out.push(b'\n');
    }
    Ok(out)
}

/// Any serializable value (a typed struct such as a Status) as a response body: its own
/// fields through JSON first, then ordered as its apiVersion and kind say.
pub fn body_of(value: &impl Serialize, style: Style) -> Result<Vec<u8>> {
    let value = serde_json::to_value(value).map_err(encode_error)?;
    body(&value, style)
}

fn encode_error(e: impl std::fmt::Display) -> RegistryError {
    RegistryError::Internal(format!("encoding JSON: {e}"))
}

fn serialize(out: &mut Vec<u8>, value: &impl Serialize, style: Style) -> Result<()> {
    let result = match style {
        Style::Compact => value.serialize(&mut serde_json::Serializer::with_formatter(
            out,
            GoJson(CompactFormatter),
        )),
        Style::Pretty => value.serialize(&mut serde_json::Serializer::with_formatter(
            out,
            GoJson(PrettyFormatter::with_indent(b"  ")),
        )),
    };
    result.map_err(encode_error)
}

/// A value with the type that orders its keys.
struct Ordered<'a> {
    value: &'a Value,
    shape: Shape,
    /// A typed list's item (or the items array): TypeMeta left out.
    item: bool,
}

impl<'a> Ordered<'a> {
    fn nested(value: &'a Value, shape: Shape) -> Self {
        Self {
            value,
            shape,
            item: false,
        }
    }
}

impl Serialize for Ordered<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self.value {
            Value::Object(map) => match self.shape {
                Shape::Object(def) => typed(map, def, self.item, serializer),
                Shape::Map(def) => sorted(map, Shape::Object(def), serializer),
                Shape::Dynamic => match type_of(self.value) {
                    Some(def) => typed(map, def, false, serializer),
                    None => sorted(map, Shape::Scalar, serializer),
                },
                Shape::Scalar => sorted(map, Shape::Scalar, serializer),
            },
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for value in items {
                    seq.serialize_element(&Ordered {
                        value,
                        shape: self.shape,
                        item: self.item,
                    })?;
                }
                seq.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}

/// A map: keys sorted (the Value's own order), values of `shape`.
fn sorted<S: serde::Serializer>(
    map: &Map<String, Value>,
    shape: Shape,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    let mut out = serializer.serialize_map(Some(map.len()))?;
    for (key, value) in map {
        out.serialize_entry(key, &Ordered::nested(value, shape))?;
    }
    out.end()
}

/// A struct: its fields in declaration order. A key the type does not declare (Go would
/// have dropped it) follows, sorted, rather than being lost.
fn typed<S: serde::Serializer>(
    map: &Map<String, Value>,
    def: &'static Def,
    item: bool,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    // Each member with its place in the struct, gathered on the stack (objects have a few
    // dozen fields at most) and put in place by insertion sort: one lookup per key.
    static NO_KEY: String = String::new();
    static NO_VALUE: Value = Value::Null;
    let mut members: [(usize, &String, &Value); MEMBERS_ON_STACK] =
        [(0, &NO_KEY, &NO_VALUE); MEMBERS_ON_STACK];
    let mut len = 0;
    let mut undeclared = 0usize;
    for (key, value) in map {
        match def.rank(key) {
            Some(rank) if len < MEMBERS_ON_STACK => {
                let mut at = len;
                while at > 0 && members[at - 1].0 > rank {
                    members[at] = members[at - 1];
                    at -= 1;
                }
                members[at] = (rank, key, value);
                len += 1;
            }
            Some(_) | None => undeclared += 1,
        }
    }
    let mut out = serializer.serialize_map(Some(map.len()))?;
    for &(rank, key, value) in &members[..len] {
        let field = &def.fields[rank];
        if item && matches!(field.name, "kind" | "apiVersion") {
            continue;
        }
        let value = Ordered {
            value,
            shape: field.shape,
            // Upstream's typed lists hold items whose TypeMeta conversion left empty.
            item: field.name == "items" && is_list(def),
        };
        out.serialize_entry(key, &value)?;
    }
    if undeclared > 0 {
        // Past the stack's room (never for a real type), or not the type's: in key order.
        let placed = |key: &str| members[..len].iter().any(|(_, k, _)| k.as_str() == key);
        for (key, value) in map.iter().filter(|(k, _)| !placed(k)) {
            let shape = def
                .rank(key)
                .map_or(Shape::Scalar, |rank| def.fields[rank].shape);
            out.serialize_entry(key, &Ordered::nested(value, shape))?;
        }
    }
    out.end()
}

/// How many members of one object are ordered on the stack.
const MEMBERS_ON_STACK: usize = 64;

/// Whether `def` is a typed List kind (PodList): ListMeta and items. Not a
/// PartialObjectMetadataList, whose items upstream gives their kind and apiVersion one by one.
fn is_list(def: &Def) -> bool {
    def.name.ends_with("List")
        && def.name != "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList"
        && def
            .field_type("metadata")
            .is_some_and(|meta| meta.name == "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")
}

/// serde_json's formatting with encoding/json's escaping and float spelling.
struct GoJson<F>(F);

impl<F: Formatter> Formatter for GoJson<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        write_go_fragment(writer, fragment)
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(go_float(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        writer.write_all(go_float(f64::from(value)).as_bytes())
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_key(writer)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
}

/// Text between the escapes serde_json makes (quotes, backslashes, control characters),
/// with the ones encoding/json adds: HTML's `<`, `>`, `&`, and the JavaScript line
/// separators U+2028 and U+2029.
fn write_go_fragment<W: ?Sized + io::Write>(writer: &mut W, fragment: &str) -> io::Result<()> {
    let bytes = fragment.as_bytes();
    // Most text has none of them: a vectorised scan finds out (0xE2 leads U+2028/9).
    if memchr::memchr3(b'<', b'>', b'&', bytes).is_none() && memchr::memchr(0xE2, bytes).is_none() {
        return writer.write_all(bytes);
    }
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let escape: Option<(&[u8], usize)> = match bytes[i] {
            b'<' => Some((b"\\u003c", 1)),
            b'>' => Some((b"\\u003e", 1)),
            b'&' => Some((b"\\u0026", 1)),
            0xE2 if bytes.get(i + 1) == Some(&0x80) => match bytes.get(i + 2) {
                Some(0xA8) => Some((b"\\u2028", 3)),
                Some(0xA9) => Some((b"\\u2029", 3)),
                _ => None,
            },
            _ => None,
        };
        match escape {
            Some((text, len)) => {
                writer.write_all(&bytes[start..i])?;
                writer.write_all(text)?;
                i += len;
                start = i;
            }
            None => i += 1,
        }
    }
    writer.write_all(&bytes[start..])
}

/// A float as encoding/json spells it: the shortest decimal that reads back the same, in
/// positional notation between 1e-6 and 1e21 and in exponent notation (`1e+21`, `1e-7`)
/// outside (Rust's shortest forms, with Go's sign on positive exponents).
fn go_float(value: f64) -> String {
    let abs = value.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{value:e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => {
                format!("{mantissa}e+{exponent}")
            }
            _ => text,
        }
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests;
