//! YAML lists, as serde_yaml_ng writes a whole list: `items:` and each item as a block
//! sequence entry, `items: []` when there are none.
//!
//! An item serialised on its own is the same text as inside the list, shifted: the emitter
//! indents every nested node relative to its parent and its line width is unbounded, so the
//! entry is `- ` and the first line, then every later line two spaces deeper. Only the lines
//! the emitter indents are shifted: in a block scalar an empty line carries no indentation, and
//! the emitter breaks lines at every YAML line break (U+0085, U+2028 and U+2029 as well as
//! `\n`; `\r` is always escaped).

use serde_json::{Map, Value};

use super::{encode_error, Framing};
use registry::RegistryError;

pub(super) struct Yaml {
    /// `kind: …` and `metadata: …`, after the items.
    tail: String,
    items: usize,
}

impl Yaml {
    pub(super) fn new(
        out: &mut Vec<u8>,
        api_version: &str,
        kind: &str,
        metadata: Map<String, Value>,
    ) -> Result<Self, RegistryError> {
        let mut head = Map::new();
        head.insert("apiVersion".into(), Value::from(api_version));
        out.extend_from_slice(text(&head)?.as_bytes());
        out.extend_from_slice(b"items:");
        let mut tail = Map::new();
        tail.insert("kind".into(), Value::from(kind));
        tail.insert("metadata".into(), Value::Object(metadata));
        Ok(Self {
            tail: text(&tail)?,
            items: 0,
        })
    }
}

impl Framing for Yaml {
    fn item(&mut self, out: &mut Vec<u8>, item: &Value) -> Result<(), RegistryError> {
        if self.items == 0 {
            out.push(b'\n');
        }
        self.items += 1;
        entry(out, &text(item)?);
        Ok(())
    }

    fn tail(&mut self, out: &mut Vec<u8>) -> Result<(), RegistryError> {
        if self.items == 0 {
            out.extend_from_slice(b" []\n");
        }
        out.extend_from_slice(self.tail.as_bytes());
        Ok(())
    }
}

fn text(value: &impl serde::Serialize) -> Result<String, RegistryError> {
    serde_yaml_ng::to_string(value).map_err(encode_error)
}

/// What libyaml takes for a line break.
fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// A mapping's text as an entry of a block sequence.
fn entry(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(b"- ");
    let mut start = 0;
    let mut after_break = false;
    for (i, c) in text.char_indices() {
        let line_break = is_break(c);
        if after_break && !line_break {
            out.extend_from_slice(&text.as_bytes()[start..i]);
            out.extend_from_slice(b"  ");
            start = i;
        }
        after_break = line_break;
    }
    out.extend_from_slice(&text.as_bytes()[start..]);
}
