//! Typed access to the metadata of JSON objects. Objects stay `serde_json::Value` end to end;
//! only what the registry reasons about is read through these helpers.

use serde_json::{Map, Value};

/// JSON text with object keys sorted at every depth: one spelling per value, whatever order
/// its maps had (the one canonical-JSON printer, structured-merge's).
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    structured_merge::canonical_json(v, &mut out);
    out
}

pub type Object = Value;

pub const FINALIZER_ORPHAN: &str = "orphan";
pub const FINALIZER_FOREGROUND: &str = "foregroundDeletion";

/// An RFC 3339 timestamp at second precision, as metav1.Time serializes.
pub fn timestamp(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub fn now() -> String {
    timestamp(chrono::Utc::now())
}

pub fn parse_time(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

pub(crate) fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata")?.as_object()
}

/// The array at `path` when there is one. Unlike indexing a mutable value
/// (`pod["spec"]["initContainers"].as_array_mut()`), which adds a missing field as null that
/// then shows in the stored object, this never changes `obj`.
pub fn array_at_mut<'a>(obj: &'a mut Value, path: &[&str]) -> Option<&'a mut Vec<Value>> {
    path.iter()
        .try_fold(obj, |value, field| value.get_mut(*field))?
        .as_array_mut()
}

/// The metadata map, created if missing (or if it was not an object).
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = obj.as_object_mut().expect("made an object above");
    let entry = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("made an object above")
}

pub fn str_field<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj)?.get(field)?.as_str()
}

pub fn name(obj: &Value) -> &str {
    str_field(obj, "name").unwrap_or_default()
}

pub fn namespace(obj: &Value) -> &str {
    str_field(obj, "namespace").unwrap_or_default()
}

pub fn uid(obj: &Value) -> &str {
    str_field(obj, "uid").unwrap_or_default()
}

pub fn resource_version(obj: &Value) -> &str {
    str_field(obj, "resourceVersion").unwrap_or_default()
}

pub fn generation(obj: &Value) -> i64 {
    meta(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

pub fn deletion_timestamp(obj: &Value) -> Option<&str> {
    str_field(obj, "deletionTimestamp")
}

pub fn deletion_grace_period(obj: &Value) -> Option<i64> {
    meta(obj)?.get("deletionGracePeriodSeconds")?.as_i64()
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    let meta = meta_mut(obj);
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), Value::from(finalizers.to_vec()));
    }
}

pub fn labels(obj: &Value) -> &Value {
    meta(obj)
        .and_then(|m| m.get("labels"))
        .unwrap_or(&Value::Null)
}

/// The value at a dotted path (`spec.nodeName`), for field selectors: strings as they are,
/// numbers and booleans printed, anything missing as "".
pub fn field_value(obj: &Value, path: &str) -> String {
    let mut cur = obj;
    for part in path.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// The object without metadata and status: what a generation bump compares.
pub fn spec_part(obj: &Value) -> Map<String, Value> {
    obj.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn array_at_mut_finds_an_array_and_adds_nothing_when_there_is_none() {
        let mut pod = json!({"spec": {"containers": [{"name": "c"}]}});
        let before = pod.clone();
        assert!(array_at_mut(&mut pod, &["spec", "initContainers"]).is_none());
        assert!(array_at_mut(&mut pod, &["status", "conditions"]).is_none());
        assert_eq!(pod, before, "nothing added");
        array_at_mut(&mut pod, &["spec", "containers"])
            .expect("the containers")
            .push(json!({"name": "d"}));
        assert_eq!(pod["spec"]["containers"][1]["name"], "d");
    }

    #[test]
    fn meta_access_tolerates_odd_shapes() {
        assert_eq!(name(&json!(null)), "");
        assert_eq!(name(&json!({"metadata": 5})), "");
        let mut v = json!({"metadata": "x"});
        meta_mut(&mut v).insert("name".into(), json!("a"));
        assert_eq!(name(&v), "a");
        let mut s = json!("string");
        set_finalizers(&mut s, &["f".to_string()]);
        assert_eq!(finalizers(&s), vec!["f"]);
    }

    #[test]
    fn field_values() {
        let pod = json!({"spec": {"nodeName": "n1", "hostNetwork": true}, "status": {"phase": "Running"}});
        assert_eq!(field_value(&pod, "spec.nodeName"), "n1");
        assert_eq!(field_value(&pod, "spec.hostNetwork"), "true");
        assert_eq!(field_value(&pod, "status.podIP"), "");
    }

    #[test]
    fn timestamps_round_trip() {
        let t = now();
        assert!(parse_time(&t).is_some());
        assert!(t.ends_with('Z') && t.len() == 20);
    }
}
