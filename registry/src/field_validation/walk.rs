//! One pass over an object against its compiled schema: fields the schema does not declare
//! are noted and removed (a Go struct would not have kept them), values of the wrong JSON
//! type are noted. Paths live on the stack and are spelled out only for a finding.

use std::fmt;

use serde_json::{Number, Value};

use super::schema::{IntFormat, Node, Scalar, Schema, StringFormat};
use crate::error::Cause;
use crate::validation::quote;

/// Upstream stops collecting strict decoding errors at this many; so do we, for both kinds.
const MAX_FINDINGS: usize = 100;

#[derive(Debug, Default)]
pub struct Findings {
    /// Paths of undeclared fields (`spec.template.spec.containers[0].bogus`), in document
    /// order; they are no longer in the object.
    pub unknown: Vec<String>,
    /// One cause per value of the wrong type or out of its integer range.
    pub invalid: Vec<Cause>,
}

impl Findings {
    pub fn is_empty(&self) -> bool {
        self.unknown.is_empty() && self.invalid.is_empty()
    }
}

/// Checks `obj` against `schema`, dropping its unknown fields when `drop_unknown`.
pub fn check(schema: &Schema, obj: &mut Value, drop_unknown: bool) -> Findings {
    let mut out = Findings::default();
    let mut walker = Walker {
        out: &mut out,
        drop_unknown,
    };
    walker.walk(&schema.root, obj, &Step::Root);
    out
}

struct Walker<'a> {
    out: &'a mut Findings,
    drop_unknown: bool,
}

/// Where a value sits, as a chain of borrowed steps.
enum Step<'a> {
    Root,
    Key(&'a str, &'a Step<'a>),
    Index(usize, &'a Step<'a>),
}

impl fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Root => Ok(()),
            Step::Key(key, Step::Root) => f.write_str(key),
            Step::Key(key, up) => write!(f, "{up}.{key}"),
            Step::Index(i, up) => write!(f, "{up}[{i}]"),
        }
    }
}

impl Walker<'_> {
    fn walk(&mut self, node: &Node, value: &mut Value, at: &Step) {
        match (node, value) {
            // Go decodes null into any field as its zero value.
            (Node::Any, _) | (_, Value::Null) => {}
            (Node::Object(object), Value::Object(map)) => {
                let mut unknown = false;
                for (key, value) in map.iter_mut() {
                    let here = Step::Key(key, at);
                    match object.field(key).or(object.values.as_ref()) {
                        Some(node) => self.walk(node, value, &here),
                        None if object.preserve_unknown => {}
                        None => {
                            unknown = true;
                            if self.out.unknown.len() < MAX_FINDINGS {
                                self.out.unknown.push(here.to_string());
                            }
                        }
                    }
                }
                // Only reached without map values or preservation: declared fields stay.
                if unknown && self.drop_unknown {
                    map.retain(|key, _| object.field(key).is_some());
                }
            }
            (Node::Array(item), Value::Array(items)) => {
                for (i, value) in items.iter_mut().enumerate() {
                    self.walk(item, value, &Step::Index(i, at));
                }
            }
            (Node::Scalar(scalar), value) => self.scalar(*scalar, value, at),
            (Node::Object(_), value) => self.wrong_type(at, "object", value),
            (Node::Array(_), value) => self.wrong_type(at, "array", value),
        }
    }

    fn scalar(&mut self, scalar: Scalar, value: &mut Value, at: &Step) {
        let integer = match value {
            Value::String(text) if scalar.string => {
                if let Some(why) = scalar.format.and_then(|f| malformed(f, text)) {
                    if self.out.invalid.len() < MAX_FINDINGS {
                        let field = at.to_string();
                        self.out
                            .invalid
                            .push(Cause::invalid(&field, quote(text), why));
                    }
                }
                return;
            }
            Value::Bool(_) if scalar.boolean => return,
            Value::Number(_) if scalar.number => return,
            Value::Number(n) => scalar.integer.map(|format| (n.clone(), format)),
            _ => None,
        };
        match integer {
            Some((n, format)) => self.integer(&n, format, value, at),
            None => self.wrong_type(at, &scalar.type_names(), value),
        }
    }

    fn integer(&mut self, n: &Number, format: IntFormat, value: &mut Value, at: &Step) {
        let (min, max) = format.bounds();
        if let Some(i) = n.as_i64() {
            if i < min || i > max {
                self.out_of_range(at, n, i < min, format);
            }
        } else if n.is_u64() {
            self.out_of_range(at, n, false, format);
        } else if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) {
            // YAML's `3.0` reaches Go as JSON `3` (sigs.k8s.io/yaml re-encodes it): keep it so.
            if f >= min as f64 && f <= max as f64 {
                *value = Value::from(f as i64);
            } else {
                self.out_of_range(at, n, f < min as f64, format);
            }
        } else {
            self.wrong_type(at, "integer", value);
        }
    }

    fn wrong_type(&mut self, at: &Step, expected: &str, value: &Value) {
        if self.out.invalid.len() < MAX_FINDINGS {
            let field = at.to_string();
            let cause = Cause::type_invalid(&field, type_name(value), expected);
            self.out.invalid.push(cause);
        }
    }

    fn out_of_range(&mut self, at: &Step, n: &Number, below: bool, format: IntFormat) {
        if self.out.invalid.len() >= MAX_FINDINGS {
            return;
        }
        let (min, max) = format.bounds();
        let field = at.to_string();
        let why = if below {
            format!("{field} in body should be greater than or equal to {min}")
        } else {
            format!("{field} in body should be less than or equal to {max}")
        };
        self.out.invalid.push(Cause::invalid(&field, n, &why));
    }
}

/// Why a string does not parse as the Go type behind its format.
fn malformed(format: StringFormat, text: &str) -> Option<&'static str> {
    match format {
        StringFormat::Quantity if !is_quantity(text) => Some(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        StringFormat::DateTime
            if chrono::DateTime::parse_from_rfc3339(text).is_err() =>
        {
            Some("must be an RFC 3339 date-time, e.g. \"2006-01-02T15:04:05Z\"")
        }
        _ => None,
    }
}

/// resource.Quantity's grammar: a signed decimal number, then a binary or decimal SI suffix
/// or a decimal exponent.
fn is_quantity(text: &str) -> bool {
    let rest = text.strip_prefix(['+', '-']).unwrap_or(text);
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_len);
    let digits = number.chars().filter(char::is_ascii_digit).count();
    if digits == 0 || number.matches('.').count() > 1 {
        return false;
    }
    match suffix {
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => {
            true
        }
        _ => suffix
            .strip_prefix(['e', 'E'])
            .map(|exp| exp.strip_prefix(['+', '-']).unwrap_or(exp))
            .is_some_and(|exp| !exp.is_empty() && exp.chars().all(|c| c.is_ascii_digit())),
    }
}

/// The JSON type of a value as schema errors name it.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
