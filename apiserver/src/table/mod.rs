//! Server-side printing: the meta.k8s.io/v1 Table that `kubectl get` asks for with
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, for lists, single objects and
//! the objects of watch events.
//!
//! Every cell is computed from stored user JSON, so nothing here may assume a field exists or
//! has the expected type: odd input yields `<none>` / `<unknown>` cells, never a panic.

mod jsonpath;

use chrono::{DateTime, TimeDelta, Utc};
use registry::catalogue::human_duration;

/// The instant every row of one table is aged against.
pub(crate) type Now = DateTime<Utc>;

use self::jsonpath::{parse_path, select, Step};

use registry::catalogue::{Cell, TableColumn};
use registry::{RegistryError, ResourceInfo};
use serde_json::{json, Map, Value};

const META_API_VERSION: &str = "meta.k8s.io/v1";
const NONE: &str = "<none>";

/// What each row carries besides its cells (the `includeObject` query parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// No `object` key in the rows.
    None,
    /// A PartialObjectMetadata: kubectl needs only the metadata to name and label rows.
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// The value of `includeObject`, or upstream's 400 for a value it does not know.
    pub fn try_parse(query_value: Option<&str>) -> Result<IncludeObject, RegistryError> {
        match query_value.unwrap_or("") {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(RegistryError::BadRequest(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {}: \
                 must be 'Metadata', 'Object', 'None', or empty",
                Value::from(other)
            ))),
        }
    }
}

/// The Table for `objects`. The table's resourceVersion, continue and remainingItemCount come
/// from `list_meta`; for a single object upstream uses the object's own resourceVersion, which
/// passing that object's metadata as `list_meta` reproduces.
pub fn table(
    info: &ResourceInfo,
    objects: &[Value],
    list_meta: Option<&Value>,
    include_object: IncludeObject,
) -> Value {
    table_at(
        info,
        objects,
        list_table_metadata(list_meta),
        include_object,
        Utc::now(),
    )
}

/// The object of one event in a Table-format watch (`kubectl get -w`): a one-row Table whose
/// resourceVersion is the object's.
pub fn table_for_watch_event(
    info: &ResourceInfo,
    object: &Value,
    include_object: IncludeObject,
) -> Value {
    table_at(
        info,
        std::slice::from_ref(object),
        list_metadata(object.get("metadata"), &["resourceVersion"]),
        include_object,
        Utc::now(),
    )
}

/// Time elapsed from `then` to `now`, as an Age cell shows it.
fn since(then: Now, now: Now) -> String {
    let elapsed = now - then;
    // Clocks of different machines disagree a little; upstream lets a time up to two seconds
    // ahead pass as "just now" and flags anything further as invalid.
    if elapsed < TimeDelta::zero() {
        return if elapsed > TimeDelta::seconds(-2) {
            "0s".to_string()
        } else {
            "<invalid>".to_string()
        };
    }
    human_duration(elapsed)
}

fn parse_time(s: &str) -> Option<Now> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Takes `now` so that every row of one table is aged against the same instant (and tests
/// can fix it).
pub(crate) fn table_at(
    info: &ResourceInfo,
    objects: &[Value],
    metadata: Value,
    include_object: IncludeObject,
    now: Now,
) -> Value {
    let printer = RowPrinter::new(info, include_object, now);
    let rows: Vec<Value> = objects.iter().map(|obj| printer.row(obj)).collect();
    let mut table = table_head(info, metadata);
    table.insert("rows".to_string(), Value::Array(rows));
    Value::Object(table)
}

/// A Table without its rows: what a list streamed row by row writes before them. `rows` is
/// the Table's last field (registry's `wire` order), so the rows come last when written.
pub(crate) fn table_head(info: &ResourceInfo, metadata: Value) -> Map<String, Value> {
    // Built by hand: json! would serialise a copy of every value.
    let mut table = Map::new();
    table.insert("kind".to_string(), Value::from("Table"));
    table.insert("apiVersion".to_string(), Value::from(META_API_VERSION));
    table.insert("metadata".to_string(), metadata);
    table.insert(
        "columnDefinitions".to_string(),
        info.columns.iter().map(column_definition).collect(),
    );
    table
}

/// The metadata of a list's Table: the list's resourceVersion, continue and
/// remainingItemCount.
pub(crate) fn list_table_metadata(list_meta: Option<&Value>) -> Value {
    list_metadata(
        list_meta,
        &["resourceVersion", "continue", "remainingItemCount"],
    )
}

/// Makes the rows of one Table, one object at a time: the columns' cells parsed once, every
/// row aged against the same instant.
pub(crate) struct RowPrinter {
    cells: Vec<CellFn>,
    include_object: IncludeObject,
    now: Now,
}

impl RowPrinter {
    pub(crate) fn new(info: &ResourceInfo, include_object: IncludeObject, now: Now) -> Self {
        Self {
            cells: info.columns.iter().map(CellFn::new).collect(),
            include_object,
            now,
        }
    }

    pub(crate) fn row(&self, obj: &Value) -> Value {
        row(&self.cells, obj, self.include_object, self.now)
    }
}

/// The ListMeta fields named by `keys`, as upstream's omitempty leaves them.
fn list_metadata(source: Option<&Value>, keys: &[&str]) -> Value {
    let mut out = Map::new();
    for key in keys {
        match source.and_then(|m| m.get(*key)) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {}
            Some(v) => {
                out.insert((*key).to_string(), v.clone());
            }
        }
    }
    Value::Object(out)
}

