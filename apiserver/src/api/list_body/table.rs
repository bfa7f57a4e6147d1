//! Table lists: `{"apiVersion":…,"columnDefinitions":…,"kind":"Table","metadata":…,"rows":[…]}`,
//! a row made from each item as it comes (rows sort last, after everything known up front).

use serde_json::{Map, Value};

use super::{encode_error, Framing};
use crate::table::{self, IncludeObject, Now, RowPrinter};
use registry::{RegistryError, ResourceInfo};

pub(super) struct Table {
    printer: RowPrinter,
    rows: usize,
}

impl Table {
    pub(super) fn new(
        out: &mut Vec<u8>,
        info: &ResourceInfo,
        list_metadata: Map<String, Value>,
        include: IncludeObject,
        now: Now,
    ) -> Result<Self, RegistryError> {
        let metadata = table::list_table_metadata(Some(&Value::Object(list_metadata)));
        let head = table::table_head(info, metadata);
        serde_json::to_writer(&mut *out, &head).map_err(encode_error)?;
        // The head's closing brace gives way to the rows, the Table's last key.
        out.pop();
        out.extend_from_slice(br#","rows":["#);
        Ok(Self {
            printer: RowPrinter::new(info, include, now),
            rows: 0,
        })
    }
}

impl Framing for Table {
    fn item(&mut self, out: &mut Vec<u8>, item: &Value) -> Result<(), RegistryError> {
        if self.rows > 0 {
            out.push(b',');
        }
        self.rows += 1;
        serde_json::to_writer(&mut *out, &self.printer.row(item)).map_err(encode_error)
    }

    fn tail(&mut self, out: &mut Vec<u8>) -> Result<(), RegistryError> {
        out.extend_from_slice(b"]}");
        Ok(())
    }
}
