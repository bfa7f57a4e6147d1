//! Comparing two values of one type: which fields an update added, changed and removed, and
//! so which fields its manager now owns and which it took from others.

use crate::list_item::{index_items, positions, Occurs};
use crate::path::PathElement;
use crate::schema::{ListKind, Node, Schema, TypeRef};
use crate::set::Set;
use crate::value_order::equal;
use crate::Error;
use serde_json::{Map, Value};

/// What changed from an old value to a new one, as field sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

impl Comparison {
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// Added and modified fields: what a writer set.
    pub fn changed(&self) -> Set {
        self.added.union(&self.modified)
    }

    /// The comparison without the fields `ignored` names (and everything below them).
    pub fn without(&self, ignored: &Set) -> Comparison {
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

/// Options of a comparison.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompareOptions {
    /// Whether a struct field that appears or disappears is itself recorded, besides its
    /// fields. Upstream compares typed built-in objects whose non-pointer struct fields are
    /// always there (as Go zero values), so it records none of those; custom resources are
    /// plain maps, where every object that appears is recorded.
    pub struct_members: bool,
}

/// Compares `old` with `new`, both of type `root`. Scalars and atomic values are compared
/// whole; granular objects and lists field by field and item by item, and a granular map
/// entry or list item that appears or goes is recorded itself as well as its fields.
pub fn compare(
    schema: &Schema,
    root: &TypeRef,
    old: &Value,
    new: &Value,
    options: CompareOptions,
) -> Result<Comparison, Error> {
    let mut walker = Walker {
        schema,
        options,
        path: Vec::new(),
        out: Comparison::default(),
    };
    walker.at(root, Some(old), Some(new), false)?;
    Ok(walker.out)
}

struct Walker<'a> {
    schema: &'a Schema,
    options: CompareOptions,
    path: Vec<PathElement>,
    out: Comparison,
}