fn column_definition(column: &TableColumn) -> Value {
    json!({
        "name": column.name,
        "type": column.kind,
        "format": column.format,
        "description": column.description,
        "priority": column.priority,
    })
}

fn row(cells: &[CellFn], obj: &Value, include_object: IncludeObject, now: Now) -> Value {
    let mut row = Map::new();
    row.insert(
        "cells".to_string(),
        Value::Array(cells.iter().map(|c| c.eval(obj, now)).collect()),
    );
    let object = match include_object {
        IncludeObject::None => None,
        IncludeObject::Object => Some(obj.clone()),
        IncludeObject::Metadata => {
            let metadata = obj
                .get("metadata")
                .filter(|m| m.is_object())
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            let mut partial = Map::new();
            partial.insert("kind".to_string(), Value::from("PartialObjectMetadata"));
            partial.insert("apiVersion".to_string(), Value::from(META_API_VERSION));
            partial.insert("metadata".to_string(), metadata);
            Some(Value::Object(partial))
        }
    };
    if let Some(object) = object {
        row.insert("object".to_string(), object);
    }
    Value::Object(row)
}

/// A column's cell function with its JSONPath already parsed; owns what it needs, so that a
/// printer can outlive the request in a streamed body.
enum CellFn {
    Name,
    Age,
    /// `None` steps: a path we cannot parse, which fills the column with `<none>`.
    Path {
        kind: String,
        steps: Option<Vec<Step>>,
    },
    Printer(fn(&Value) -> Value),
}

impl CellFn {
    fn new(column: &TableColumn) -> Self {
        match &column.cell {
            Cell::Name => CellFn::Name,
            Cell::Age => CellFn::Age,
            Cell::Path(path) => CellFn::Path {
                kind: column.kind.clone(),
                steps: parse_path(path),
            },
            Cell::Printer(f) => CellFn::Printer(*f),
        }
    }

    fn eval(&self, obj: &Value, now: Now) -> Value {
        match self {
            // Go's zero string, as upstream's accessor returns for an unnamed object.
            CellFn::Name => Value::String(metadata_str(obj, "name").unwrap_or("").to_string()),
            CellFn::Age => Value::String(
                metadata_str(obj, "creationTimestamp")
                    .and_then(parse_time)
                    .map_or_else(|| "<unknown>".to_string(), |t| since(t, now)),
            ),
            CellFn::Path { kind, steps } => steps
                .as_deref()
                .and_then(|steps| select(obj, steps).into_iter().next())
                .filter(|v| !v.is_null())
                .map_or_else(none, |v| typed_cell(kind, v, now)),
            CellFn::Printer(f) => f(obj),
        }
    }
}

fn none() -> Value {
    Value::String(NONE.to_string())
}

fn metadata_str<'v>(obj: &'v Value, key: &str) -> Option<&'v str> {
    obj.get("metadata")?.get(key)?.as_str()
}

/// A JSONPath result as a cell of the column's OpenAPI type, the way upstream types custom
/// resource columns: a value of the wrong type prints as missing rather than misleading.
fn typed_cell(kind: &str, v: &Value, now: Now) -> Value {
    match kind {
        "integer" => match v {
            // Upstream truncates a fractional value rather than rejecting it.
            Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(none, |f| (f as i64).into()),
            Value::Number(_) => v.clone(),
            _ => none(),
        },
        "number" if v.is_number() => v.clone(),
        "boolean" if v.is_boolean() => v.clone(),
        // A custom resource's `date` column is what carries its AGE.
        "date" => match v.as_str() {
            Some(s) => Value::String(
                parse_time(s).map_or_else(|| "<invalid>".to_string(), |t| since(t, now)),
            ),
            None => none(),
        },
        "number" | "boolean" => none(),
        _ => Value::String(text(v)),
    }
}

/// A value as text in a string column.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => NONE.to_string(),
        Value::Array(items) if items.is_empty() => NONE.to_string(),
        Value::Object(map) if map.is_empty() => NONE.to_string(),
        // A list of plain values reads best the way kubectl prints lists of names.
        Value::Array(items) if items.iter().all(is_scalar) => {
            items.iter().map(text).collect::<Vec<_>>().join(",")
        }
        _ => v.to_string(),
    }
}

pub(super) fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

#[cfg(test)]
mod tests;
