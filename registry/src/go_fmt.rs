//! Values printed as Go's fmt prints them in upstream's messages, so error texts read as
//! upstream's do: `%v` of decoded JSON (`map[image:nginx]`, as strategic merge patch errors
//! show it), `%#v` of decoded JSON (`map[string]interface {}{"a":1}`, as CRD schema errors show
//! bad values) and `%#v` of the typed values the built-in validation prints
//! (`v1.LabelSelector{MatchLabels:...}`, `intstr.IntOrString{...}`). Upstream decodes integers
//! as int64 and other numbers as float64; map keys print sorted, as Go's fmt sorts them.

use serde_json::{Map, Number, Value};

use crate::validation::quote;

// `%v` of decoded JSON.

/// `%v` of a decoded JSON value; map keys sorted, as Go's fmt sorts them.
pub fn value(v: &Value) -> String {
    let mut out = String::new();
    write(&mut out, v);
    out
}

/// `%v` of a decoded JSON object.
pub fn map(m: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_map(&mut out, m);
    out
}

/// `%v` of a decoded JSON array.
pub fn list(items: &[Value]) -> String {
    let mut out = String::new();
    write_list(&mut out, items);
    out
}

fn write(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
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
pub fn type_name(v: &Value) -> &'static str {
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
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

// `%v` and `%#v` of decoded JSON as field errors show bad values.

/// A bad value as upstream's field error body shows it.
pub fn error_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => quote(s),
        Value::Array(_) | Value::Object(_) => sharp(value),
    }
}

/// Whether upstream holds this number as an int64 (otherwise a float64).
pub fn is_int(n: &Number) -> bool {
    n.is_i64()
}

/// A number with `%v`.
pub fn number(n: &Number) -> String {
    match n.as_i64() {
        Some(i) => i.to_string(),
        None => float(n.as_f64().unwrap_or_default()),
    }
}

/// A float64 with `%v`: the shortest digits that read back, in exponent form when the exponent
/// is below -4 or at least 6 (Go's %g with shortest precision).
pub fn float(f: f64) -> String {
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
pub fn sharp(value: &Value) -> String {
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
pub fn string_slice_of(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|s| quote(s)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

/// The JSON type upstream's type check names for a value.
pub fn json_type(value: &Value) -> &'static str {
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

// `%#v` of typed values.

/// A `map[string]string` (labels, a selector's matchLabels); null or absent is Go's nil map.
pub fn string_map(value: Option<&Value>) -> String {
    let Some(Value::Object(map)) = value else {
        return "map[string]string(nil)".to_string();
    };
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_unstable_by_key(|(k, _)| *k);
    let body: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}:{}", quote(k), quote(v.as_str().unwrap_or_default())))
        .collect();
    format!("map[string]string{{{}}}", body.join(", "))
}

/// A `[]string`; null or absent is Go's nil slice.
pub fn string_slice(value: Option<&Value>) -> String {
    let Some(Value::Array(items)) = value else {
        return "[]string(nil)".to_string();
    };
    let body: Vec<String> = items
        .iter()
        .map(|v| quote(v.as_str().unwrap_or_default()))
        .collect();
    format!("[]string{{{}}}", body.join(", "))
}

/// A metav1.LabelSelector.
pub fn label_selector(value: &Value) -> String {
    let expressions = match value.get("matchExpressions") {
        Some(Value::Array(items)) => {
            let body: Vec<String> = items
                .iter()
                .map(|e| {
                    let text =
                        |k: &str| quote(e.get(k).and_then(Value::as_str).unwrap_or_default());
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        text("key"),
                        text("operator"),
                        string_slice(e.get("values"))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", body.join(", "))
        }
        _ => "[]v1.LabelSelectorRequirement(nil)".to_string(),
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{}}}",
        string_map(value.get("matchLabels")),
        expressions
    )
}

/// An intstr.IntOrString (maxSurge, maxUnavailable).
pub fn int_or_string(value: &Value) -> String {
    match value {
        Value::String(s) => format!(
            "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
            quote(s)
        ),
        other => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            other.as_i64().unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn renders_like_go() {
        assert_eq!(string_map(None), "map[string]string(nil)");
        assert_eq!(
            string_map(Some(&json!({"b": "2", "a": "1"}))),
            r#"map[string]string{"a":"1", "b":"2"}"#
        );
        assert_eq!(
            label_selector(&json!({})),
            "v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
        );
        assert_eq!(
            label_selector(
                &json!({"matchExpressions": [{"key": "k", "operator": "In", "values": ["x"]}]})
            ),
            r#"v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"k", Operator:"In", Values:[]string{"x"}}}}"#
        );
        assert_eq!(
            int_or_string(&json!(0)),
            r#"intstr.IntOrString{Type:0, IntVal:0, StrVal:""}"#
        );
        assert_eq!(
            int_or_string(&json!("5")),
            r#"intstr.IntOrString{Type:1, IntVal:0, StrVal:"5"}"#
        );
    }
}
