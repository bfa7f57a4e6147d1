//! The types the checker infers for rule expressions: what is known of a value, from the
//! schema and from literals, and which arithmetic is defined between two of them.

use cel::common::ast::operators;

use super::schema::{Format, Kind, Node};

/// A type, as far as it is known.
#[derive(Clone, Copy)]
pub(super) enum Ty<'n> {
    Dyn,
    /// The result of something refused: like `dyn`, without further errors about it.
    Refused,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    /// A list, with the schema of its items when known.
    List(Option<&'n Node>),
    /// A map, with the schema of its values when known.
    Map(Option<&'n Node>),
    /// An object of the schema: only its declared fields can be selected.
    Object(&'n Node),
    Type,
    Optional,
    /// A value of one of Kubernetes' libraries, by its type name (`kubernetes.Quantity`).
    Opaque(&'static str),
}

impl<'n> Ty<'n> {
    pub(super) fn of(node: &'n Node) -> Ty<'n> {
        match &node.kind {
            Kind::Object(_) => Ty::Object(node),
            Kind::Map(values) => Ty::Map(Some(values)),
            Kind::List { items, .. } => Ty::List(Some(items)),
            Kind::String(Format::Plain) => Ty::String,
            Kind::String(Format::Byte) => Ty::Bytes,
            Kind::String(Format::Duration) => Ty::Duration,
            Kind::String(Format::Date | Format::DateTime) => Ty::Timestamp,
            Kind::Integer => Ty::Int,
            Kind::Number => Ty::Double,
            Kind::Boolean => Ty::Bool,
            Kind::IntOrString | Kind::Any => Ty::Dyn,
        }
    }

    /// The CEL name of a known type, `None` for `dyn`.
    pub(super) fn name(self) -> Option<&'static str> {
        Some(match self {
            Ty::Dyn | Ty::Refused => return None,
            Ty::Bool => "bool",
            Ty::Int => "int",
            Ty::Uint => "uint",
            Ty::Double => "double",
            Ty::String => "string",
            Ty::Bytes => "bytes",
            Ty::Null => "null_type",
            Ty::Duration => "google.protobuf.Duration",
            Ty::Timestamp => "google.protobuf.Timestamp",
            Ty::List(_) => "list",
            Ty::Map(_) | Ty::Object(_) => "map",
            Ty::Type => "type",
            Ty::Optional => "optional_type",
            Ty::Opaque(name) => name,
        })
    }

    pub(super) fn same(self, other: Ty<'n>) -> bool {
        match (self, other) {
            (Ty::Object(a), Ty::Object(b)) => std::ptr::eq(a, b),
            (Ty::List(_), Ty::List(_)) | (Ty::Map(_), Ty::Map(_)) => true,
            (Ty::Opaque(a), Ty::Opaque(b)) => a == b,
            (a, b) => std::mem::discriminant(&a) == std::mem::discriminant(&b),
        }
    }

    pub(super) fn numeric(self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }

    /// The kind of a known type, for telling which overloads apply to it.
    pub(super) fn group(self) -> Option<Group> {
        Some(match self {
            Ty::Bool => Group::Bool,
            Ty::Int | Ty::Uint | Ty::Double => Group::Number,
            Ty::String => Group::String,
            Ty::Bytes => Group::Bytes,
            Ty::Duration => Group::Duration,
            Ty::Timestamp => Group::Timestamp,
            Ty::List(_) => Group::List,
            Ty::Map(_) | Ty::Object(_) => Group::Map,
            Ty::Null => Group::Null,
            Ty::Opaque(name) => Group::Opaque(name),
            Ty::Dyn | Ty::Refused | Ty::Type | Ty::Optional => return None,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Group {
    Bool,
    Number,
    String,
    Bytes,
    Duration,
    Timestamp,
    List,
    Map,
    Null,
    Opaque(&'static str),
}

/// The result of arithmetic `name` on two known types, `None` when no overload applies
/// (CEL has no arithmetic across numeric types).
pub(super) fn arithmetic<'n>(name: &str, a: Ty<'n>, b: Ty<'n>) -> Option<Ty<'n>> {
    use Ty::*;
    let same_number = a.numeric() && std::mem::discriminant(&a) == std::mem::discriminant(&b);
    match name {
        operators::ADD => match (a, b) {
            _ if same_number => Some(a),
            (String, String) | (Bytes, Bytes) | (Duration, Duration) => Some(a),
            (List(_), List(_)) => Some(List(None)),
            (Timestamp, Duration) | (Duration, Timestamp) => Some(Timestamp),
            _ => None,
        },
        operators::SUBSTRACT => match (a, b) {
            _ if same_number => Some(a),
            (Duration, Duration) | (Timestamp, Timestamp) => Some(Duration),
            (Timestamp, Duration) => Some(Timestamp),
            _ => None,
        },
        operators::MODULO => (same_number && !matches!(a, Double)).then_some(a),
        _ => same_number.then_some(a),
    }
}
