//! Request bodies in `application/vnd.kubernetes.protobuf`, as client-go's typed clients (and so
//! kubectl's `create namespace|configmap|deployment ...`) send them: decoded into the JSON the
//! rest of the server works on. Client-go does not fall back to JSON when a protobuf body is
//! refused, so these requests must be understood.
//!
//! The wire format is a 4-byte magic, then a runtime.Unknown envelope naming apiVersion and kind,
//! whose `raw` field holds the object. Message layouts come from the Kubernetes API's protobuf
//! definitions, compiled into a descriptor set at build time (see build.rs) and walked by
//! reflection.

use std::sync::OnceLock;

use base64::Engine;
use chrono::{DateTime, SecondsFormat};
use prost_reflect::{
    DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, ReflectMessage, Value as Pb,
};
use registry::RegistryError;
use serde_json::{Map, Number, Value};

pub mod encode;
mod go_fields;

pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
pub(crate) const MAGIC: &[u8; 4] = b"k8s\0";

/// Go's zero time.Time as Unix seconds: what a never-set metav1.Time encodes to.
const GO_ZERO_TIME: i64 = -62_135_596_800;

const META: &str = "apimachinery.pkg.apis.meta.v1";

fn bad(msg: impl std::fmt::Display) -> RegistryError {
    RegistryError::BadRequest(format!(
        "the body of the request could not be decoded as protobuf: {msg}"
    ))
}

fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        // Produced by build.rs from definitions that protoc accepted, so it always decodes.
        DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes.fds"))[..])
            .unwrap_or_else(|_| DescriptorPool::new())
    })
}

/// Decodes a protobuf request body into the object's JSON form.
pub fn decode(body: &[u8]) -> Result<Value, RegistryError> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad("missing the k8s protobuf magic prefix"))?;
    let unknown_type = pool()
        .get_message_by_name("apimachinery.pkg.runtime.Unknown")
        .ok_or_else(|| bad("no runtime.Unknown definition"))?;
    let unknown = DynamicMessage::decode(unknown_type, envelope).map_err(bad)?;
    let text = |m: &DynamicMessage, name: &str| match m.get_field_by_name(name).as_deref() {
        Some(Pb::String(s)) => s.clone(),
        _ => String::new(),
    };
    let encoding = text(&unknown, "contentEncoding");
    if !encoding.is_empty() {
        return Err(bad(format!(
            "content encoding {encoding:?} is not supported"
        )));
    }
    let content_type = text(&unknown, "contentType");
    if !matches!(content_type.as_str(), "" | MEDIA_TYPE) {
        return Err(bad(format!(
            "embedded content type {content_type:?} is not supported"
        )));
    }
    let (api_version, kind) = match unknown.get_field_by_name("typeMeta").as_deref() {
        Some(Pb::Message(t)) => (text(t, "apiVersion"), text(t, "kind")),
        _ => (String::new(), String::new()),
    };
    let raw = match unknown.get_field_by_name("raw").as_deref() {
        Some(Pb::Bytes(b)) => b.clone(),
        _ => Default::default(),
    };
    let descriptor = message_for(&api_version, &kind)
        .ok_or_else(|| bad(format!("no protobuf schema for {api_version}, Kind={kind}")))?;
    let message = DynamicMessage::decode(descriptor, raw).map_err(bad)?;
    let mut object = match message_json(&message) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    // The envelope carries the type; the inner message has no TypeMeta of its own.
    let mut out = Map::with_capacity(object.len() + 2);
    if !api_version.is_empty() {
        out.insert("apiVersion".into(), Value::String(api_version));
    }
    if !kind.is_empty() {
        out.insert("kind".into(), Value::String(kind));
    }
    out.append(&mut object);
    Ok(Value::Object(out))
}

/// The protobuf package of an API group-version, as the definitions name them.
fn package(api_version: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let prefix = match group.split('.').next().unwrap_or_default() {
        "" => "api.core".to_string(),
        "apiextensions" => "apiextensions_apiserver.pkg.apis.apiextensions".to_string(),
        "meta" => "apimachinery.pkg.apis.meta".to_string(),
        first => format!("api.{first}"),
    };
    format!("{prefix}.{version}")
}

fn message_for(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    if kind.is_empty() {
        return None;
    }
    pool()
        .get_message_by_name(&format!("{}.{kind}", package(api_version)))
        // Options kinds (DeleteOptions, ...) are sent with the resource's apiVersion but are
        // meta/v1's, as upstream registers them in every group.
        .or_else(|| pool().get_message_by_name(&format!("{META}.{kind}")))
}

fn message_json(message: &DynamicMessage) -> Value {
    let descriptor = message.descriptor();
    if let Some(special) = well_known(&descriptor, message) {
        return special;
    }
    let mut out = Map::new();
    for (field, value) in message.fields() {
        let name = field.name();
        let go = go_fields::field(descriptor.full_name(), name);
        // A Go struct embedded inline (`json:",inline"`) is a field of its own in protobuf
        // (IngressRule.ingressRuleValue, Volume.volumeSource): its members are the parent's.
        if go.inline {
            if let Pb::Message(inner) = value {
                if let Value::Object(members) = message_json(inner) {
                    out.extend(members);
                }
                continue;
            }
        }
        // Go's protobuf marshalling writes the zeros of plain fields; its JSON leaves out the
        // `omitempty` ones. A pointer's zero (and empty string) was set, so it stays.
        let zero = matches!(value, Pb::Bool(false) | Pb::I32(0) | Pb::I64(0));
        if zero && go.omitempty {
            continue;
        }
        if let Some(v) = json(value, go.pointer) {
            out.insert(go.json_name.unwrap_or(name).to_string(), v);
        }
    }
    Value::Object(out)
}

