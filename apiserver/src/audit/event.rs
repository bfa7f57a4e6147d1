//! The audit.k8s.io/v1 Event, field for field as upstream writes it, and the finishing of an
//! event from the bodies captured while the request was served (done by the log writer, off
//! the request's path).

use std::collections::BTreeMap;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use registry::auth::UserInfo;
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::policy::{Level, Stage};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub level: Level,
    #[serde(rename = "auditID")]
    pub audit_id: String,
    pub stage: Stage,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    pub verb: String,
    pub user: User,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<User>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    #[serde(serialize_with = "micro_time")]
    pub request_received_timestamp: DateTime<Utc>,
    #[serde(serialize_with = "micro_time")]
    pub stage_timestamp: DateTime<Utc>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// authentication.k8s.io/v1 UserInfo.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct User {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for User {
    fn from(u: &UserInfo) -> Self {
        User {
            username: u.name.clone(),
            uid: u.uid.clone(),
            groups: u.groups.clone(),
            extra: u.extra.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The metav1.Status of the response: the code, and for a Status body its status, message,
/// reason and details.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResponseStatus {
    /// Always `{}`, as Go writes a Status's ListMeta.
    pub metadata: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(skip_serializing_if = "is_zero")]
    pub code: u16,
}

impl ResponseStatus {
    pub fn code(code: u16) -> Self {
        ResponseStatus {
            code,
            ..Default::default()
        }
    }
}

fn is_zero(code: &u16) -> bool {
    *code == 0
}

/// metav1.MicroTime: RFC 3339 in UTC with microseconds.
fn micro_time<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&t.format("%Y-%m-%dT%H:%M:%S%.6fZ"))
}

/// A body as it went over the wire (its chunks, shared with the response rather than
/// copied), kept until the event is written.
#[derive(Debug, Clone, Default)]
pub struct Body {
    pub chunks: Vec<Bytes>,
    pub format: Format,
    /// The body outgrew what is kept of it.
    pub truncated: bool,
}

impl Body {
    fn value(&self) -> Option<Value> {
        if self.truncated || self.chunks.is_empty() {
            return None;
        }
        let bytes = match self.chunks.as_slice() {
            [one] => one.clone(),
            chunks => Bytes::from(chunks.concat()),
        };
        match self.format {
            Format::Json => serde_json::from_slice(&bytes).ok(),
            Format::Yaml => serde_yaml_ng::from_slice(&bytes).ok(),
            // Recorded as JSON, as upstream re-encodes the decoded object.
            Format::Protobuf => crate::api::protobuf::decode(&bytes).ok(),
        }
    }
}

/// The media types a body is recorded from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Json,
    Yaml,
    Protobuf,
}

/// upstream's truncating backend's mark of an event whose objects were left out.
pub const TRUNCATED: &str = "audit.k8s.io/truncated";

impl Event {
    /// What upstream's handlers log of the request object: its metadata completes the
    /// object reference (a create names its object only in the body) and, from level
    /// Request, the object itself. A patch is recorded as sent and completes nothing.
    pub fn log_request(&mut self, body: &Body, patch: bool, omit_managed_fields: bool) {
        if body.truncated {
            self.truncated();
        }
        let Some(mut object) = body.value() else {
            return;
        };
        if !patch {
            if let Some(reference) = &mut self.object_ref {
                let meta = |field: &str| {
                    object
                        .pointer(&format!("/metadata/{field}"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                for (mine, field) in [
                    (&mut reference.namespace, "namespace"),
                    (&mut reference.name, "name"),
                    (&mut reference.uid, "uid"),
                    (&mut reference.resource_version, "resourceVersion"),
                ] {
                    if mine.is_empty() {
                        *mine = meta(field);
                    }
                }
            }
        }
        if self.level >= Level::Request {
            if omit_managed_fields && !patch {
                without_managed_fields(&mut object);
            }
            self.request_object = Some(object);
        }
    }

    /// A Status body fills the response status; from level RequestResponse the body is the
    /// response object.
    pub fn log_response(&mut self, body: &Body, omit_managed_fields: bool) {
        if body.truncated && self.level >= Level::RequestResponse {
            self.truncated();
        }
        let Some(mut object) = body.value() else {
            return;
        };
        if object.get("kind").and_then(Value::as_str) == Some("Status") {
            let status = self.response_status.get_or_insert_with(Default::default);
            let text = |field: &str| {
                object
                    .get(field)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            status.status = text("status");
            status.message = text("message");
            status.reason = text("reason");
            status.details = object.get("details").cloned();
        }
        if self.level >= Level::RequestResponse {
            if omit_managed_fields {
                without_managed_fields(&mut object);
            }
            self.response_object = Some(object);
        }
    }

    fn truncated(&mut self) {
        self.annotations
            .entry(TRUNCATED.into())
            .or_insert_with(|| "true".into());
    }

    /// One line of the log: JSON with `<`, `>`, `&`, U+2028 and U+2029 escaped, as Go's
    /// encoder writes them.
    pub fn to_line(&self) -> serde_json::Result<String> {
        let json = serde_json::to_string(self)?;
        if !json.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
            return Ok(json);
        }
        let mut escaped = String::with_capacity(json.len() + 16);
        for c in json.chars() {
            match c {
                '<' => escaped.push_str("\\u003c"),
                '>' => escaped.push_str("\\u003e"),
                '&' => escaped.push_str("\\u0026"),
                '\u{2028}' => escaped.push_str("\\u2028"),
                '\u{2029}' => escaped.push_str("\\u2029"),
                c => escaped.push(c),
            }
        }
        Ok(escaped)
    }
}

/// Drops metadata.managedFields of an object, of a list's items and of a Table's rows.
fn without_managed_fields(object: &mut Value) {
    let strip = |o: &mut Value| {
        if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
    };
    strip(object);
    if let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip);
    }
    if let Some(rows) = object.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            if let Some(o) = row.get_mut("object") {
                strip(o);
            }
        }
    }
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