#[derive(Clone, Copy)]
enum Child<'s> {
    /// A field the struct declares.
    Field(&'s TypeRef),
    /// A declared field a typed object always holds (null when unset).
    AlwaysThere(&'s TypeRef),
    /// An entry of a map, or a struct's undeclared field.
    Entry(&'s TypeRef),
    Deduced,
}

/// The entries of a granular object; null counts as an empty one.
fn entries(v: Option<&Value>) -> Option<Option<&Map<String, Value>>> {
    match v {
        None | Some(Value::Null) => Some(None),
        Some(Value::Object(m)) => Some(Some(m)),
        Some(_) => None,
    }
}

fn items(v: Option<&Value>) -> Option<&[Value]> {
    match v {
        None | Some(Value::Null) => Some(&[]),
        Some(Value::Array(a)) => Some(a),
        Some(_) => None,
    }
}

impl<'s> Walker<'s> {
    fn at(
        &mut self,
        tr: &'s TypeRef,
        old: Option<&Value>,
        new: Option<&Value>,
        field: bool,
    ) -> Result<(), Error> {
        let node = self.schema.resolve(tr)?;
        self.node(node, old, new, field)
    }

    /// `field`: the value is a declared field of a struct (not a map entry or list item).
    fn node(
        &mut self,
        node: Node<'s>,
        old: Option<&Value>,
        new: Option<&Value>,
        field: bool,
    ) -> Result<(), Error> {
        let record = !field || !matches!(node, Node::Struct { .. }) || self.options.struct_members;
        // Upstream's "empty promotes to leaf": an empty or null granular value is compared
        // whole, which keeps `{}` and null apart and records an empty value that appears.
        if is_granular(node) && is_empty(old) && is_empty(new) {
            if record && !self.path.is_empty() {
                self.leaf(old, new);
            }
            return Ok(());
        }
        let granular = match node {
            Node::Struct {
                fields,
                rest,
                required,
                atomic: false,
                ..
            } => {
                // A typed built-in object always holds its required fields (null when
                // unset): one that gets a value was there already.
                let typed = !self.options.struct_members;
                let always = move |name: &str| typed && required.contains(name);
                self.maps(old, new, |name| match fields.get(name) {
                    Some(tr) if always(name) => Some(Child::AlwaysThere(tr)),
                    Some(tr) => Some(Child::Field(tr)),
                    None => rest.map(Child::Entry),
                })?
            }
            Node::Map {
                value,
                atomic: false,
            } => self.maps(old, new, |_| Some(Child::Entry(value)))?,
            Node::Deduced => self.maps(old, new, |_| Some(Child::Deduced))?,
            Node::List { element, kind } if *kind != ListKind::Atomic => {
                self.lists(element, kind, old, new)?
            }
            _ => false,
        };
        if !granular {
            self.leaf(old, new);
            return Ok(());
        }
        if record && !self.path.is_empty() {
            match (old, new) {
                (None, Some(_)) => self.out.added.insert(&self.path),
                (Some(_), None) => self.out.removed.insert(&self.path),
                _ => {}
            }
        }
        Ok(())
    }

    fn leaf(&mut self, old: Option<&Value>, new: Option<&Value>) {
        match (old, new) {
            (None, Some(_)) => self.out.added.insert(&self.path),
            (Some(_), None) => self.out.removed.insert(&self.path),
            (Some(o), Some(n)) if !equal(o, n) => self.out.modified.insert(&self.path),
            _ => {}
        }
    }

    /// Compares two objects entry by entry; false when either side is not an object.
    fn maps(
        &mut self,
        old: Option<&Value>,
        new: Option<&Value>,
        child: impl Fn(&str) -> Option<Child<'s>>,
    ) -> Result<bool, Error> {
        let (Some(o), Some(n)) = (entries(old), entries(new)) else {
            return Ok(false);
        };
        let empty = Map::new();
        let (o, n) = (o.unwrap_or(&empty), n.unwrap_or(&empty));
        let names = n.keys().chain(o.keys().filter(|k| !n.contains_key(*k)));
        for name in names {
            self.path.push(PathElement::Field(name.clone()));
            let (ov, nv) = (o.get(name), n.get(name));
            match child(name) {
                Some(Child::Field(tr)) => self.at(tr, ov, nv, true)?,
                Some(Child::AlwaysThere(tr)) => {
                    let null = Value::Null;
                    let (ov, nv) = (ov.or(Some(&null)), nv.or(Some(&null)));
                    self.at(tr, ov, nv, true)?
                }
                Some(Child::Entry(tr)) => self.at(tr, ov, nv, false)?,
                Some(Child::Deduced) => self.node(Node::Deduced, ov, nv, false)?,
                // Not in the schema: compared as a whole value.
                None => self.leaf(ov, nv),
            }
            self.path.pop();
        }
        Ok(true)
    }

    fn lists(
        &mut self,
        element: &'s TypeRef,
        kind: &ListKind,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> Result<bool, Error> {
        let (Some(o), Some(n)) = (items(old), items(new)) else {
            return Ok(false);
        };
        let old_pes = index_items(self.schema, element, kind, o, &self.path, true)?;
        let new_pes = index_items(self.schema, element, kind, n, &self.path, true)?;
        let old_at = positions(&old_pes);
        let new_at = positions(&new_pes);
        let gone = old_at.iter().filter(|(pe, _)| !new_at.contains_key(*pe));
        for (pe, occurs) in new_at
            .iter()
            .map(|(pe, at)| (*pe, Some(*at)))
            .chain(gone.map(|(pe, _)| (*pe, None)))
        {
            let before = old_at.get(pe).copied();
            self.path.push(pe.clone());
            let result = self.item(element, (o, &old_pes, before), (n, &new_pes, occurs), pe);
            self.path.pop();
            result?;
        }
        Ok(true)
    }

    /// Compares the items named `pe` on both sides. An item whose key occurs more than once
    /// is compared as a whole, as upstream does with duplicates in live objects.
    fn item(
        &mut self,
        element: &'s TypeRef,
        (o, old_pes, before): (&[Value], &[PathElement], Option<Occurs>),
        (n, new_pes, after): (&[Value], &[PathElement], Option<Occurs>),
        pe: &PathElement,
    ) -> Result<(), Error> {
        let (ov, nv) = (once(o, before), once(n, after));
        match (before, after) {
            (Some(Occurs::Many), Some(Occurs::Many)) => {
                let (olds, news) = (all_named(o, old_pes, pe), all_named(n, new_pes, pe));
                let same =
                    olds.len() == news.len() && olds.iter().zip(&news).all(|(a, b)| equal(a, b));
                if !same {
                    self.out.modified.insert(&self.path);
                }
            }
            (Some(Occurs::Many), _) => {
                if nv.is_some() {
                    self.at(element, None, nv, false)?;
                }
                self.out.removed.insert(&self.path);
            }
            (_, Some(Occurs::Many)) => {
                if ov.is_some() {
                    self.at(element, ov, None, false)?;
                }
                self.out.added.insert(&self.path);
            }
            _ => self.at(element, ov, nv, false)?,
        }
        Ok(())
    }
}

fn is_granular(node: Node<'_>) -> bool {
    match node {
        Node::Struct { atomic, .. } | Node::Map { atomic, .. } => !atomic,
        Node::List { kind, .. } => *kind != ListKind::Atomic,
        Node::Deduced => true,
        Node::Scalar | Node::AtomicUntyped => false,
    }
}

fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

fn once(list: &[Value], at: Option<Occurs>) -> Option<&Value> {
    match at {
        Some(Occurs::Once(i)) => list.get(i),
        _ => None,
    }
}

fn all_named<'v>(list: &'v [Value], pes: &[PathElement], pe: &PathElement) -> Vec<&'v Value> {
    pes.iter()
        .zip(list)
        .filter(|(p, _)| *p == pe)
        .map(|(_, v)| v)
        .collect()
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
