//! JSON values as CEL values, typed by the schema: integers are ints, numbers doubles, strings
//! of format byte/duration/date/date-time bytes, durations and timestamps, objects with
//! properties objects of their declared fields only, objects with additionalProperties maps.
//! Strings and keys borrow from the JSON and the schema: no copy.

use std::collections::HashMap;

use base64::Engine;
use cel::common::types::{
    CelBool, CelBytes, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use cel::common::value::Val;
use serde_json::{Number, Value as Json};

use super::env;
use super::schema::{Format, Kind, Node};

/// `json`, a value of the schema `node`, as a CEL value.
pub(super) fn to_val<'v>(node: &'v Node, json: &'v Json) -> Box<dyn Val + 'v> {
    match (&node.kind, json) {
        (_, Json::Null) => Box::new(CelNull),
        (Kind::Object(fields), Json::Object(map)) => {
            let mut out = HashMap::with_capacity(map.len().min(fields.len()));
            for (name, value) in map {
                if let Some(field) = fields.get(name) {
                    if let Some(cel_name) = &field.cel_name {
                        out.insert(
                            CelMapKey::from(cel_name.as_str()),
                            to_val(field.cel(), value),
                        );
                    }
                }
            }
            Box::new(CelMap::from(out))
        }
        (Kind::Map(values), Json::Object(map)) => {
            let mut out = HashMap::with_capacity(map.len());
            for (key, value) in map {
                out.insert(CelMapKey::from(key.as_str()), to_val(values, value));
            }
            Box::new(CelMap::from(out))
        }
        (Kind::List { items, .. }, Json::Array(list)) => Box::new(CelList::from(
            list.iter()
                .map(|item| to_val(items, item))
                .collect::<Vec<_>>(),
        )),
        (Kind::String(format), Json::String(s)) => string(*format, s),
        (Kind::Integer | Kind::IntOrString, Json::Number(n)) => integer(n),
        (Kind::Number, Json::Number(n)) => Box::new(CelDouble::from(n.as_f64().unwrap_or(0.0))),
        (Kind::Boolean, Json::Bool(b)) => Box::new(CelBool::from(*b)),
        // No type, or a value the schema would not have let through: as it is.
        _ => any(json),
    }
}

fn string<'v>(format: Format, s: &'v str) -> Box<dyn Val + 'v> {
    let converted = match format {
        Format::Plain => None,
        Format::Byte => base64::engine::general_purpose::STANDARD
            .decode(s)
            .ok()
            .map(|b| Box::new(CelBytes::from(b)) as Box<dyn Val>),
        Format::Duration => env::duration(s),
        Format::DateTime => env::timestamp(s),
        Format::Date => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| env::timestamp(&format!("{d}T00:00:00Z"))),
    };
    converted.unwrap_or_else(|| Box::new(CelString::from(s)))
}

fn integer<'v>(n: &Number) -> Box<dyn Val + 'v> {
    if let Some(i) = n.as_i64() {
        Box::new(CelInt::from(i))
    } else if let Some(u) = n.as_u64() {
        Box::new(CelUInt::from(u))
    } else {
        let f = n.as_f64().unwrap_or(0.0);
        if f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64 {
            Box::new(CelInt::from(f as i64))
        } else {
            Box::new(CelDouble::from(f))
        }
    }
}

/// A value without a schema: JSON's own types.
pub(super) fn any<'v>(json: &'v Json) -> Box<dyn Val + 'v> {
    match json {
        Json::Null => Box::new(CelNull),
        Json::Bool(b) => Box::new(CelBool::from(*b)),
        Json::Number(n) if n.is_f64() => Box::new(CelDouble::from(n.as_f64().unwrap_or(0.0))),
        Json::Number(n) => integer(n),
        Json::String(s) => Box::new(CelString::from(s.as_str())),
        Json::Array(list) => Box::new(CelList::from(list.iter().map(any).collect::<Vec<_>>())),
        Json::Object(map) => Box::new(CelMap::from(
            map.iter()
                .map(|(k, v)| (CelMapKey::from(k.as_str()), any(v)))
                .collect::<HashMap<_, _>>(),
        )),
    }
}

/// A copy of `value` that borrows nothing, to be kept past the evaluation that made it (a
/// policy's variable, computed once and read by every later expression); `None` for a value
/// of a type no copy is known for.
pub(super) fn to_static(value: &dyn Val) -> Option<Box<dyn Val + 'static>> {
    use cel::common::types::{
        CelDuration, CelMap as Map, CelOptional, CelStruct, CelTimestamp, CelType,
    };
    if let Some(s) = value.downcast_ref::<CelString>() {
        return Some(Box::new(CelString::from(s.inner().to_string())));
    }
    if let Some(b) = value.downcast_ref::<CelBytes>() {
        return Some(Box::new(CelBytes::from(b.inner().to_vec())));
    }
    if let Some(list) = value.downcast_ref::<CelList>() {
        let items = list
            .inner()
            .iter()
            .map(|item| to_static(item.as_ref()))
            .collect::<Option<Vec<_>>>()?;
        return Some(Box::new(CelList::from(items)));
    }
    if let Some(map) = value.downcast_ref::<Map>() {
        let entries = map
            .inner()
            .iter()
            .map(|(k, v)| Some((k.clone().into_static(), to_static(v.as_ref())?)))
            .collect::<Option<HashMap<_, _>>>()?;
        return Some(Box::new(CelMap::from(entries)));
    }
    if let Some(optional) = value.downcast_ref::<CelOptional>() {
        return Some(Box::new(match optional.option() {
            Some(inner) => CelOptional::of(to_static(inner)?),
            None => CelOptional::none(),
        }));
    }
    if let Some(s) = value.downcast_ref::<CelStruct>() {
        return s.to_static().ok().map(|s| Box::new(s) as Box<dyn Val>);
    }
    fn copy<T: Val + Clone + 'static>(value: &dyn Val) -> Option<Box<dyn Val>> {
        value
            .as_any()?
            .downcast_ref::<T>()
            .map(|v| Box::new(v.clone()) as Box<dyn Val>)
    }
    copy::<CelBool>(value)
        .or_else(|| copy::<CelInt>(value))
        .or_else(|| copy::<CelUInt>(value))
        .or_else(|| copy::<CelDouble>(value))
        .or_else(|| copy::<CelNull>(value))
        .or_else(|| copy::<CelDuration>(value))
        .or_else(|| copy::<CelTimestamp>(value))
        .or_else(|| copy::<CelType>(value))
        .or_else(|| super::lib::clone_static(value))
}
