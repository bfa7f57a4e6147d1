//! Bad values as upstream's field errors print them. A field.Invalid value that is a struct or
//! map is rendered with Go's `%#v`, and clients (and people grepping logs) see exactly that
//! text, e.g. `map[string]string{"app":"web"}` or `v1.LabelSelector{MatchLabels:...}`.

use serde_json::Value;

use super::quote;

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
