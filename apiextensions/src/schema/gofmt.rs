//! JSON values as Go's fmt prints the decoded values in upstream's messages: upstream decodes
//! integers as int64 and other numbers as float64, and a field error shows its bad value with
//! `%v` for numbers and booleans, `%q` for strings and `%#v` for maps and slices.

use registry::validation::quote;
use serde_json::{Number, Value};

/// A bad value as upstream's field error body shows it.
pub(super) fn error_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => quote(s),
        Value::Array(_) | Value::Object(_) => sharp(value),
    }
}

/// Whether upstream holds this number as an int64 (otherwise a float64).
pub(super) fn is_int(n: &Number) -> bool {
    n.is_i64()
}

/// A number with `%v`.
pub(super) fn number(n: &Number) -> String {
    match n.as_i64() {
        Some(i) => i.to_string(),
        None => float(n.as_f64().unwrap_or_default()),
    }
}

/// A float64 with `%v`: the shortest digits that read back, in exponent form when the exponent
/// is below -4 or at least 6 (Go's %g with shortest precision).
pub(super) fn float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let scientific = format!("{f:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific;
    };
    let exponent: i32 = exponent.parse().unwrap_or_default();
    if (-4..6).contains(&exponent) {
        return format!("{f}");
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
}

/// A value with `%#v`, as an element of Go's map[string]interface{} / []interface{}.
pub(super) fn sharp(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(sharp).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Object(map) => {
            // Go's fmt prints map keys sorted.
            let mut sorted: Vec<(&String, &Value)> = map.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            let entries: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| format!("{}:{}", quote(k), sharp(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", entries.join(", "))
        }
    }
}

/// A string slice with `%#v`, as upstream shows x-kubernetes-list-map-keys.
pub(super) fn string_slice(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|s| quote(s)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

/// The JSON type upstream's type check names for a value.
pub(super) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if is_int(n) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
