//! Upstream's field validation rules and message texts: names, label and annotation syntax, and
//! the metadata.labels / metadata.annotations checks every resource shares.

pub mod names;
pub mod net;
pub mod webhook;

pub use names::{
    generate_name, is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_qualified_name,
    is_valid_label_value, max_len_error, name_is_dns1035_label, name_is_dns_label,
    name_is_dns_subdomain, path_segment_name, regex_error, DNS1035_LABEL_MAX_LENGTH,
    DNS1123_LABEL_MAX_LENGTH, DNS1123_SUBDOMAIN_MAX_LENGTH, LABEL_VALUE_MAX_LENGTH,
    MAX_GENERATED_NAME_LENGTH, QUALIFIED_NAME_MAX_LENGTH,
};

use crate::error::Cause;
use serde_json::Value;

/// Upstream's limit on the summed byte length of all annotation keys and values.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// A string as Go's `%q` prints it, which is how upstream shows bad string values in field
/// errors (`Invalid value: "Bad_Name"`). Go's notion of printable is approximated: controls,
/// non-ASCII spaces, private-use and common format characters are escaped.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    quote_into(&mut out, &[s]);
    out
}

/// Appends the concatenation of `parts` as [`quote`] prints it, building nothing else (for
/// messages written on every request, such as authorization reasons).
pub fn quote_into(out: &mut String, parts: &[&str]) {
    out.push('"');
    for c in parts.iter().flat_map(|p| p.chars()) {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if !go_printable(c) && (c as u32) < 0x10000 => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if !go_printable(c) => out.push_str(&format!("\\U{:08x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let code = c as u32;
    let format_char = matches!(code, 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e
        | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f | 0xfeff
        | 0xfff9..=0xfffb);
    let private_use = matches!(code, 0xe000..=0xf8ff | 0xf0000..);
    !(c.is_control() || c.is_whitespace() || format_char || private_use)
}

/// The object members of `map` (metadata.labels or metadata.annotations) in key order, or the
/// cause explaining why it is not a map of strings. Null and absent are an empty map.
fn string_map<'a>(map: &'a Value, field: &str) -> Result<Vec<(&'a str, &'a str)>, Vec<Cause>> {
    let object = match map {
        Value::Null => return Ok(Vec::new()),
        Value::Object(object) => object,
        other => return Err(vec![Cause::invalid(field, other, "must be of type object")]),
    };
    let mut entries = Vec::with_capacity(object.len());
    let mut causes = Vec::new();
    for (key, value) in object {
        match value.as_str() {
            Some(text) => entries.push((key.as_str(), text)),
            None => causes.push(Cause::invalid(
                &format!("{field}.{key}"),
                value,
                "must be of type string",
            )),
        }
    }
    if !causes.is_empty() {
        return Err(causes);
    }
    entries.sort_unstable_by_key(|(key, _)| *key);
    Ok(entries)
}

/// Upstream's ValidateLabels: every key a qualified name, every value a valid label value.
/// `labels` is metadata.labels (an object, or null when absent); `field` is its path, usually
/// `metadata.labels`.
pub fn validate_labels(labels: &Value, field: &str) -> Vec<Cause> {
    let entries = match string_map(labels, field) {
        Ok(entries) => entries,
        Err(causes) => return causes,
    };
    let mut causes = Vec::new();
    for (key, value) in entries {
        for message in is_qualified_name(key) {
            causes.push(Cause::invalid(field, quote(key), &message));
        }
        for message in is_valid_label_value(value) {
            causes.push(Cause::invalid(field, quote(value), &message));
        }
    }
    causes
}

/// Upstream's ValidateAnnotations: every key a qualified name (case-insensitively), and keys
/// plus values at most 256 KiB in all.
pub fn validate_annotations(annotations: &Value, field: &str) -> Vec<Cause> {
    let entries = match string_map(annotations, field) {
        Ok(entries) => entries,
        Err(causes) => return causes,
    };
    let mut causes = Vec::new();
    for (key, _) in &entries {
        for message in is_qualified_name(&key.to_lowercase()) {
            causes.push(Cause::invalid(field, quote(key), &message));
        }
    }
    let total: usize = entries.iter().map(|(k, v)| k.len() + v.len()).sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        causes.push(Cause::too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    causes
}

#[cfg(test)]
mod tests;

/// A metav1.LabelSelector at `field` (ValidateLabelSelector), when one is set: its keys,
/// operators and values as the selector parser takes them.
pub fn label_selector(selector: Option<&Value>, field: &str) -> Option<Cause> {
    let selector = selector.filter(|s| !s.is_null())?;
    crate::selector::labels::LabelSelector::from_label_selector_json(selector)
        .err()
        .map(|e| Cause::invalid(field, crate::go_fmt::label_selector(selector), e.message()))
}
