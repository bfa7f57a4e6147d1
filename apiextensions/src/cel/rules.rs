//! One node's `x-kubernetes-validations`: checked and compiled as upstream's CRD validation
//! does, with its field paths and messages.

use cel::{ParseErrors, Program};
use serde_json::Value as Json;

use super::check;
use super::cost;
use super::env;
use super::schema::{join, Kind, Node};
use super::types::Ty;
use super::Build;
use registry::error::Cause;
use registry::validation::quote;

/// The cause type a failed rule is reported with (`reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reason {
    Invalid,
    Forbidden,
    Required,
    Duplicate,
}

const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// A compiled rule.
pub(super) struct Rule {
    pub(super) program: Program,
    /// The rule as written, trimmed.
    pub(super) rule: String,
    /// `message`, trimmed, when set.
    pub(super) message: Option<String>,
    pub(super) message_expression: Option<Program>,
    pub(super) reason: Reason,
    /// `fieldPath`, normalized as a path below the node (`spec.x`, `[key]`), when set.
    pub(super) field_path: Option<String>,
    /// A transition rule: it refers to oldSelf.
    pub(super) uses_old_self: bool,
    /// oldSelf is an optional, and the rule also runs where there is no old value.
    pub(super) optional_old_self: bool,
    /// Where the rule is in the CRD (`...x-kubernetes-validations[0]`).
    pub(super) at: String,
    /// The estimated cost of one evaluation, with the sizes the schema allows.
    pub(super) cost: u64,
    /// The same of the messageExpression, if any.
    pub(super) message_cost: Option<u64>,
    /// The messageExpression as written.
    pub(super) message_expression_source: Option<String>,
}

impl Rule {
    /// Upstream's ruleErrorString: the message if any, else the rule.
    pub(super) fn error_string(&self) -> &str {
        self.message.as_deref().unwrap_or(&self.rule)
    }
}

/// The fields of one entry of `x-kubernetes-validations`, as written.
struct Entry<'a> {
    rule: &'a str,
    message: Option<&'a str>,
    message_expression: Option<&'a str>,
    reason: Option<&'a str>,
    field_path: Option<&'a str>,
    optional_old_self: Option<bool>,
}

