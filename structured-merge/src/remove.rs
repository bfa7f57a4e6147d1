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
    let mut out = value.clone();
    remove_in_place(schema, root, &mut out, fields)?;
    Ok(out)
}

/// `remove` on a value the caller owns: what apply's pruning uses, so the merged object is
/// not copied again.
pub fn remove_in_place(
    schema: &Schema,
    root: &TypeRef,
    value: &mut Value,
    fields: &Set,
) -> Result<(), Error> {
    let mut path = Vec::new();
    remove_at(schema, root, value, fields, &mut path)
}

fn remove_at(
    schema: &Schema,
    tr: &TypeRef,
    value: &mut Value,
    fields: &Set,
    path: &mut Vec<PathElement>,
) -> Result<(), Error> {
    if fields.is_empty() {
        return Ok(());
    }
    let node = schema.resolve(tr)?;
    remove_node(schema, node, value, fields, path)
}

fn remove_node(
    schema: &Schema,
    node: Node<'_>,
    value: &mut Value,
    fields: &Set,
    path: &mut Vec<PathElement>,
) -> Result<(), Error> {
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
            let all = std::mem::take(items);
            for (index, mut item) in all.into_iter().enumerate() {
                let pe = item_element(schema, element, kind, index, &item, path)?;
                if fields.is_member(&pe) {
                    continue;
                }
                if let Some(sub) = fields.child(&pe) {
                    path.push(pe);
                    remove_at(schema, element, &mut item, sub, path)?;
                    path.pop();
                }
                items.push(item);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[derive(Clone, Copy)]
enum Child<'a> {
    Typed(&'a TypeRef),
    Deduced,
}

fn remove_entries<'s>(
    schema: &'s Schema,
    entries: &mut Map<String, Value>,
    fields: &Set,
    path: &mut Vec<PathElement>,
    child_type: impl Fn(&str) -> Option<Child<'s>>,
) -> Result<(), Error> {
    for pe in fields.members() {
        if let PathElement::Field(name) = pe {
            entries.remove(name);
        }
    }
    for (pe, sub) in fields.children() {
        let PathElement::Field(name) = pe else {
            continue;
        };
        // A field the schema does not know is kept as is.
        let (Some(v), Some(child)) = (entries.get_mut(name), child_type(name)) else {
            continue;
        };
        path.push(pe.clone());
        match child {
            Child::Typed(tr) => remove_at(schema, tr, v, sub, path)?,
            Child::Deduced => remove_node(schema, Node::Deduced, v, sub, path)?,
        }
        path.pop();
    }
    Ok(())
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
