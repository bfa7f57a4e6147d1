//! The JSONPath subset Table columns use (`.spec.replicas`, `[0]`, `['a.b']`, `[*]`,
//! `[?(@.type=="Ready")].status`), kubectl's flavour rather than RFC 9535's.

use serde_json::Value;

use super::is_scalar;

/// One step of a JSONPath as custom resource columns use them.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Step {
    Field(String),
    /// Negative indices count from the end.
    Index(i64),
    Wildcard,
    Filter(Box<Filter>),
}

/// `[?(@.type=="Ready")]`, `[?(@.ready)]`: keeps the array elements that pass.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Filter {
    left: Vec<Step>,
    test: Test,
}

#[derive(Clone, Debug, PartialEq)]
enum Test {
    Exists,
    Compare(Op, Operand),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Debug, PartialEq)]
enum Operand {
    Literal(Value),
    Path(Vec<Step>),
}

/// Parses `.spec.replicas`, `{.spec.replicas}`, `$.a[0]['b.c'].d\.e[*]` and filters; None for
/// what is not supported (recursive descent, slices, unions) or malformed.
pub(super) fn parse_path(src: &str) -> Option<Vec<Step>> {
    let mut src = src.trim();
    if let Some(inner) = src.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
        src = inner.trim();
    }
    let src = src.strip_prefix('$').unwrap_or(src);
    let chars: Vec<char> = src.chars().collect();
    let mut at = 0;
    let mut steps = Vec::new();
    while let Some(&c) = chars.get(at) {
        match c {
            '.' => {
                at += 1;
                match chars.get(at) {
                    // `..` is recursive descent.
                    Some('.') => return None,
                    // `.` alone is the object itself; `.[0]` the same as `[0]`.
                    None | Some('[') => {}
                    Some(_) => steps.push(field(&chars, &mut at)?),
                }
            }
            '[' => {
                let (step, next) = bracket(&chars, at)?;
                steps.push(step);
                at = next;
            }
            // A leading bare name (`spec.replicas`) reads as if it began with a dot.
            _ if at == 0 => steps.push(field(&chars, &mut at)?),
            _ => return None,
        }
    }
    Some(steps)
}

/// A dotted field name, where `\.` keeps a dot inside the name (`kubernetes\.io/name`).
fn field(chars: &[char], at: &mut usize) -> Option<Step> {
    let mut name = String::new();
    while let Some(&c) = chars.get(*at) {
        match c {
            '.' | '[' => break,
            '\\' => {
                name.push(*chars.get(*at + 1)?);
                *at += 2;
            }
            _ => {
                name.push(c);
                *at += 1;
            }
        }
    }
    match name.as_str() {
        "" => None,
        "*" => Some(Step::Wildcard),
        _ => Some(Step::Field(name)),
    }
}

/// The bracket starting at `open` and the position after its `]`.
fn bracket(chars: &[char], open: usize) -> Option<(Step, usize)> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut close = None;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '(') => depth += 1,
            (None, ']' | ')') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close.filter(|&i| chars[i] == ']')?;
    let inner: String = chars[open + 1..close].iter().collect();
    let inner = inner.trim();
    let step = if inner == "*" {
        Step::Wildcard
    } else if let Some(name) = unquote(inner) {
        Step::Field(name.to_string())
    } else if let Some(filter) = inner.strip_prefix('?') {
        let expr = filter.trim().strip_prefix('(')?.strip_suffix(')')?;
        Step::Filter(Box::new(parse_filter(expr)?))
    } else {
        Step::Index(inner.parse().ok()?)
    };
    Some((step, close + 1))
}

fn unquote(s: &str) -> Option<&str> {
    ['\'', '"'].into_iter().find_map(|q| {
        s.strip_prefix(q)
            .and_then(|rest| rest.strip_suffix(q))
            .filter(|inner| !inner.contains(q))
    })
}