impl<'a> Entry<'a> {
    fn read(entry: &'a Json) -> Entry<'a> {
        let text = |name: &str| entry.get(name).and_then(Json::as_str);
        Entry {
            rule: text("rule").unwrap_or(""),
            message: text("message").filter(|m| !m.is_empty()),
            message_expression: text("messageExpression").filter(|m| !m.is_empty()),
            reason: text("reason"),
            field_path: text("fieldPath").filter(|p| !p.is_empty()),
            optional_old_self: entry.get("optionalOldSelf").and_then(Json::as_bool),
        }
    }

    /// The rule as upstream prints it as a bad value: the Go syntax of the internal
    /// apiextensions.ValidationRule.
    fn go_syntax(&self) -> String {
        let pointer = |set: bool, ty: &str| {
            if set {
                format!("(*{ty})(0xc000000000)")
            } else {
                format!("(*{ty})(nil)")
            }
        };
        format!(
            "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
            quote(self.rule),
            quote(self.message.unwrap_or("")),
            quote(self.message_expression.unwrap_or("")),
            pointer(self.reason.is_some(), "apiextensions.FieldValueErrorReason"),
            quote(self.field_path.unwrap_or("")),
            pointer(self.optional_old_self.is_some(), "bool"),
        )
    }
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

fn required(field: &str, detail: &str) -> Cause {
    Cause {
        kind: "FieldValueRequired".into(),
        message: format!("Required value: {detail}"),
        field: field.into(),
    }
}

/// Checks and compiles the rules of `schema`, the schema of `node` at `path`. The rules'
/// own problems (an empty rule, a bad message, reason or fieldPath) are always reported;
/// compilation is only attempted when `sound` (no such problem here or below), as upstream.
pub(super) fn compile(
    schema: &Json,
    path: &str,
    node: &Node,
    uncorrelatable: Option<&str>,
    sound: bool,
    out: &mut Build,
) -> Vec<Rule> {
    let Some(entries) = schema
        .get("x-kubernetes-validations")
        .and_then(Json::as_array)
    else {
        return Vec::new();
    };
    let mut rules = Vec::with_capacity(entries.len());
    let mut parsed = Vec::with_capacity(entries.len());
    let schema_errors = out.causes.len();
    for (i, entry) in entries.iter().enumerate() {
        let at = join(path, &format!("x-kubernetes-validations[{i}]"));
        let entry = Entry::read(entry);
        let field_path = specification(&entry, &at, node, out);
        parsed.push((at, entry, field_path));
    }
    out.schema_errors += out.causes.len() - schema_errors;
    if !sound || out.causes.len() > schema_errors {
        return Vec::new();
    }
    for (at, entry, field_path) in parsed {
        if let Some(rule) = program(&entry, &at, node, uncorrelatable, field_path, out) {
            rules.push(rule);
        }
    }
    rules
}

/// The checks upstream makes of an entry before compiling it. Returns the normalized
/// fieldPath, if any.
fn specification(entry: &Entry, at: &str, node: &Node, out: &mut Build) -> Option<String> {
    let rule = entry.rule.trim();
    let message = entry.message.unwrap_or("");
    let trimmed_message = message.trim();
    if rule.is_empty() {
        out.causes
            .push(required(&format!("{at}.rule"), "rule is not specified"));
    } else if !message.is_empty() && trimmed_message.is_empty() {
        out.causes.push(Cause::invalid(
            &format!("{at}.message"),
            quote(message),
            "message must be non-empty if specified",
        ));
    } else if message.len() > 2048 {
        let head: String = message.chars().take(10).collect();
        out.causes.push(Cause::invalid(
            &format!("{at}.message"),
            quote(&format!("{head}...")),
            "message must have a maximum length of 2048 characters",
        ));
    } else if has_newlines(trimmed_message) {
        out.causes.push(Cause::invalid(
            &format!("{at}.message"),
            quote(message),
            "message must not contain line breaks",
        ));
    } else if has_newlines(rule) && trimmed_message.is_empty() {
        out.causes.push(required(
            &format!("{at}.message"),
            "message must be specified if rule contains line breaks",
        ));
    }
    if entry
        .message_expression
        .is_some_and(|m| m.trim().is_empty())
    {
        out.causes.push(required(
            &format!("{at}.messageExpression"),
            "messageExpression must be non-empty if specified",
        ));
    }
    if let Some(reason) = entry.reason {
        if !REASONS.contains(&reason) {
            out.causes.push(Cause::not_supported(
                &format!("{at}.reason"),
                reason,
                &REASONS,
            ));
        }
    }
    let field_path = entry.field_path?;
    if field_path.trim().is_empty() {
        out.causes.push(Cause::invalid(
            &format!("{at}.fieldPath"),
            quote(field_path),
            "fieldPath must be non-empty if specified",
        ));
        return None;
    }
    if has_newlines(field_path) {
        out.causes.push(Cause::invalid(
            &format!("{at}.fieldPath"),
            quote(field_path),
            "fieldPath must not contain line breaks",
        ));
        return None;
    }
    match normalize_field_path(field_path, node) {
        Ok(normalized) => Some(normalized),
        Err(_) => {
            out.causes.push(Cause::invalid(
                &format!("{at}.fieldPath"),
                quote(field_path),
                "fieldPath must be a valid path",
            ));
            None
        }
    }
}

/// Compiles an entry that passed its checks; `None` (with causes) if it does not compile.
fn program(
    entry: &Entry,
    at: &str,
    node: &Node,
    uncorrelatable: Option<&str>,
    field_path: Option<String>,
    out: &mut Build,
) -> Option<Rule> {
    let env = env::env();
    let optional = entry.optional_old_self == Some(true);
    let rule_field = format!("{at}.rule");
    let program = match env.compile(entry.rule) {
        Ok(program) => program,
        Err(errors) => {
            out.causes.push(Cause::invalid(
                &rule_field,
                entry.go_syntax(),
                &format!("compilation failed: {}", parse_errors(entry.rule, &errors)),
            ));
            return None;
        }
    };
    let mut failed = false;
    match check::check(&program, entry.rule, node, optional) {
        Err(issues) => {
            out.causes.push(Cause::invalid(
                &rule_field,
                entry.go_syntax(),
                &format!("compilation failed: {issues}"),
            ));
            failed = true;
        }
        Ok(ty) if !matches!(ty, Ty::Bool | Ty::Dyn | Ty::Refused) => {
            out.causes.push(Cause::invalid(
                &rule_field,
                entry.go_syntax(),
                "cel expression must evaluate to a bool",
            ));
            failed = true;
        }
        Ok(_) => {}
    }
    let uses_old_self = program.references().has_variable("oldSelf");
    if uses_old_self {
        if let Some(list) = uncorrelatable {
            out.causes.push(Cause::invalid(
                &rule_field,
                quote(entry.rule),
                &format!(
                    "oldSelf cannot be used on the uncorrelatable portion of the schema within {list}"
                ),
            ));
            failed = true;
        }
    } else if let Some(set) = entry.optional_old_self {
        out.causes.push(Cause::invalid(
            &format!("{at}.optionalOldSelf"),
            set,
            "may not be set if oldSelf is not used in rule",
        ));
        failed = true;
    }
    let mut message_expression = None;
    if let Some(source) = entry.message_expression {
        let detail = match env.compile(source) {
            Err(errors) => Some(format!(
                "messageExpression compilation failed: {}",
                parse_errors(source, &errors)
            )),
            Ok(compiled) => match check::check(&compiled, source, node, false) {
                Err(issues) => Some(format!("messageExpression compilation failed: {issues}")),
                Ok(Ty::String | Ty::Dyn | Ty::Refused) => {
                    message_expression = Some(compiled);
                    None
                }
                Ok(_) => Some("messageExpression must evaluate to a string".to_string()),
            },
        };
        if let Some(detail) = detail {
            out.causes.push(Cause::invalid(
                &format!("{at}.messageExpression"),
                entry.go_syntax(),
                &detail,
            ));
            failed = true;
        }
    }
    if failed {
        return None;
    }
    let cost = cost::estimate(&program, node, &cost::Declared);
    let message_cost = message_expression
        .as_ref()
        .map(|m| cost::estimate(m, node, &cost::Declared));
    Some(Rule {
        at: at.to_string(),
        cost,
        message_cost,
        message_expression_source: entry.message_expression.map(str::to_string),
        program,
        rule: entry.rule.trim().to_string(),
        message: entry
            .message
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty()),
        message_expression,
        reason: match entry.reason {
            Some("FieldValueForbidden") => Reason::Forbidden,
            Some("FieldValueRequired") => Reason::Required,
            Some("FieldValueDuplicate") => Reason::Duplicate,
            _ => Reason::Invalid,
        },
        field_path,
        uses_old_self,
        optional_old_self: optional && uses_old_self,
    })
}

/// Parse errors as cel-go prints compilation issues.
fn parse_errors(source: &str, errors: &ParseErrors) -> String {
    errors
        .errors
        .iter()
        .map(|e| {
            let line_no = e.pos.0.max(1) as usize;
            let line = source.lines().nth(line_no - 1).unwrap_or("");
            check::render_at(line_no, e.pos.1.max(1) as usize, line, &e.msg)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Upstream's ValidFieldPath: `fieldPath` is a JSON path of `.field` and `['key']` steps
/// through the properties and additionalProperties of the schema below `node`. Returns it as
/// a field path (`a.b[key]`).
pub(super) fn normalize_field_path(path: &str, node: &Node) -> Result<String, String> {
    let mut out = String::new();
    let mut node = node;
    let mut rest = path;
    while let Some(c) = rest.chars().next() {
        let name: String;
        match c {
            '.' => {
                let after = &rest[1..];
                let end = after.find(['.', '[', ']']).unwrap_or(after.len());
                if end == 0 {
                    return Err("unexpected end of JSON path".into());
                }
                name = after[..end].to_string();
                rest = &after[end..];
            }
            '[' => {
                let after = &rest[1..];
                if !after.starts_with('\'') {
                    return Err("expected single quoted string".into());
                }
                let bytes = after.as_bytes();
                let mut end = None;
                let mut i = 1;
                while i < bytes.len() {
                    if bytes[i] == b'\'' && bytes[i - 1] != b'\\' {
                        end = Some(i);
                        break;
                    }
                    i += 1;
                }
                let end = end.ok_or("unexpected end of JSON path")?;
                name = unescape_single_quoted(&after[1..end])?;
                let tail = &after[end + 1..];
                if !tail.starts_with(']') {
                    return Err("expected ]".into());
                }
                rest = &tail[1..];
            }
            _ => return Err(format!("expected [ or . but got: {rest}")),
        }
        if node.has_properties {
            let Kind::Object(fields) = &node.kind else {
                return Err("does not refer to a valid field".into());
            };
            let field = fields.get(&name).ok_or("does not refer to a valid field")?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
            node = &field.node;
        } else if let Kind::Map(values) = &node.kind {
            out.push('[');
            out.push_str(&name);
            out.push(']');
            node = values;
        } else {
            return Err("does not refer to a valid field".into());
        }
    }
    Ok(out)
}

fn unescape_single_quoted(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('a') => '\u{07}',
            Some('b') => '\u{08}',
            Some('f') => '\u{0c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('v') => '\u{0b}',
            Some('\'') => '\'',
            Some('\\') => '\\',
            other => return Err(format!("invalid escape char {other:?}")),
        });
    }
    Ok(out)
}
