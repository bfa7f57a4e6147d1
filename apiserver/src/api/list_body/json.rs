//! JSON lists, as serde_json writes a whole list: keys sorted, so `items` comes between
//! `apiVersion` and `kind`; with `?pretty=true`, two-space indentation and a final newline.

use std::io;

use serde::Serialize;
use serde_json::ser::PrettyFormatter;
use serde_json::{Map, Value};

use super::{encode_error, Framing};
use registry::RegistryError;

/// `{"apiVersion":…,"items":[…],"kind":…,"metadata":…}`.
pub(super) struct Compact {
    /// What follows the items: `],"kind":…,"metadata":…}`.
    tail: Vec<u8>,
    items: usize,
}

impl Compact {
    pub(super) fn new(
        out: &mut Vec<u8>,
        api_version: &str,
        kind: &str,
        metadata: Map<String, Value>,
    ) -> Result<Self, RegistryError> {
        out.extend_from_slice(br#"{"apiVersion":"#);
        serde_json::to_writer(&mut *out, api_version).map_err(encode_error)?;
        out.extend_from_slice(br#","items":["#);
        let mut tail = br#"],"kind":"#.to_vec();
        serde_json::to_writer(&mut tail, kind).map_err(encode_error)?;
        tail.extend_from_slice(br#","metadata":"#);
        serde_json::to_writer(&mut tail, &metadata).map_err(encode_error)?;
        tail.push(b'}');
        Ok(Self { tail, items: 0 })
    }
}

impl Framing for Compact {
    fn item(&mut self, out: &mut Vec<u8>, item: &Value) -> Result<(), RegistryError> {
        if self.items > 0 {
            out.push(b',');
        }
        self.items += 1;
        serde_json::to_writer(&mut *out, item).map_err(encode_error)
    }

    fn tail(&mut self, out: &mut Vec<u8>) -> Result<(), RegistryError> {
        out.extend_from_slice(&self.tail);
        Ok(())
    }
}

/// The indented list: every item on its own, its lines shifted to the depth of the list's
/// items (the indenting writer adds the depth's spaces after every newline, and JSON text has
/// newlines only between tokens).
pub(super) struct Pretty {
    kind: String,
    metadata: Map<String, Value>,
    items: usize,
}

/// Two levels deep: the list object, then its `items` array.
const ITEM_INDENT: &[u8] = b"    ";
const FIELD_INDENT: &[u8] = b"  ";

impl Pretty {
    pub(super) fn new(
        out: &mut Vec<u8>,
        api_version: &str,
        kind: &str,
        metadata: Map<String, Value>,
    ) -> Result<Self, RegistryError> {
        out.extend_from_slice(b"{\n  \"apiVersion\": ");
        serde_json::to_writer(&mut *out, api_version).map_err(encode_error)?;
        out.extend_from_slice(b",\n  \"items\": [");
        Ok(Self {
            kind: kind.to_string(),
            metadata,
            items: 0,
        })
    }
}

impl Framing for Pretty {
    fn item(&mut self, out: &mut Vec<u8>, item: &Value) -> Result<(), RegistryError> {
        out.extend_from_slice(if self.items > 0 { b",\n" } else { b"\n" });
        out.extend_from_slice(ITEM_INDENT);
        self.items += 1;
        pretty(out, ITEM_INDENT, item)
    }

    fn tail(&mut self, out: &mut Vec<u8>) -> Result<(), RegistryError> {
        if self.items > 0 {
            out.extend_from_slice(b"\n  ");
        }
        out.extend_from_slice(b"],\n  \"kind\": ");
        serde_json::to_writer(&mut *out, &self.kind).map_err(encode_error)?;
        out.extend_from_slice(b",\n  \"metadata\": ");
        pretty(out, FIELD_INDENT, &self.metadata)?;
        out.extend_from_slice(b"\n}\n");
        Ok(())
    }
}

/// `value` indented as serde_json's pretty printer does, `indent` deeper.
fn pretty(
    out: &mut Vec<u8>,
    indent: &'static [u8],
    value: &impl Serialize,
) -> Result<(), RegistryError> {
    let mut ser =
        serde_json::Serializer::with_formatter(Indented { out, indent }, PrettyFormatter::new());
    value.serialize(&mut ser).map_err(encode_error)
}

/// Writes through to `out`, adding `indent` after every newline.
struct Indented<'a> {
    out: &'a mut Vec<u8>,
    indent: &'static [u8],
}

impl io::Write for Indented<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for line in buf.split_inclusive(|b| *b == b'\n') {
            self.out.extend_from_slice(line);
            if line.ends_with(b"\n") {
                self.out.extend_from_slice(self.indent);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
