//! Label selectors: upstream's grammar (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`,
//! `a`, `!a`, `a>1`, `a<1`, comma-separated), its validation and messages, its matching rules,
//! and its canonical string form (what scale.status.selector carries).

mod parser;
mod requirement;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

pub use self::requirement::{LabelOperator, LabelRequirement};
use super::SelectorError;
use crate::validation::quote;

/// A conjunction of requirements, sorted by key. The default matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
    /// A nil metav1.LabelSelector: matches no object (upstream's labels.Nothing()).
    nothing: bool,
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
        let mut requirements = parser::parse(selector).map_err(SelectorError::new)?;
        // Stable, like upstream's sort of few requirements, so String() orders alike.
        requirements.sort_by(|a, b| a.key().cmp(b.key()));
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
        requirements.sort_by(|a, b| a.key().cmp(b.key()));
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
