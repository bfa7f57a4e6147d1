//! Lenient reads from object JSON: a missing or mistyped field reads as its zero value, the
//! way upstream's typed printers see an unset Go field.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

pub(super) fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, key| v.get(*key))
}

/// The string at `path`, or "" (Go's zero string).
pub(super) fn text<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    get(v, path).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn int(v: &Value, path: &[&str]) -> Option<i64> {
    get(v, path).and_then(Value::as_i64)
}

pub(super) fn items<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    get(v, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub(super) fn object<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    get(v, path).and_then(Value::as_object)
}

/// How many entries the map or list at `path` has.
pub(super) fn len(v: &Value, path: &[&str]) -> i64 {
    let n = match get(v, path) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A metav1.Time or metav1.MicroTime; None stands for Go's zero time.
pub(super) fn time(v: &Value, path: &[&str]) -> Option<DateTime<Utc>> {
    let s = get(v, path)?.as_str()?;
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

pub(super) fn deleting(obj: &Value) -> bool {
    get(obj, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null())
}

/// Whether the condition of `kind` in `conditions` has status True. Upstream looks at the
/// first condition of that type only.
pub(super) fn condition_true(conditions: &[Value], kind: &str) -> bool {
    conditions
        .iter()
        .find(|c| text(c, &["type"]) == kind)
        .is_some_and(|c| text(c, &["status"]) == "True")
}

/// The default table convertor's "Created At": RFC 3339 in UTC, Go's zero time when unset.
pub(super) fn created_at(obj: &Value) -> Value {
    let at = time(obj, &["metadata", "creationTimestamp"]).map_or_else(
        || "0001-01-01T00:00:00Z".to_string(),
        |t| t.to_rfc3339_opts(SecondsFormat::Secs, true),
    );
    Value::String(at)
}
