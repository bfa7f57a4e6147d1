//! Removing a set of fields from a value: how apply drops the fields an applier stopped
//! setting and nobody else owns.

use crate::list_item::item_element;
use crate::path::PathElement;
use crate::schema::{Node, Schema, TypeRef};
use crate::set::Set;
use crate::Error;
use serde_json::{Map, Value};

/// `value` without the fields in `fields`. A member path drops its whole subtree (a list item,
/// a map entry, a struct field); paths below it drop only what they name. Objects emptied
/// this way stay, as empty objects, like upstream.
pub fn remove(
    schema: &Schema,
    root: &TypeRef,
    value: &Value,
    fields: &Set,
) -> Result<Value, Error> {
    let mut path = Vec::new();
    remove_at(schema, root, value, fields, &mut path)
}

fn remove_at(
    schema: &Schema,
    tr: &TypeRef,
    value: &Value,
    fields: &Set,
    path: &mut Vec<PathElement>,
) -> Result<Value, Error> {
    if fields.is_empty() {
        return Ok(value.clone());
    }
    let node = schema.resolve(tr)?;
    remove_node(schema, node, value, fields, path)
}

fn remove_node(
    schema: &Schema,
    node: Node<'_>,
    value: &Value,
    fields: &Set,
    path: &mut Vec<PathElement>,
) -> Result<Value, Error> {
    match (node, value) {
        (
            Node::Struct {
                fields: declared,
                rest,
                ..
            },
            Value::Object(entries),
        ) => remove_entries(schema, entries, fields, path, |name| {
            declared.get(name).or(rest).map(Child::Typed)
        }),
        (Node::Map { value: of, .. }, Value::Object(entries)) => {
            remove_entries(schema, entries, fields, path, |_| Some(Child::Typed(of)))
        }
        (Node::Deduced, Value::Object(entries)) => {
            remove_entries(schema, entries, fields, path, |_| Some(Child::Deduced))
        }
        (Node::List { element, kind }, Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let pe = item_element(schema, element, kind, index, item, path)?;
                if fields.is_member(&pe) {
                    continue;
                }
                match fields.child(&pe) {
                    Some(sub) => {
                        path.push(pe.clone());
                        out.push(remove_at(schema, element, item, sub, path)?);
                        path.pop();
                    }
                    None => out.push(item.clone()),
                }
            }
            Ok(Value::Array(out))
        }
        _ => Ok(value.clone()),
    }
}

#[derive(Clone, Copy)]
enum Child<'a> {
    Typed(&'a TypeRef),
    Deduced,
}

fn remove_entries<'s>(
    schema: &'s Schema,
    entries: &Map<String, Value>,
    fields: &Set,
    path: &mut Vec<PathElement>,
    child_type: impl Fn(&str) -> Option<Child<'s>>,
) -> Result<Value, Error> {
    let mut out = Map::new();
    for (name, v) in entries {
        let pe = PathElement::Field(name.clone());
        if fields.is_member(&pe) {
            continue;
        }
        let kept = match (fields.child(&pe), child_type(name)) {
            (Some(sub), Some(child)) => {
                path.push(pe);
                let kept = match child {
                    Child::Typed(tr) => remove_at(schema, tr, v, sub, path)?,
                    Child::Deduced => remove_node(schema, Node::Deduced, v, sub, path)?,
                };
                path.pop();
                kept
            }
            // Nothing to remove below, or a field the schema does not know: keep it as is.
            _ => v.clone(),
        };
        out.insert(name.clone(), kept);
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldsv1::from_json_str;
    use crate::fixtures::{root, schema};
    use serde_json::json;

    fn removed(value: Value, fieldsv1: &str) -> Value {
        let set = match from_json_str(fieldsv1) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        match remove(&schema(), &root(), &value, &set) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn leaves_and_map_entries_are_removed() {
        let out = removed(
            json!({"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "1"}}}}),
            r#"{"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{"f:replicas":{},"f:selector":{}}}"#,
        );
        assert_eq!(
            out,
            json!({"metadata": {"name": "x", "labels": {"b": "2"}}, "spec": {}})
        );
    }

    #[test]
    fn list_items_by_key_value_and_only_named_subfields() {
        let out = removed(
            json!({"metadata": {"finalizers": ["a", "b"]},
                "spec": {"containers": [
                    {"name": "a", "image": "a:1"},
                    {"name": "b", "image": "b:1", "args": ["x"],
                        "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 81}]}]}}),
            concat!(
                r#"{"f:metadata":{"f:finalizers":{"v:\"a\"":{}}},"f:spec":{"f:containers":{"#,
                r#""k:{\"name\":\"a\"}":{},"k:{\"name\":\"b\"}":{"f:args":{},"#,
                r#""f:ports":{"k:{\"containerPort\":81,\"protocol\":\"TCP\"}":{}}}}}}"#
            ),
        );
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["b"]},
                "spec": {"containers": [{"name": "b", "image": "b:1",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}})
        );
    }

    #[test]
    fn deduced_subtrees_and_empty_sets() {
        let value = json!({"spec": {"config": {"a": {"x": 1, "y": 2}, "l": [1]}}});
        assert_eq!(removed(value.clone(), "{}"), value);
        assert_eq!(
            removed(
                value,
                r#"{"f:spec":{"f:config":{"f:a":{"f:x":{}},"f:l":{}}}}"#
            ),
            json!({"spec": {"config": {"a": {"y": 2}}}})
        );
    }

    #[test]
    fn a_keyless_item_in_a_list_being_pruned_is_an_error() {
        let set = from_json_str(r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{}}}}"#);
        let Ok(set) = set else { panic!() };
        let err = remove(
            &schema(),
            &root(),
            &json!({"spec": {"containers": [{"image": "x"}]}}),
            &set,
        );
        assert!(matches!(err, Err(Error::Value { ref path, .. }) if path == ".spec.containers"));
    }
}
