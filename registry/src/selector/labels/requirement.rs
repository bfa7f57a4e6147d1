//! One requirement of a label selector: a key, an operator and values, validated with
//! upstream's messages, matched and printed as upstream does.

use std::fmt;

use crate::selector::SelectorError;
use crate::validation::{is_qualified_name, is_valid_label_value, quote};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelOperator {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One requirement: a key, an operator, and its values (kept as given; printed sorted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelRequirement {
    key: String,
    operator: LabelOperator,
    values: Vec<String>,
}

/// Upstream's aggregate of field errors: nothing when there are none.
fn aggregate(messages: Vec<String>) -> Result<(), String> {
    if messages.is_empty() {
        Ok(())
    } else {
        Err(crate::error::aggregate(&messages))
    }
}

/// How Go's `%#v` prints a `[]string` in a field error (an empty one is always nil upstream).
fn go_string_slice(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".into();
    }
    let quoted: Vec<String> = values.iter().map(|v| quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

impl LabelRequirement {
    /// Upstream's NewRequirement: validates the key, the value count for the operator, and
    /// every value, reporting field errors under `key` / `values[i]` as upstream does.
    pub fn new(
        key: &str,
        operator: LabelOperator,
        values: Vec<String>,
    ) -> Result<Self, SelectorError> {
        use LabelOperator::*;
        let mut errs = Vec::new();
        let key_errs = is_qualified_name(key);
        if !key_errs.is_empty() {
            errs.push(format!(
                "key: Invalid value: {}: {}",
                quote(key),
                key_errs.join("; ")
            ));
        }
        let list = go_string_slice(&values);
        match operator {
            In | NotIn if values.is_empty() => errs.push(format!(
                "values: Invalid value: {list}: for 'in', 'notin' operators, values set can't be empty"
            )),
            Equals | DoubleEquals | NotEquals if values.len() != 1 => errs.push(format!(
                "values: Invalid value: {list}: exact-match compatibility requires one single value"
            )),
            Exists | DoesNotExist if !values.is_empty() => errs.push(format!(
                "values: Invalid value: {list}: values set must be empty for exists and does not exist"
            )),
            GreaterThan | LessThan => {
                if values.len() != 1 {
                    errs.push(format!("values: Invalid value: {list}: for 'Gt', 'Lt' operators, exactly one value is required"));
                }
                for (i, value) in values.iter().enumerate() {
                    if value.parse::<i64>().is_err() {
                        errs.push(format!("values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer", quote(value)));
                    }
                }
            }
            _ => {}
        }
        for (i, value) in values.iter().enumerate() {
            let value_errs = is_valid_label_value(value);
            if !value_errs.is_empty() {
                errs.push(format!(
                    "values[{i}][{key}]: Invalid value: {}: {}",
                    quote(value),
                    value_errs.join("; ")
                ));
            }
        }
        aggregate(errs).map_err(SelectorError::new)?;
        Ok(Self {
            key: key.to_string(),
            operator,
            values,
        })
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> LabelOperator {
        self.operator
    }

    pub fn values(&self) -> &[String] {
        &self.values
    }

    pub fn matches<'v>(&self, lookup: &dyn Fn(&str) -> Option<&'v str>) -> bool {
        use LabelOperator::*;
        let found = lookup(&self.key);
        let has = |v: &str| self.values.iter().any(|x| x == v);
        match self.operator {
            In | Equals | DoubleEquals => found.is_some_and(has),
            NotIn | NotEquals => !found.is_some_and(has),
            Exists => found.is_some(),
            DoesNotExist => found.is_none(),
            GreaterThan | LessThan => {
                let (Some(Ok(actual)), [wanted]) = (found.map(str::parse::<i64>), &self.values[..])
                else {
                    return false;
                };
                match wanted.parse::<i64>() {
                    Ok(w) if self.operator == GreaterThan => actual > w,
                    Ok(w) => actual < w,
                    Err(_) => false,
                }
            }
        }
    }
}

impl fmt::Display for LabelRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use LabelOperator::*;
        let op = match self.operator {
            Exists => return write!(f, "{}", self.key),
            DoesNotExist => return write!(f, "!{}", self.key),
            Equals => "=",
            DoubleEquals => "==",
            NotEquals => "!=",
            In => " in ",
            NotIn => " notin ",
            GreaterThan => ">",
            LessThan => "<",
        };
        let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        let values = sorted.join(",");
        match self.operator {
            In | NotIn => write!(f, "{}{op}({values})", self.key),
            _ => write!(f, "{}{op}{values}", self.key),
        }
    }
}
