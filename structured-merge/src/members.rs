//! Making struct fields members of a set (upstream's EnsureNamedFieldsAreMembers): a set
//! built from a value names a struct field only through its leaves, but pruning and keeping
//! fields must treat the field itself as owned, so that a field nobody owns any more goes
//! as a whole.

use crate::path::PathElement;
use crate::schema::{Node, Schema, TypeRef};
use crate::set::Set;
use crate::Error;

/// `set` with every declared struct field that has paths below it also a member.
pub fn with_named_fields(schema: &Schema, root: &TypeRef, set: &Set) -> Result<Set, Error> {
    let mut out = set.clone();
    let mut path = Vec::new();
    walk(schema, Some(root), set, &mut path, &mut out)?;
    Ok(out)
}

fn walk(
    schema: &Schema,
    tr: Option<&TypeRef>,
    set: &Set,
    path: &mut Vec<PathElement>,
    out: &mut Set,
) -> Result<(), Error> {
    let node = match tr {
        Some(tr) => Some(schema.resolve(tr)?),
        None => None,
    };
    for (pe, sub) in set.children() {
        let (child, named) = match (node, pe) {
            (Some(Node::Struct { fields, rest, .. }), PathElement::Field(name)) => {
                match fields.get(name) {
                    Some(tr) => (Some(tr), true),
                    None => (rest, false),
                }
            }
            (Some(Node::Map { value, .. }), _) => (Some(value), false),
            (Some(Node::List { element, .. }), _) => (Some(element), false),
            _ => (None, false),
        };
        path.push(pe.clone());
        if named {
            out.insert(path);
        }
        walk(schema, child, sub, path, out)?;
        path.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldsv1::{from_json_str, to_json_string};
    use crate::fixtures::{root, schema};

    #[test]
    fn struct_fields_become_members_map_entries_do_not() {
        let set = from_json_str(concat!(
            r#"{"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{"f:containers":{"#,
            r#""k:{\"name\":\"a\"}":{"f:image":{}}}}}"#
        ));
        let Ok(set) = set else { panic!() };
        let Ok(out) = with_named_fields(&schema(), &root(), &set) else {
            panic!()
        };
        assert_eq!(
            to_json_string(&out),
            concat!(
                r#"{"f:metadata":{".":{},"f:labels":{".":{},"f:a":{}}},"f:spec":{".":{},"#,
                r#""f:containers":{".":{},"k:{\"name\":\"a\"}":{"f:image":{}}}}}"#
            )
        );
    }
}
