//! Values printed as Go prints the decoded JSON (`%v` of map[string]interface{}), so error
//! messages read as upstream's do: `map: map[image:nginx] does not contain declared merge
//! key: name`.

use serde_json::{Map, Value};

/// `%v` of a decoded JSON value; map keys sorted, as Go's fmt sorts them.
pub(super) fn value(v: &Value) -> String {
    let mut out = String::new();
    write(&mut out, v);
    out
}

/// `%v` of a decoded JSON object.
pub(super) fn map(m: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_map(&mut out, m);
    out
}

/// `%v` of a decoded JSON array.
pub(super) fn list(items: &[Value]) -> String {
    let mut out = String::new();
    write_list(&mut out, items);
    out
}

fn write(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => write_list(out, items),
        Value::Object(m) => write_map(out, m),
    }
}

fn write_list(out: &mut String, items: &[Value]) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write(out, item);
    }
    out.push(']');
}

fn write_map(out: &mut String, m: &Map<String, Value>) {
    out.push_str("map[");
    for (i, (k, item)) in m.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push(':');
        write(out, item);
    }
    out.push(']');
}

/// The Go type a decoded JSON value has, as `reflect.TypeOf` prints it.
pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The JSON kind encoding/json names in "cannot unmarshal X into ..." errors.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
