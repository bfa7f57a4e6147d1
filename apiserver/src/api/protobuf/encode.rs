//! Objects in `application/vnd.kubernetes.protobuf`, byte for byte as kube-apiserver writes
//! them: the 4-byte magic, then a runtime.Unknown envelope (typeMeta, raw, contentEncoding,
//! contentType) whose `raw` is the object's message.
//!
//! The message is written as Go's generated marshalling writes the API types: fields in
//! field-number order; every non-pointer field, zero or not (an empty string, a 0, an empty
//! nested struct); pointers only when set; lists and maps element by element (maps sorted by
//! key, key and value always written); nothing packed (the definitions are proto2). Which Go
//! field is a pointer comes from `go_fields`; the layouts from the descriptor set. Types that
//! marshal themselves (times, quantities, int-or-strings, raw JSON) are written their way.

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine;
use chrono::DateTime;
use prost_reflect::{FieldDescriptor, Kind as PbKind, MessageDescriptor};
use registry::wire::{self, Style};
use serde_json::{Map, Value};

use super::go_fields;
use super::{message_for, pool, MAGIC, META};

/// Why an object cannot be written in protobuf (the caller answers JSON or an error).
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("no protobuf schema for {0}")]
    NoSchema(String),
    #[error("{field}: {problem}")]
    Value { field: String, problem: String },
}

fn mismatch(field: &str, problem: impl std::fmt::Display) -> EncodeError {
    EncodeError::Value {
        field: field.to_string(),
        problem: problem.to_string(),
    }
}

/// Whether a kind of this apiVersion has a protobuf message (built-in kinds and their lists;
/// custom resources have none).
pub fn has_schema(api_version: &str, kind: &str) -> bool {
    // The built-in kinds only: a custom resource's group may share a built-in's first label.
    registry::wire::kind(api_version, kind).is_some() && message_for(api_version, kind).is_some()
}

/// The whole body of one object: magic, envelope, message. Its apiVersion and kind say which.
pub fn encode(object: &Value) -> Result<Vec<u8>, EncodeError> {
    let text = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let raw = message(api_version, kind, object)?;
    Ok(envelope(api_version, kind, &raw))
}

fn index_of(api_version: &str, kind: &str) -> Result<usize, EncodeError> {
    let no_schema = || EncodeError::NoSchema(format!("{api_version}, Kind={kind}"));
    let descriptor = message_for(api_version, kind).ok_or_else(no_schema)?;
    plans()
        .index
        .get(descriptor.full_name())
        .copied()
        .ok_or_else(no_schema)
}

/// The message of one object of `kind` (no envelope): a list's item.
pub fn message(api_version: &str, kind: &str, object: &Value) -> Result<Vec<u8>, EncodeError> {
    let mut raw = Vec::with_capacity(1024);
    plans().message(index_of(api_version, kind)?, Some(object), &mut raw)?;
    Ok(raw)
}

/// The whole body of a list (`kind` is the list's kind): its ListMeta, then the items'
/// messages (see [`message`]) as they come, in the envelope.
pub fn list(
    api_version: &str,
    kind: &str,
    metadata: &Value,
    items: &[Vec<u8>],
) -> Result<Vec<u8>, EncodeError> {
    let plans = plans();
    let plan = &plans.messages[index_of(api_version, kind)?];
    let mut raw = Vec::with_capacity(items.iter().map(|i| i.len() + 4).sum::<usize>() + 64);
    for field in &plan.fields {
        match field.json.as_str() {
            "metadata" => plans.single(
                field.number,
                field.kind,
                Some(metadata),
                "metadata",
                &mut raw,
            )?,
            "items" => items
                .iter()
                .for_each(|item| bytes_field(&mut raw, field.number, item)),
            _ => {}
        }
    }
    Ok(envelope(api_version, kind, &raw))
}

/// runtime.Unknown around a message, after the magic. Every field is a Go value (raw a
/// non-nil slice), so all four are written.
pub fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 4);
    bytes_field(&mut type_meta, 1, api_version.as_bytes());
    bytes_field(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(raw.len() + type_meta.len() + 16);
    out.extend_from_slice(MAGIC);
    bytes_field(&mut out, 1, &type_meta);
    bytes_field(&mut out, 2, raw);
    bytes_field(&mut out, 3, b"");
    bytes_field(&mut out, 4, b"");
    out
}

