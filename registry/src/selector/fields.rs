//! Field selectors: `field=value`, `field==value`, `field!=value`, comma-separated, with
//! upstream's escaping of values (`\\`, `\,`, `\=`), its messages, and its string form.

use super::SelectorError;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOperator {
    /// `=` or `==`, which upstream does not tell apart.
    Equals,
    NotEquals,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    /// Unescaped.
    pub value: String,
}

/// A conjunction of field requirements, in upstream's order (terms sorted as written). The
/// default matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// Splits on commas that are not backslash-escaped; escapes stay in the terms.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in selector.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// The first operator in the term splits it; the field part has no escaping.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        // `==` before `=`, so that the value does not start with '='.
        for (op, operator) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], operator, value));
            }
        }
    }
    None
}

fn unescape(value: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::new(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                )));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            // Upstream prints the rune with %v, i.e. as its code point number.
            ',' | '=' => {
                return Err(SelectorError::new(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )))
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err(SelectorError::new(
            "invalid field selector: invalid escape sequence: \\",
        ));
    }
    Ok(out)
}

/// Escapes a literal value for a field selector string (upstream's fields.EscapeValue).
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl FieldSelector {
    /// Matches every object.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses a fieldSelector query parameter.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut terms = split_terms(selector);
        terms.sort_unstable();
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let Some((field, operator, value)) = split_term(term) else {
                return Err(SelectorError::new(format!(
                    "invalid selector: '{selector}'; can't understand '{term}'"
                )));
            };
            requirements.push(FieldRequirement {
                field: field.to_string(),
                operator,
                value: unescape(value)?,
            });
        }
        Ok(Self { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The terms, so the caller can check every field is one the resource supports.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Upstream's check of each field against the resource's supported field labels: a 400
    /// `field label not supported: <field>` for the first one that is not.
    pub fn check_supported(&self, supported: &[&str]) -> Result<(), SelectorError> {
        match self
            .requirements
            .iter()
            .find(|r| !supported.contains(&r.field.as_str()))
        {
            Some(r) => Err(SelectorError::new(format!(
                "field label not supported: {}",
                r.field
            ))),
            None => Ok(()),
        }
    }

    /// The value `field` must equal, when some term requires one (to narrow a list to a key).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// Matches an object whose fields are given by `lookup`; a missing field reads as "", as
    /// upstream's fields.Set does.
    pub fn matches(&self, lookup: &dyn Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let actual = lookup(&r.field).unwrap_or_default();
            match r.operator {
                FieldOperator::Equals => actual == r.value,
                FieldOperator::NotEquals => actual != r.value,
            }
        })
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = match r.operator {
                FieldOperator::Equals => "=",
                FieldOperator::NotEquals => "!=",
            };
            write!(f, "{}{op}{}", r.field, escape_value(&r.value))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
