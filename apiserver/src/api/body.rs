//! Request bodies: JSON, YAML or protobuf into the object the registry works on. Duplicate
//! fields keep the last value, as upstream; they are noted as strict decoding errors for the
//! registry to judge under the request's fieldValidation, with the unknown fields it finds.

use std::fmt;

use axum::http::HeaderMap;
use registry::validation::quote;
use registry::RegistryError;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{json_syntax, protobuf};

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Bodies are JSON, YAML or (from client-go's typed clients) protobuf; anything else is 415.
pub fn check_body_type(headers: &HeaderMap, body: &[u8]) -> Result<(), RegistryError> {
    if body.is_empty() {
        return Ok(());
    }
    let ct = content_type(headers);
    let media = ct.split(';').next().unwrap_or_default().trim();
    if media.is_empty()
        || media == "application/json"
        || media.ends_with("+json")
        || media == "application/yaml"
        || media == protobuf::MEDIA_TYPE
    {
        return Ok(());
    }
    Err(RegistryError::UnsupportedMediaType(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {ct:?})"
    )))
}

/// A decoded body: the object, and a strict decoding error (`duplicate field "a.b"`) for
/// each field it named twice.
pub struct Parsed {
    pub value: Value,
    pub duplicates: Vec<String>,
}

/// The request body as an object of `kind`, the kind the endpoint takes (named when the
/// body is not a document at all, as upstream names it).
pub fn parse(headers: &HeaderMap, body: &[u8], kind: &str) -> Result<Parsed, RegistryError> {
    let ct = content_type(headers);
    let mut duplicates = Vec::new();
    let value = if ct.starts_with(protobuf::MEDIA_TYPE) {
        protobuf::decode(body)?
    } else if ct.starts_with("application/yaml") {
        let de = serde_yaml_ng::Deserializer::from_slice(body);
        Checked::root(&mut duplicates)
            .deserialize(de)
            .map_err(|e| {
                unrecognized(
                    kind,
                    &format!("error converting YAML to JSON: yaml: {e}"),
                    body,
                )
            })?
    } else {
        let mut de = serde_json::Deserializer::from_slice(body);
        Checked::root(&mut duplicates)
            .deserialize(&mut de)
            .and_then(|v| de.end().map(|()| v))
            .map_err(|e| match json_syntax::go_syntax_error(body) {
                Some(why) => unrecognized(
                    kind,
                    &format!("couldn't get version/kind; json parse error: {why}"),
                    body,
                ),
                // What Go's scanner accepts but serde refuses (a number out of range).
                None => RegistryError::BadRequest(format!(
                    "the body of the request could not be decoded as JSON: {e}"
                )),
            })?
    };
    if !value.is_object() {
        return Err(RegistryError::BadRequest(
            "the body of the request must be a JSON object".into(),
        ));
    }
    Ok(Parsed {
        value,
        duplicates: strict_errors(&duplicates),
    })
}

/// Upstream's refusal of a body it could not read an apiVersion and kind from.
fn unrecognized(kind: &str, why: &str, body: &[u8]) -> RegistryError {
    RegistryError::BadRequest(format!(
        "the object provided is unrecognized (must be of type {kind}): {why} ({})",
        json_syntax::summary(body)
    ))
}

/// The fields a JSON document names twice, as strict decoding errors; a document that is not
/// JSON has none here (whoever reads it refuses it).
pub fn duplicates(body: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    if Checked::root(&mut found).deserialize(&mut de).is_err() {
        return Vec::new();
    }
    strict_errors(&found)
}

fn strict_errors(paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .map(|path| format!("duplicate field {}", quote(path)))
        .collect()
}

/// A body that may be absent (DELETE): whitespace counts as none. Duplicates are ignored, as
/// upstream decodes options leniently.
pub fn optional_body(headers: &HeaderMap, body: &[u8]) -> Result<Option<Value>, RegistryError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let ct = content_type(headers);
    let value = if ct.starts_with(protobuf::MEDIA_TYPE) {
        protobuf::decode(body)?
    } else if ct.starts_with("application/yaml") {
        serde_yaml_ng::from_slice(body).map_err(|e| {
            RegistryError::BadRequest(format!(
                "the body of the request could not be decoded as YAML: {e}"
            ))
        })?
    } else {
        serde_json::from_slice(body).map_err(|e| {
            RegistryError::BadRequest(format!(
                "the body of the request could not be decoded as JSON: {e}"
            ))
        })?
    };
    Ok(Some(value))
}

/// Where a value sits in the document, as a chain on the stack: paths are only spelled out
/// for the rare duplicate, so decoding allocates nothing for them.
enum Step<'a> {
    Key(&'a str, &'a Step<'a>),
    Index(usize, &'a Step<'a>),
    Root,
}

impl fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Root => Ok(()),
            Step::Key(key, Step::Root) => write!(f, "{key}"),
            Step::Key(key, up) => write!(f, "{up}.{key}"),
            Step::Index(i, up) => write!(f, "{up}[{i}]"),
        }
    }
}

/// Decodes a JSON value like serde_json's own, noting keys that appear twice in an object
/// (the later value wins, as upstream keeps the last).
struct Checked<'a, 'p> {
    at: &'p Step<'p>,
    duplicates: &'a mut Vec<String>,
}

impl<'a> Checked<'a, 'static> {
    fn root(duplicates: &'a mut Vec<String>) -> Self {
        Self {
            at: &Step::Root,
            duplicates,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Checked<'_, '_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Checked<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            let at = Step::Index(items.len(), self.at);
            let seed = Checked {
                at: &at,
                duplicates: &mut *self.duplicates,
            };
            match seq.next_element_seed(seed)? {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let at = Step::Key(&key, self.at);
            let value = map.next_value_seed(Checked {
                at: &at,
                duplicates: &mut *self.duplicates,
            })?;
            let path = out.contains_key(&key).then(|| at.to_string());
            if let Some(path) = path {
                self.duplicates.push(path);
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests;