/// One frame of a protobuf watch stream: a metav1.WatchEvent without an envelope of its own
/// (upstream's stream serializer is the raw one), the object's whole body (with its envelope)
/// as the RawExtension, behind a 4-byte big-endian length (the length-delimited framer).
pub fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut extension = Vec::with_capacity(object.len() + 6);
    bytes_field(&mut extension, 1, object);
    let mut event = Vec::with_capacity(extension.len() + event_type.len() + 12);
    bytes_field(&mut event, 1, event_type.as_bytes());
    bytes_field(&mut event, 2, &extension);
    let mut out = Vec::with_capacity(event.len() + 4);
    out.extend_from_slice(&u32::try_from(event.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&event);
    out
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn tag(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

fn bytes_field(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    tag(out, number, 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A length-delimited field written in place: one byte is kept for the length, which is
/// what most nested messages need; a longer one moves the message up to make room (cheaper
/// than a buffer of its own per message).
fn nested(
    out: &mut Vec<u8>,
    number: u32,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    tag(out, number, 2);
    let at = out.len();
    out.push(0);
    write(out)?;
    let length = out.len() - at - 1;
    if length < 0x80 {
        out[at] = length as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        varint(&mut prefix, length as u64);
        out.splice(at..at + 1, prefix);
    }
    Ok(())
}

fn varint_field(out: &mut Vec<u8>, number: u32, value: u64) {
    tag(out, number, 0);
    varint(out, value);
}

/// The types that marshal themselves in Go rather than field by field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Special {
    None,
    Time,
    MicroTime,
    Duration,
    /// FieldsV1, RawExtension, apiextensions' JSON: the value's JSON as bytes in field 1.
    RawJson,
    IntOrString,
    Quantity,
    /// authentication's and authorization's `[]string` types, and discovery's Verbs: a
    /// message of one repeated string, written as a JSON list.
    ExtraValue,
    PropsOrBool,
    PropsOrArray,
    PropsOrStringArray,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    String,
    Bytes,
    Bool,
    /// Every integer kind: Go writes `uint64(v)` (negative int32s sign-extended).
    Varint,
    Double,
    Float,
    Message(usize),
}

#[derive(Clone, Copy, Debug)]
enum Shape {
    Single,
    List,
    /// A map: the entry's key and value kinds.
    Map(Kind, Kind),
}

struct FieldPlan {
    number: u32,
    /// The JSON member this field reads.
    json: String,
    go: go_fields::GoField,
    shape: Shape,
    kind: Kind,
}

struct MessagePlan {
    name: String,
    special: Special,
    fields: Vec<FieldPlan>,
}

/// Every message of the descriptor set, its fields in number order, read once.
struct Plans {
    messages: Vec<MessagePlan>,
    index: HashMap<String, usize>,
}

fn plans() -> &'static Plans {
    static PLANS: OnceLock<Plans> = OnceLock::new();
    PLANS.get_or_init(|| {
        let all: Vec<MessageDescriptor> = pool().all_messages().collect();
        let index: HashMap<String, usize> = all
            .iter()
            .enumerate()
            .map(|(i, m)| (m.full_name().to_string(), i))
            .collect();
        let kind_of = |field: &FieldDescriptor| match field.kind() {
            PbKind::String => Kind::String,
            PbKind::Bytes => Kind::Bytes,
            PbKind::Bool => Kind::Bool,
            PbKind::Double => Kind::Double,
            PbKind::Float => Kind::Float,
            PbKind::Message(m) => Kind::Message(index.get(m.full_name()).copied().unwrap_or(0)),
            _ => Kind::Varint,
        };
        let messages = all
            .iter()
            .map(|m| {
                let mut fields: Vec<FieldPlan> = m
                    .fields()
                    .map(|f| {
                        let go = go_fields::field(m.full_name(), f.name());
                        let shape = match f.kind() {
                            PbKind::Message(entry) if f.is_map() => Shape::Map(
                                kind_of(&entry.map_entry_key_field()),
                                kind_of(&entry.map_entry_value_field()),
                            ),
                            _ if f.is_list() => Shape::List,
                            _ => Shape::Single,
                        };
                        FieldPlan {
                            number: f.number(),
                            json: go.json_name.unwrap_or(f.name()).to_string(),
                            go,
                            shape,
                            kind: kind_of(&f),
                        }
                    })
                    .collect();
                fields.sort_by_key(|f| f.number);
                MessagePlan {
                    name: m.full_name().to_string(),
                    special: special(m),
                    fields,
                }
            })
            .collect();
        Plans { messages, index }
    })
}

fn special(message: &MessageDescriptor) -> Special {
    match (message.package_name(), message.name()) {
        (META, "Time") => Special::Time,
        (META, "MicroTime") => Special::MicroTime,
        (META, "Duration") => Special::Duration,
        (META, "FieldsV1") | ("apimachinery.pkg.runtime", "RawExtension") => Special::RawJson,
        (p, "JSON") if p.starts_with("apiextensions") => Special::RawJson,
        (p, "JSONSchemaPropsOrBool") if p.starts_with("apiextensions") => Special::PropsOrBool,
        (p, "JSONSchemaPropsOrArray") if p.starts_with("apiextensions") => Special::PropsOrArray,
        (p, "JSONSchemaPropsOrStringArray") if p.starts_with("apiextensions") => {
            Special::PropsOrStringArray
        }
        ("apimachinery.pkg.util.intstr", "IntOrString") => Special::IntOrString,
        ("apimachinery.pkg.api.resource", "Quantity") => Special::Quantity,
        (_, "ExtraValue") | (META, "Verbs") => Special::ExtraValue,
        _ => Special::None,
    }
}

impl Plans {
    /// Appends the message `index` read from `value` (None: absent, a Go zero value).
    fn message(
        &self,
        index: usize,
        value: Option<&Value>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let plan = &self.messages[index];
        if plan.special != Special::None {
            return self.special(plan, value, out);
        }
        let object = match value {
            Some(Value::Object(map)) => Some(map),
            None => None,
            Some(other) => return Err(mismatch(&plan.name, format!("not an object: {other}"))),
        };
        for field in &plan.fields {
            if field.go.inline {
                // An embedded struct: its members are this object's own.
                if let Kind::Message(inner) = field.kind {
                    nested(out, field.number, |out| self.message(inner, value, out))?;
                }
                continue;
            }
            let member = object
                .and_then(|o| o.get(&field.json))
                .filter(|v| !v.is_null());
            match (field.shape, member) {
                (Shape::List, Some(Value::Array(items))) => {
                    for item in items {
                        self.single(field.number, field.kind, Some(item), &field.json, out)?;
                    }
                }
                (Shape::Map(key, item), Some(Value::Object(entries))) => {
                    self.map(field.number, key, item, entries, &field.json, out)?
                }
                (Shape::List | Shape::Map(..), None) => {}
                (Shape::List | Shape::Map(..), Some(other)) => {
                    return Err(mismatch(&field.json, format!("unexpected {other}")))
                }
                (Shape::Single, None) if field.go.pointer => {}
                (Shape::Single, member) => {
                    self.single(field.number, field.kind, member, &field.json, out)?
                }
            }
        }
        Ok(())
    }

    /// A map's entries: Go sorts the keys (serde_json's map is already sorted by key, which
    /// is Go's string order) and writes key and value of each.
    fn map(
        &self,
        number: u32,
        key: Kind,
        item: Kind,
        entries: &Map<String, Value>,
        name: &str,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        for (k, v) in entries {
            nested(out, number, |entry| {
                match key {
                    Kind::String => bytes_field(entry, 1, k.as_bytes()),
                    _ => {
                        let n: i64 = k
                            .parse()
                            .map_err(|_| mismatch(name, format!("map key {k:?}")))?;
                        varint_field(entry, 1, n as u64);
                    }
                }
                // A null value is the Go zero value, written like any other (a nil []byte is
                // the one value Go leaves out).
                match (item, v) {
                    (Kind::Bytes, Value::Null) => Ok(()),
                    (_, Value::Null) => self.single(2, item, None, name, entry),
                    _ => self.single(2, item, Some(v), name, entry),
                }
            })?;
        }
        Ok(())
    }

    /// One field's value; None writes the Go zero value.
    fn single(
        &self,
        number: u32,
        kind: Kind,
        value: Option<&Value>,
        name: &str,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let wrong = |v: &Value| mismatch(name, format!("unexpected {v}"));
        match (kind, value) {
            (Kind::String, None) => bytes_field(out, number, b""),
            (Kind::String, Some(Value::String(s))) => bytes_field(out, number, s.as_bytes()),
            (Kind::Bytes, None) => bytes_field(out, number, b""),
            (Kind::Bytes, Some(Value::String(s))) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|e| mismatch(name, e))?;
                bytes_field(out, number, &bytes);
            }
            (Kind::Bool, None) => varint_field(out, number, 0),
            (Kind::Bool, Some(Value::Bool(b))) => varint_field(out, number, u64::from(*b)),
            (Kind::Varint, None) => varint_field(out, number, 0),
            (Kind::Varint, Some(Value::Number(n))) => {
                let v = n
                    .as_i64()
                    .map(|v| v as u64)
                    .or_else(|| n.as_u64())
                    .ok_or_else(|| wrong(&Value::Number(n.clone())))?;
                varint_field(out, number, v);
            }
            (Kind::Double, v) => {
                let f = v.and_then(Value::as_f64).unwrap_or(0.0);
                tag(out, number, 1);
                out.extend_from_slice(&f.to_le_bytes());
            }
            (Kind::Float, v) => {
                let f = v.and_then(Value::as_f64).unwrap_or(0.0) as f32;
                tag(out, number, 5);
                out.extend_from_slice(&f.to_le_bytes());
            }
            (Kind::Message(index), v) => {
                nested(out, number, |out| self.message(index, v, out))?;
            }
            (_, Some(v)) => return Err(wrong(v)),
        }
        Ok(())
    }

    fn special(
        &self,
        plan: &MessagePlan,
        value: Option<&Value>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let name = plan.name.as_str();
        let wrong = |v: &Value| mismatch(name, format!("unexpected {v}"));
        // The schema a JSONSchemaProps* field nests (field 1 of all three is one).
        let schema_index = || match plan.fields.first().map(|f| f.kind) {
            Some(Kind::Message(i)) => Ok(i),
            _ => Err(mismatch(name, "no schema field")),
        };
        match (plan.special, value) {
            (Special::Time | Special::MicroTime, None) => {}
            (Special::Time | Special::MicroTime, Some(Value::String(s))) => {
                let t = DateTime::parse_from_rfc3339(s).map_err(|e| mismatch(name, e))?;
                varint_field(out, 1, t.timestamp() as u64);
                varint_field(out, 2, u64::from(t.timestamp_subsec_nanos()));
            }
            (Special::Duration, v) => {
                let nanos = match v {
                    None => 0,
                    Some(Value::String(s)) => parse_go_duration(s)
                        .ok_or_else(|| mismatch(name, format!("duration {s:?}")))?,
                    Some(other) => return Err(wrong(other)),
                };
                varint_field(out, 1, nanos as u64);
            }
            (Special::RawJson, None) => {}
            (Special::RawJson, Some(v)) => {
                let mut raw = Vec::new();
                wire::write(&mut raw, v, Style::Compact).map_err(|e| mismatch(name, e))?;
                bytes_field(out, 1, &raw);
            }
            (Special::IntOrString, v) => {
                let (kind, int, text) = match v {
                    None => (0, 0, ""),
                    Some(number @ Value::Number(n)) => {
                        (0, n.as_i64().ok_or_else(|| wrong(number))?, "")
                    }
                    Some(Value::String(s)) => (1, 0, s.as_str()),
                    Some(other) => return Err(wrong(other)),
                };
                varint_field(out, 1, kind);
                varint_field(out, 2, int as u64);
                bytes_field(out, 3, text.as_bytes());
            }
            (Special::Quantity, v) => {
                let text = match v {
                    None => "0".to_string(),
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    Some(other) => return Err(wrong(other)),
                };
                bytes_field(out, 1, text.as_bytes());
            }
            (Special::ExtraValue, None) => {}
            (Special::ExtraValue, Some(Value::Array(items))) => {
                for item in items {
                    self.single(1, Kind::String, Some(item), name, out)?;
                }
            }
            (Special::PropsOrBool, None) => varint_field(out, 1, 0),
            (Special::PropsOrBool, Some(Value::Bool(b))) => varint_field(out, 1, u64::from(*b)),
            (Special::PropsOrBool, Some(schema @ Value::Object(_))) => {
                varint_field(out, 1, 1);
                self.single(2, Kind::Message(schema_index()?), Some(schema), name, out)?;
            }
            (Special::PropsOrArray | Special::PropsOrStringArray, None) => {}
            (Special::PropsOrArray | Special::PropsOrStringArray, Some(o @ Value::Object(_))) => {
                self.single(1, Kind::Message(schema_index()?), Some(o), name, out)?;
            }
            (Special::PropsOrArray, Some(Value::Array(items))) => {
                let schema = Kind::Message(schema_index()?);
                for item in items {
                    self.single(2, schema, Some(item), name, out)?;
                }
            }
            (Special::PropsOrStringArray, Some(Value::Array(items))) => {
                for item in items {
                    self.single(2, Kind::String, Some(item), name, out)?;
                }
            }
            (_, Some(other)) => return Err(wrong(other)),
            (Special::None, None) => {}
        }
        Ok(())
    }
}

/// Go's time.ParseDuration: a sequence of decimal numbers, each with a unit.
fn parse_go_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * unit;
    }
    let nanos = total.round() as i64;
    Some(if negative { -nanos } else { nanos })
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