/// One value in JSON form; `None` where Go's JSON encoding would omit it (Go's protobuf
/// marshalling writes empty strings, empty lists and zero times that `omitempty` drops).
fn json(value: &Pb, keep_empty: bool) -> Option<Value> {
    Some(match value {
        Pb::U32(v) => Value::from(*v),
        Pb::U64(v) => Value::from(*v),
        Pb::I32(v) => Value::from(*v),
        Pb::I64(v) => Value::from(*v),
        Pb::F32(v) => Number::from_f64(f64::from(*v)).map_or(Value::Null, Value::Number),
        Pb::F64(v) => Number::from_f64(*v).map_or(Value::Null, Value::Number),
        Pb::Bool(v) => Value::Bool(*v),
        Pb::EnumNumber(n) => Value::from(*n),
        Pb::String(s) if s.is_empty() && !keep_empty => return None,
        Pb::String(s) => Value::String(s.clone()),
        Pb::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        Pb::Message(m) => match message_json(m) {
            Value::Null => return None,
            v => v,
        },
        Pb::List(items) if items.is_empty() => return None,
        // Inside lists and maps every element counts, empty strings too.
        Pb::List(items) => Value::Array(items.iter().filter_map(|v| json(v, true)).collect()),
        Pb::Map(entries) if entries.is_empty() => return None,
        Pb::Map(entries) => Value::Object(
            entries
                .iter()
                .filter_map(|(k, v)| Some((map_key(k), json(v, true)?)))
                .collect(),
        ),
    })
}

fn map_key(key: &MapKey) -> String {
    match key {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
    }
}

/// Types whose JSON form is not their message form (they marshal themselves in Go).
fn well_known(descriptor: &MessageDescriptor, message: &DynamicMessage) -> Option<Value> {
    let field = |name: &str| message.get_field_by_name(name);
    let int = |name: &str| match field(name).as_deref() {
        Some(Pb::I64(v)) => *v,
        Some(Pb::I32(v)) => i64::from(*v),
        _ => 0,
    };
    let text = |name: &str| match field(name).as_deref() {
        Some(Pb::String(s)) => s.clone(),
        _ => String::new(),
    };
    let raw_json = |name: &str| match field(name).as_deref() {
        Some(Pb::Bytes(b)) if !b.is_empty() => serde_json::from_slice(b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let package = descriptor.package_name();
    Some(match (package, descriptor.name()) {
        (META, "Time") => time(int("seconds"), int("nanos"), SecondsFormat::Secs),
        (META, "MicroTime") => time(int("seconds"), int("nanos"), SecondsFormat::Micros),
        (META, "Duration") => Value::String(go_duration(int("duration"))),
        (META, "FieldsV1") => raw_json("Raw"),
        ("apimachinery.pkg.util.intstr", "IntOrString") => {
            if int("type") == 1 {
                Value::String(text("strVal"))
            } else {
                Value::from(int("intVal"))
            }
        }
        ("apimachinery.pkg.api.resource", "Quantity") => Value::String(text("string")),
        ("apimachinery.pkg.runtime", "RawExtension") => raw_json("raw"),
        (p, "JSON") if p.starts_with("apiextensions") => raw_json("raw"),
        (_, "ExtraValue") | (META, "Verbs") => match field("items").as_deref() {
            Some(Pb::List(items)) => {
                Value::Array(items.iter().filter_map(|v| json(v, true)).collect())
            }
            _ => Value::Array(Vec::new()),
        },
        _ => return None,
    })
}

fn time(seconds: i64, nanos: i64, format: SecondsFormat) -> Value {
    if seconds == GO_ZERO_TIME || (seconds == 0 && nanos == 0) {
        return Value::Null;
    }
    let nanos = u32::try_from(nanos).unwrap_or(0);
    match DateTime::from_timestamp(seconds, nanos) {
        Some(t) => Value::String(t.to_rfc3339_opts(format, true)),
        None => Value::Null,
    }
}

/// Go's time.Duration.String(), the JSON form of metav1.Duration.
fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let frac = |value: u64, unit: u64| {
        let whole = value / unit;
        let rest = value % unit;
        if rest == 0 {
            whole.to_string()
        } else {
            let digits = unit.ilog10() as usize;
            let s = format!("{whole}.{rest:0digits$}");
            s.trim_end_matches('0').to_string()
        }
    };
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", frac(n, 1_000));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", frac(n, 1_000_000));
    }
    let secs = n / 1_000_000_000;
    let sub = n % 1_000_000_000;
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    let seconds = frac(s * 1_000_000_000 + sub, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

#[cfg(test)]
mod tests;