fn parse_filter(expr: &str) -> Option<Filter> {
    let Some((at, op, len)) = find_operator(expr) else {
        return Some(Filter {
            left: relative_path(expr)?,
            test: Test::Exists,
        });
    };
    let left = relative_path(&expr[..at])?;
    let right = expr[at + len..].trim();
    let operand = if right.starts_with('@') {
        Operand::Path(relative_path(right)?)
    } else if let Some(s) = unquote(right) {
        Operand::Literal(Value::String(s.to_string()))
    } else {
        Operand::Literal(
            serde_json::from_str::<Value>(right)
                .ok()
                .filter(is_scalar)?,
        )
    };
    Some(Filter {
        left,
        test: Test::Compare(op, operand),
    })
}

/// `@.status` inside a filter: a path from the element under test.
fn relative_path(s: &str) -> Option<Vec<Step>> {
    parse_path(s.trim().strip_prefix('@')?)
}

/// The first comparison operator outside quotes: its byte offset, kind and length.
fn find_operator(expr: &str) -> Option<(usize, Op, usize)> {
    let mut quote: Option<char> = None;
    for (i, c) in expr.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, _) => {
                let rest = &expr[i..];
                let found = [
                    ("==", Op::Eq),
                    ("!=", Op::Ne),
                    ("<=", Op::Le),
                    (">=", Op::Ge),
                    ("<", Op::Lt),
                    (">", Op::Gt),
                ]
                .into_iter()
                .find(|(token, _)| rest.starts_with(token));
                if let Some((token, op)) = found {
                    return Some((i, op, token.len()));
                }
            }
        }
    }
    None
}

/// Every value the path reaches, in document order; a column shows the first, as upstream
/// does.
pub(super) fn select<'v>(root: &'v Value, steps: &[Step]) -> Vec<&'v Value> {
    steps.iter().fold(vec![root], |current, step| {
        let mut next = Vec::new();
        for v in current {
            match (step, v) {
                (Step::Field(name), Value::Object(map)) => next.extend(map.get(name)),
                (Step::Index(i), Value::Array(items)) => {
                    let from_end = i64::try_from(items.len()).ok().map(|len| len + i);
                    let index = if *i < 0 { from_end } else { Some(*i) };
                    let item = index
                        .and_then(|i| usize::try_from(i).ok())
                        .and_then(|i| items.get(i));
                    next.extend(item);
                }
                (Step::Wildcard, Value::Array(items)) => next.extend(items),
                (Step::Wildcard, Value::Object(map)) => next.extend(map.values()),
                (Step::Filter(filter), Value::Array(items)) => {
                    next.extend(items.iter().filter(|item| filter.passes(item)));
                }
                _ => {}
            }
        }
        next
    })
}

impl Filter {
    fn passes(&self, item: &Value) -> bool {
        let lefts = select(item, &self.left);
        let (op, operand) = match &self.test {
            Test::Exists => return !lefts.is_empty(),
            Test::Compare(op, operand) => (op, operand),
        };
        // Upstream compares exactly one value on each side and errors otherwise.
        let [left] = lefts.as_slice() else {
            return false;
        };
        let rights;
        let right = match operand {
            Operand::Literal(v) => v,
            Operand::Path(steps) => {
                rights = select(item, steps);
                match rights.as_slice() {
                    [right] => *right,
                    _ => return false,
                }
            }
        };
        compare(*op, left, right)
    }
}

fn compare(op: Op, left: &Value, right: &Value) -> bool {
    use std::cmp::Ordering;
    let order = match (left, right) {
        // 1 and 1.0 are the same quantity though serde_json keeps them apart.
        (Value::Number(a), Value::Number(b)) => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(a, b)| a.partial_cmp(&b)),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    };
    match (op, order) {
        (Op::Eq, None) => left == right,
        (Op::Ne, None) => left != right,
        (_, None) => false,
        (Op::Eq, Some(o)) => o == Ordering::Equal,
        (Op::Ne, Some(o)) => o != Ordering::Equal,
        (Op::Lt, Some(o)) => o == Ordering::Less,
        (Op::Le, Some(o)) => o != Ordering::Greater,
        (Op::Gt, Some(o)) => o == Ordering::Greater,
        (Op::Ge, Some(o)) => o != Ordering::Less,
    }
}
