//! The schema model merges and field sets are computed under: named types referring to each
//! other (OpenAPI definitions are recursive), each an atom describing how a value of it is
//! split into fields.

use crate::error::Error;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Whether an object's entries are owned one by one or the object as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relationship {
    /// Entries are separate fields (upstream's "separable", `x-kubernetes-map-type: granular`).
    Separable,
    /// The object is one field, replaced whole (`x-kubernetes-map-type: atomic`).
    Atomic,
}

/// How a list's elements are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// The list is one field, replaced whole.
    Atomic,
    /// Elements are scalars identified by their value.
    Set,
    /// Elements are objects identified by the values of these fields.
    Map { keys: Vec<String> },
}

/// A reference to a type: by name, or the type itself inline.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeRef {
    /// A named type; `relationship` overrides the named object's own (a property's
    /// `x-kubernetes-map-type` next to its `$ref`).
    Named {
        name: String,
        relationship: Option<Relationship>,
    },
    Inline(Box<Atom>),
}

impl TypeRef {
    pub fn named(name: impl Into<String>) -> Self {
        TypeRef::Named {
            name: name.into(),
            relationship: None,
        }
    }

    pub fn inline(atom: Atom) -> Self {
        TypeRef::Inline(Box::new(atom))
    }
}

/// How values with no precise schema are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Untyped {
    /// Shape comes from the value: objects are granular maps of deduced values, lists are
    /// atomic, scalars are leaves (preserve-unknown-fields, schemas without a type).
    Deduced,
    /// The whole value is one leaf whatever its shape (int-or-string, Quantity,
    /// RawExtension, list items without a schema).
    Atomic,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StructType {
    pub fields: BTreeMap<String, TypeRef>,
    /// The type of entries that are not declared fields, if they are allowed.
    pub rest: Option<TypeRef>,
    pub relationship: Relationship,
    /// Declared defaults of fields; a map list's key field that is absent takes its default,
    /// as upstream does (a container port's `protocol` is "TCP").
    pub defaults: BTreeMap<String, Value>,
    /// Fields the schema requires. Built-in kinds require what their Go types always
    /// serialize (no `omitempty`), so upstream's typed values hold those fields, as null when
    /// unset, even in an empty object.
    pub required: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MapType {
    pub value: TypeRef,
    pub relationship: Relationship,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListType {
    pub element: TypeRef,
    pub kind: ListKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Atom {
    Scalar,
    Struct(StructType),
    List(ListType),
    Map(MapType),
    Untyped(Untyped),
}

/// A resolved type, with any reference-level override applied.
#[derive(Debug, Clone, Copy)]
pub enum Node<'a> {
    Scalar,
    Struct {
        fields: &'a BTreeMap<String, TypeRef>,
        rest: Option<&'a TypeRef>,
        defaults: &'a BTreeMap<String, Value>,
        required: &'a BTreeSet<String>,
        atomic: bool,
    },
    List {
        element: &'a TypeRef,
        kind: &'a ListKind,
    },
    Map {
        value: &'a TypeRef,
        atomic: bool,
    },
    Deduced,
    AtomicUntyped,
}

/// A set of named types.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    types: BTreeMap<String, Atom>,
}

impl Schema {
    pub fn new() -> Self {
        Schema::default()
    }

    pub fn insert(&mut self, name: impl Into<String>, atom: Atom) {
        self.types.insert(name.into(), atom);
    }

    pub fn get(&self, name: &str) -> Option<&Atom> {
        self.types.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.types.keys().map(String::as_str)
    }

    /// Follows a reference to the atom it names.
    pub fn resolve<'a>(&'a self, tr: &'a TypeRef) -> Result<Node<'a>, Error> {
        let (atom, relationship) = match tr {
            TypeRef::Named { name, relationship } => {
                let atom = self
                    .types
                    .get(name)
                    .ok_or_else(|| Error::Schema(format!("no type named {name:?}")))?;
                (atom, *relationship)
            }
            TypeRef::Inline(atom) => (atom.as_ref(), None),
        };
        let atomic = |own: Relationship| relationship.unwrap_or(own) == Relationship::Atomic;
        Ok(match atom {
            Atom::Scalar => Node::Scalar,
            Atom::Struct(s) => Node::Struct {
                fields: &s.fields,
                rest: s.rest.as_ref(),
                defaults: &s.defaults,
                required: &s.required,
                atomic: atomic(s.relationship),
            },
            Atom::List(l) => Node::List {
                element: &l.element,
                kind: &l.kind,
            },
            Atom::Map(m) => Node::Map {
                value: &m.value,
                atomic: atomic(m.relationship),
            },
            Atom::Untyped(Untyped::Deduced) => Node::Deduced,
            Atom::Untyped(Untyped::Atomic) => Node::AtomicUntyped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_applies_a_reference_override() {
        let mut schema = Schema::new();
        schema.insert(
            "Selector",
            Atom::Struct(StructType {
                fields: BTreeMap::from([("a".to_string(), TypeRef::inline(Atom::Scalar))]),
                rest: None,
                relationship: Relationship::Separable,
                defaults: BTreeMap::new(),
                required: BTreeSet::new(),
            }),
        );
        let plain = TypeRef::named("Selector");
        assert!(matches!(
            schema.resolve(&plain),
            Ok(Node::Struct { atomic: false, .. })
        ));
        let atomic = TypeRef::Named {
            name: "Selector".into(),
            relationship: Some(Relationship::Atomic),
        };
        assert!(matches!(
            schema.resolve(&atomic),
            Ok(Node::Struct { atomic: true, .. })
        ));
    }

    #[test]
    fn unknown_name_is_an_error() {
        let schema = Schema::new();
        match schema.resolve(&TypeRef::named("Nope")) {
            Err(Error::Schema(msg)) => assert!(msg.contains("Nope")),
            other => panic!("{other:?}"),
        }
    }
}
