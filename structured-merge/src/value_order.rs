//! A total order over JSON values, as upstream's `value.Compare`: numbers (ints and floats
//! compared numerically), then strings, booleans, lists, maps, and null last. Path elements and
//! keys sort by it, which fixes the order FieldsV1 is written in.

use serde_json::Value;
use std::cmp::Ordering;

fn rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

pub(crate) fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => compare_seq(x.iter(), y.iter()),
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<_> = x.iter().collect();
            let mut ys: Vec<_> = y.iter().collect();
            xs.sort_by(|l, r| l.0.cmp(r.0));
            ys.sort_by(|l, r| l.0.cmp(r.0));
            compare_fields(
                xs.into_iter().map(|(k, v)| (k.as_str(), v)),
                ys.into_iter().map(|(k, v)| (k.as_str(), v)),
            )
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Deep equality under the same rules as `compare` (1 equals 1.0), without sorting or
/// allocating: the hot path of comparisons and of apply's no-op check.
pub(crate) fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Ordering::Equal,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(l, r)| equal(l, r))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, l)| y.get(k).is_some_and(|r| equal(l, r)))
        }
        _ => false,
    }
}

fn compare_numbers(x: &serde_json::Number, y: &serde_json::Number) -> Ordering {
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return a.cmp(&b);
    }
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return a.cmp(&b);
    }
    let a = x.as_f64().unwrap_or(f64::NAN);
    let b = y.as_f64().unwrap_or(f64::NAN);
    a.total_cmp(&b)
}

fn compare_seq<'a>(
    mut x: impl Iterator<Item = &'a Value>,
    mut y: impl Iterator<Item = &'a Value>,
) -> Ordering {
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(a), Some(b)) => match compare(a, b) {
                Ordering::Equal => {}
                other => return other,
            },
        }
    }
}

/// Compares two name-sorted field lists element by element; the shorter prefix sorts first.
pub(crate) fn compare_fields<'a>(
    mut x: impl Iterator<Item = (&'a str, &'a Value)>,
    mut y: impl Iterator<Item = (&'a str, &'a Value)>,
) -> Ordering {
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some((ka, va)), Some((kb, vb))) => match ka.cmp(kb).then_with(|| compare(va, vb)) {
                Ordering::Equal => {}
                other => return other,
            },
        }
    }
}

/// Writes `v` as compact JSON with object keys sorted, as upstream's encoder does, so a key
/// or value path element has one spelling whatever order the input object had.
pub fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<_> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical_json(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_order_numbers_strings_bools_lists_maps_null() {
        let ordered = [
            json!(1),
            json!("a"),
            json!(false),
            json!([]),
            json!({}),
            json!(null),
        ];
        for pair in ordered.windows(2) {
            assert_eq!(compare(&pair[0], &pair[1]), Ordering::Less, "{pair:?}");
        }
    }

    #[test]
    fn ints_and_floats_compare_numerically() {
        assert_eq!(compare(&json!(1), &json!(1.5)), Ordering::Less);
        assert_eq!(compare(&json!(-3), &json!(2)), Ordering::Less);
        assert_eq!(compare(&json!(2.0), &json!(2.0)), Ordering::Equal);
    }

    #[test]
    fn equal_agrees_with_compare() {
        let pairs = [
            (json!(1), json!(1.0), true),
            (
                json!({"a": [1, "x"], "b": null}),
                json!({"b": null, "a": [1.0, "x"]}),
                true,
            ),
            (json!({"a": 1}), json!({"a": 1, "b": 2}), false),
            (json!([1, 2]), json!([2, 1]), false),
            (json!(null), json!(false), false),
        ];
        for (a, b, want) in pairs {
            assert_eq!(equal(&a, &b), want, "{a} vs {b}");
            assert_eq!(compare(&a, &b) == Ordering::Equal, want, "{a} vs {b}");
        }
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let mut s = String::new();
        canonical_json(&json!({"b": 1, "a": {"d": [true], "c": "x"}}), &mut s);
        assert_eq!(s, r#"{"a":{"c":"x","d":[true]},"b":1}"#);
    }
}
