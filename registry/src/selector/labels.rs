//! Label selectors: upstream's grammar (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`,
//! `a`, `!a`, `a>1`, `a<1`, comma-separated), its validation and messages, its matching rules,
//! and its canonical string form (what scale.status.selector carries).

use super::SelectorError;
use crate::validation::{is_qualified_name, is_valid_label_value, quote};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

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

/// A conjunction of requirements, sorted by key. The default matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
    /// A nil metav1.LabelSelector: matches no object (upstream's labels.Nothing()).
    nothing: bool,
}

/// Upstream's aggregate of field errors: one message alone, several deduplicated in brackets.
fn aggregate(messages: Vec<String>) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    let unique: Vec<String> = messages
        .into_iter()
        .filter(|m| seen.insert(m.clone()))
        .collect();
    match unique.len() {
        0 => Ok(()),
        1 => Err(unique.concat()),
        _ => Err(format!("[{}]", unique.join(", "))),
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

impl LabelSelector {
    /// Matches every object.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Matches no object (what a missing metav1.LabelSelector means).
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses upstream's selector syntax (a labelSelector query parameter).
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut requirements = super::label_parser::parse(selector).map_err(SelectorError::new)?;
        // Stable, like upstream's sort of few requirements, so String() orders alike.
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            nothing: false,
        })
    }

    /// Converts a metav1.LabelSelector (matchLabels, matchExpressions) as upstream's
    /// LabelSelectorAsSelector does: null matches nothing, `{}` matches everything.
    pub fn from_label_selector_json(selector: &Value) -> Result<Self, SelectorError> {
        let object = match selector {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(object) => object,
            _ => return Err(SelectorError::new("a label selector must be an object")),
        };
        let empty = serde_json::Map::new();
        let match_labels = match object.get("matchLabels") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(labels)) => labels,
            Some(_) => return Err(SelectorError::new("matchLabels must be an object")),
        };
        let expressions: &[Value] = match object.get("matchExpressions") {
            None | Some(Value::Null) => &[],
            Some(Value::Array(items)) => items,
            Some(_) => return Err(SelectorError::new("matchExpressions must be an array")),
        };
        if match_labels.is_empty() && expressions.is_empty() {
            return Ok(Self::everything());
        }
        let mut requirements = Vec::with_capacity(match_labels.len() + expressions.len());
        let mut labels: Vec<(&String, &Value)> = match_labels.iter().collect();
        labels.sort_unstable_by_key(|(key, _)| *key);
        for (key, value) in labels {
            let value = value.as_str().ok_or_else(|| {
                SelectorError::new(format!("matchLabels[{key}] must be a string"))
            })?;
            requirements.push(LabelRequirement::new(
                key,
                LabelOperator::Equals,
                vec![value.to_string()],
            )?);
        }
        for expression in expressions {
            requirements.push(expression_requirement(expression)?);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            nothing: false,
        })
    }

    /// True when the selector does not restrict anything (it matches every object).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the selector of a null metav1.LabelSelector, which matches no object.
    pub fn is_nothing(&self) -> bool {
        self.nothing
    }

    pub fn requirements(&self) -> &[LabelRequirement] {
        &self.requirements
    }

    /// Matches labels given by a lookup from key to value (None: no such label).
    pub fn matches<'v>(&self, lookup: &dyn Fn(&str) -> Option<&'v str>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(lookup))
    }

    pub fn matches_map(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches(&|key| labels.get(key).map(String::as_str))
    }

    /// Matches an object's metadata.labels (an object of strings, or null when absent).
    pub fn matches_labels(&self, labels: &Value) -> bool {
        self.matches(&|key| labels.get(key).and_then(Value::as_str))
    }
}

fn expression_requirement(expression: &Value) -> Result<LabelRequirement, SelectorError> {
    let text = |name: &str| expression.get(name).and_then(Value::as_str).unwrap_or("");
    let operator = match text("operator") {
        "In" => LabelOperator::In,
        "NotIn" => LabelOperator::NotIn,
        "Exists" => LabelOperator::Exists,
        "DoesNotExist" => LabelOperator::DoesNotExist,
        other => {
            return Err(SelectorError::new(format!(
                "{} is not a valid pod selector operator",
                quote(other)
            )))
        }
    };
    let values = match expression.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| SelectorError::new("matchExpressions values must be strings"))?,
        Some(_) => {
            return Err(SelectorError::new(
                "matchExpressions values must be an array",
            ))
        }
    };
    LabelRequirement::new(text("key"), operator, values)
}

impl fmt::Display for LabelSelector {
    /// Upstream's canonical form: requirements by key, joined by commas, values sorted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
