//! Table lists: `{"kind":"Table","apiVersion":…,"metadata":…,"columnDefinitions":…,"rows":[…]}`
//! in the Go struct's order (registry's `wire`), a row made from each item as it comes (rows
//! are the Table's last field, after everything known up front). With `?pretty=true` the
//! whole Table is written at the end, indented as json.MarshalIndent writes it, without the
//! trailing newline; in YAML too, as a whole (keys sorted, as upstream's JSON-to-YAML
//! conversion writes them).

use openapi::wire_order::Def;
use registry::wire;
use serde_json::{Map, Value};

use super::Framing;
use crate::table::{self, IncludeObject, Now, RowPrinter};
use registry::{RegistryError, ResourceInfo};

/// How the Table is written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Json(wire::Style),
    Yaml,
}

pub(super) struct Table {
    /// Indented or YAML: the head waits here for the rows, and everything is written at the
    /// end.
    pretty: Option<Map<String, Value>>,
    yaml: bool,
    pretty_rows: Vec<Value>,
    printer: RowPrinter,
    /// meta.k8s.io/v1 TableRow, whose fields order each row.
    row_type: Option<&'static Def>,
    rows: usize,
    /// The kind's row order and the items held back for it (sorted rows need them all).
    order: Option<fn(&Value, &Value) -> std::cmp::Ordering>,
    held: Vec<Value>,
}

impl Table {
    pub(super) fn new(
        out: &mut Vec<u8>,
        info: &ResourceInfo,
        list_metadata: Map<String, Value>,
        include: IncludeObject,
        now: Now,
        style: Style,
    ) -> Result<Self, RegistryError> {
        let metadata = table::list_table_metadata(Some(&Value::Object(list_metadata)));
        let head = table::table_head(info, metadata);
        let row_type =
            wire::type_of(&Value::Object(head.clone())).and_then(|t| t.field_type("rows"));
        let pretty = match style {
            Style::Json(wire::Style::Pretty) | Style::Yaml => Some(head),
            Style::Json(wire::Style::Compact) => {
                wire::write(out, &Value::Object(head), wire::Style::Compact)?;
                // The head's closing brace gives way to the rows, the Table's last field.
                out.pop();
                out.extend_from_slice(br#","rows":["#);
                None
            }
        };
        Ok(Self {
            pretty,
            yaml: style == Style::Yaml,
            pretty_rows: Vec::new(),
            printer: RowPrinter::new(info, include, now),
            row_type,
            rows: 0,
            order: info.row_order,
            held: Vec::new(),
        })
    }
}

impl Table {
    fn row(&mut self, out: &mut Vec<u8>, item: &Value) -> Result<(), RegistryError> {
        if self.pretty.is_some() {
            self.pretty_rows.push(self.printer.row(item));
            return Ok(());
        }
        if self.rows > 0 {
            out.push(b',');
        }
        self.rows += 1;
        wire::write_as(
            out,
            &self.printer.row(item),
            self.row_type,
            wire::Style::Compact,
        )
    }
}

impl Framing for Table {
    fn item(&mut self, out: &mut Vec<u8>, item: &Value) -> Result<(), RegistryError> {
        if self.order.is_some() {
            self.held.push(item.clone());
            return Ok(());
        }
        self.row(out, item)
    }

    fn tail(&mut self, out: &mut Vec<u8>) -> Result<(), RegistryError> {
        if let Some(order) = self.order {
            let mut held = std::mem::take(&mut self.held);
            held.sort_by(order);
            for item in &held {
                self.row(out, item)?;
            }
        }
        if let Some(mut head) = self.pretty.take() {
            let rows = std::mem::take(&mut self.pretty_rows);
            head.insert("rows".to_string(), Value::Array(rows));
            let head = Value::Object(head);
            if self.yaml {
                let text = serde_yaml_ng::to_string(&head).map_err(super::encode_error)?;
                out.extend_from_slice(text.as_bytes());
                return Ok(());
            }
            return wire::write(out, &head, wire::Style::Pretty);
        }
        out.extend_from_slice(b"]}\n");
        Ok(())
    }
}
