//! JSON lists as kube-apiserver writes them (its streaming collections encoder, or
//! json.MarshalIndent with `?pretty=true`): a built-in list in its Go struct's order
//! (`kind`, `apiVersion`, `metadata`, `items`), its items without their own kind and
//! apiVersion; a custom resource list as a map, keys sorted (`apiVersion`, `items`, `kind`,
//! `metadata`). Compact lists end with a newline, indented ones do not. Every value goes
//! through registry's `wire` encoder, as a whole object would.

use openapi::wire_order::Def;
use registry::wire::{self, Style};
use registry::RegistryError;
use serde_json::{Map, Value};

use super::Framing;

/// Two levels deep: the list object, then its `items` array.
const ITEM_INDENT: &[u8] = b"    ";
const FIELD_INDENT: &[u8] = b"  ";

pub(super) struct Json {
    style: Style,
    /// The items' struct type; None for custom resources.
    item_type: Option<&'static Def>,
    /// Whether the items keep their kind and apiVersion: a PartialObjectMetadataList's do
    /// (upstream sets them on each), a typed list's do not.
    item_type_meta: bool,
    /// What follows the items' closing bracket.
    tail: Vec<u8>,
    items: usize,
}

impl Json {
    pub(super) fn new(
        out: &mut Vec<u8>,
        style: Style,
        api_version: &str,
        kind: &str,
        metadata: Map<String, Value>,
    ) -> Result<Self, RegistryError> {
        let list_type = wire::kind(api_version, kind);
        let metadata_type = list_type.and_then(|list| list.field_type("metadata"));
        let item_type = list_type.and_then(|list| list.field_type("items"));
        let api_version = Value::from(api_version);
        let kind_value = Value::from(kind);
        let metadata = Value::Object(metadata);
        // (name, value, its type), in the order the list's type (or a map's sorted keys) puts
        // them; `items` is where the items go.
        let members: [(&str, &Value, Option<&'static Def>); 3] = [
            ("apiVersion", &api_version, None),
            ("kind", &kind_value, None),
            ("metadata", &metadata, metadata_type),
        ];
        let (head, tail): (Vec<_>, Vec<_>) = match list_type {
            Some(_) => (vec![members[1], members[0], members[2]], vec![]),
            None => (vec![members[0]], vec![members[1], members[2]]),
        };
        out.push(b'{');
        for (name, value, ty) in &head {
            member(out, style, name, value, *ty)?;
            out.push(b',');
        }
        key(out, style, "items")?;
        out.push(b'[');
        let mut rest = Vec::new();
        rest.push(b']');
        for (name, value, ty) in &tail {
            rest.push(b',');
            member(&mut rest, style, name, value, *ty)?;
        }
        match style {
            Style::Compact => rest.extend_from_slice(b"}\n"),
            Style::Pretty => rest.extend_from_slice(b"\n}"),
        }
        Ok(Self {
            style,
            item_type,
            item_type_meta: kind == "PartialObjectMetadataList",
            tail: rest,
            items: 0,
        })
    }
}

impl Json {
    fn write(&self, out: &mut Vec<u8>, item: &Value, style: Style) -> Result<(), RegistryError> {
        if self.item_type_meta {
            wire::write_as(out, item, self.item_type, style)?;
        } else {
            wire::write_item(out, item, self.item_type, style)?;
        }
        Ok(())
    }
}

impl Framing for Json {
    fn item(&mut self, out: &mut Vec<u8>, item: &Value) -> Result<(), RegistryError> {
        match self.style {
            Style::Compact => {
                if self.items > 0 {
                    out.push(b',');
                }
                self.write(out, item, Style::Compact)?;
            }
            Style::Pretty => {
                out.extend_from_slice(if self.items > 0 { b",\n" } else { b"\n" });
                out.extend_from_slice(ITEM_INDENT);
                let mut text = Vec::new();
                self.write(&mut text, item, Style::Pretty)?;
                indented(out, &text, ITEM_INDENT);
            }
        }
        self.items += 1;
        Ok(())
    }

    fn tail(&mut self, out: &mut Vec<u8>) -> Result<(), RegistryError> {
        if self.style == Style::Pretty && self.items > 0 {
            out.push(b'\n');
            out.extend_from_slice(FIELD_INDENT);
        }
        out.extend_from_slice(&self.tail);
        Ok(())
    }
}

/// `"name":` or, indented, a new line, the field's indentation and `"name": `.
fn key(out: &mut Vec<u8>, style: Style, name: &str) -> Result<(), RegistryError> {
    if style == Style::Pretty {
        out.push(b'\n');
        out.extend_from_slice(FIELD_INDENT);
    }
    wire::write_as(out, &Value::from(name), None, Style::Compact)?;
    out.extend_from_slice(if style == Style::Pretty { b": " } else { b":" });
    Ok(())
}

fn member(
    out: &mut Vec<u8>,
    style: Style,
    name: &str,
    value: &Value,
    ty: Option<&'static Def>,
) -> Result<(), RegistryError> {
    key(out, style, name)?;
    let mut text = Vec::new();
    wire::write_as(&mut text, value, ty, style)?;
    indented(out, &text, FIELD_INDENT);
    Ok(())
}

/// `text` with `indent` after each of its newlines: an indented value moved deeper (JSON
/// text has newlines only between tokens, never inside strings).
fn indented(out: &mut Vec<u8>, text: &[u8], indent: &[u8]) {
    for line in text.split_inclusive(|b| *b == b'\n') {
        out.extend_from_slice(line);
        if line.ends_with(b"\n") {
            out.extend_from_slice(indent);
        }
    }
}
