//! What upstream's type checker catches when a CRD is written, as far as this server can tell
//! without one: references to functions, macros and variables this server's CEL does not
//! provide (refused, never left to fail when an object is validated), fields a rule selects
//! that the schema does not declare, literals that cannot be a duration, a timestamp or a
//! regular expression, and rules whose result is plainly not a bool (messageExpressions not a
//! string). Types are inferred from the schema and literals; what cannot be known is `dyn`,
//! and accepted.

use cel::common::ast::{operators, CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SelectExpr};
use cel::Program;

use super::check_lib::{self, Typed};
use super::env;
use super::schema::Node;
use super::types::{arithmetic, Group, Ty};

/// Functions of Kubernetes' CEL environment that this server does not provide: a rule using
/// one is refused by name, rather than reported as an unknown reference.
const KUBERNETES_ONLY: &[&str] = &[
    // two-variable comprehensions
    "transformList",
    "transformMap",
    "transformMapEntry",
    // optional types' macros
    "optMap",
    "optFlatMap",
    // image library
    "image",
    "isImage",
    "containsDigest",
    "registry",
    "repository",
    "identifier",
    "tag",
    "digest",
];

/// Identifiers of Kubernetes' CEL environments that CRD rules here cannot use.
const KUBERNETES_ONLY_VARIABLES: &[&str] = &["authorizer"];

/// Names that evaluate to a type: `type(x) == int`.
const TYPE_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// Checks `program` (compiled from `source`) as a rule, or a messageExpression, of `node`.
/// `optional_old_self`: oldSelf is an optional. Returns the inferred type of the result, or
/// the errors, rendered as cel-go renders compilation issues.
pub(super) fn check<'n>(
    program: &Program,
    source: &str,
    node: &'n Node,
    optional_old_self: bool,
) -> Result<Ty<'n>, String> {
    let old = if optional_old_self {
        Ty::Optional
    } else {
        Ty::of(node)
    };
    check_with(
        program,
        source,
        &[("self", Ty::of(node)), ("oldSelf", old)],
        false,
    )
}

/// Checks `program` (compiled from `source`) with the variables `roots` declared (a root
/// may be a qualified name, `authorizer.requestResource`). `raw_names`: objects' fields are
/// selected by their property names as they are (admission policies read the JSON as it
/// is), not by CRD rules' escaped names.
pub(super) fn check_with<'n>(
    program: &Program,
    source: &str,
    roots: &[(&'static str, Ty<'n>)],
    raw_names: bool,
) -> Result<Ty<'n>, String> {
    let mut checker = Checker {
        program,
        roots: roots.to_vec(),
        raw_names,
        scope: Vec::new(),
        errors: Vec::new(),
    };
    let ty = checker.expr(program.expression());
    if checker.errors.is_empty() {
        return Ok(ty);
    }
    checker.errors.sort_by_key(|(offset, _)| *offset);
    checker.errors.dedup();
    Err(checker
        .errors
        .iter()
        .map(|(offset, message)| render(source, *offset, message))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// An issue as cel-go prints it:
/// `ERROR: <input>:1:6: message` then the line and a caret under the column.
pub(super) fn render(source: &str, offset: usize, message: &str) -> String {
    let offset = offset.min(source.len());
    let before = &source[..floor_char_boundary(source, offset)];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_no = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count();
    let line = source[line_start..].lines().next().unwrap_or("");
    render_at(line_no, column + 1, line, message)
}

/// An issue at a 1-based line and column of `line`.
pub(super) fn render_at(line_no: usize, column: usize, line: &str, message: &str) -> String {
    format!(
        "ERROR: <input>:{line_no}:{column}: {message}\n | {line}\n | {}^",
        ".".repeat(column.saturating_sub(1))
    )
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

struct Checker<'p, 'n> {
    program: &'p Program,
    /// The declared variables.
    roots: Vec<(&'static str, Ty<'n>)>,
    raw_names: bool,
    /// Comprehension variables in scope, innermost last.
    scope: Vec<(&'p str, Ty<'n>)>,
    errors: Vec<(usize, String)>,
}

impl<'p, 'n> Checker<'p, 'n> {
    fn error(&mut self, id: u64, message: String) {
        let offset = self
            .program
            .source_info()
            .offset_for(id)
            .map_or(0, |(start, _)| start as usize);
        self.errors.push((offset, message));
    }

    fn variable(&self, name: &str) -> Option<Ty<'n>> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
    }

    /// The type of a declared variable (not shadowed by a comprehension's).
    fn root(&self, name: &str) -> Option<Ty<'n>> {
        if self.variable(name).is_some() {
            return None;
        }
        self.roots.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
    }

    fn expr(&mut self, e: &'p IdedExpr) -> Ty<'n> {
        match &e.expr {
            Expr::Unspecified => Ty::Dyn,
            Expr::Literal(literal) => match literal {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            },
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(select) => self.select(e.id, select),
            Expr::Call(call) => self.call(e.id, call),
            Expr::List(list) => {
                let mut items: Option<Ty<'n>> = None;
                let mut same = true;
                for item in &list.elements {
                    let t = self.expr(item);
                    match items {
                        None => items = Some(t),
                        Some(first) => same &= first.same(t),
                    }
                }
                match items {
                    Some(Ty::Object(node)) if same => Ty::List(Some(node)),
                    _ => Ty::List(None),
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(entry) => {
                            self.expr(&entry.key);
                            self.expr(&entry.value);
                        }
                        EntryExpr::StructField(field) => {
                            self.expr(&field.value);
                        }
                    }
                }
                Ty::Map(None)
            }
            Expr::Struct(s) => {
                // No message types are declared for rules.
                self.error(
                    e.id,
                    format!(
                        "undeclared reference to '{}' (in container '')",
                        s.type_name
                    ),
                );
                Ty::Dyn
            }
            Expr::Comprehension(c) => {
                let range = self.expr(&c.iter_range);
                let (first, second) = match range {
                    Ty::List(items) => {
                        let item = items.map_or(Ty::Dyn, Ty::of);
                        if c.iter_var2.is_some() {
                            (Ty::Int, item)
                        } else {
                            (item, Ty::Dyn)
                        }
                    }
                    Ty::Map(values) => (Ty::String, values.map_or(Ty::Dyn, Ty::of)),
                    Ty::Object(_) => (Ty::String, Ty::Dyn),
                    _ => (Ty::Dyn, Ty::Dyn),
                };
                let accu = self.expr(&c.accu_init);
                let depth = self.scope.len();
                self.scope.push((c.accu_var.as_str(), accu));
                self.scope.push((c.iter_var.as_str(), first));
                if let Some(second_var) = &c.iter_var2 {
                    self.scope.push((second_var.as_str(), second));
                }
                self.expr(&c.loop_cond);
                self.expr(&c.loop_step);
                self.scope.truncate(depth + 1);
                let result = self.expr(&c.result);
                self.scope.truncate(depth);
                result
            }
        }
    }

    fn ident(&mut self, id: u64, name: &str) -> Ty<'n> {
        if let Some(t) = self.variable(name) {
            return t;
        }
        if let Some(t) = self.root(name) {
            return t;
        }
        match name {
            _ if TYPE_NAMES.contains(&name) => Ty::Type,
            _ if KUBERNETES_ONLY_VARIABLES.contains(&name) => {
                self.error(
                    id,
                    format!("variable '{name}' is not supported by this server"),
                );
                Ty::Refused
            }
            _ => {
                self.error(
                    id,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
                Ty::Dyn
            }
        }
    }

    fn select(&mut self, id: u64, select: &'p SelectExpr) -> Ty<'n> {
        // google.protobuf.Duration and google.protobuf.Timestamp name types, and so do the
        // libraries' net.IP, kubernetes.Quantity and the like.
        if !select.test {
            if let Expr::Ident(root) = &select.operand.expr {
                let qualified = format!("{root}.{}", select.field);
                if self.variable(root).is_none() {
                    if let Some((_, t)) = self.roots.iter().find(|(n, _)| *n == qualified) {
                        return if select.test { Ty::Bool } else { *t };
                    }
                }
                if self.variable(root).is_none() && check_lib::is_type_name(&qualified) {
                    return Ty::Type;
                }
            }
            if let Expr::Select(inner) = &select.operand.expr {
                if let Expr::Ident(root) = &inner.operand.expr {
                    if root == "google"
                        && inner.field == "protobuf"
                        && self.variable("google").is_none()
                        && matches!(select.field.as_str(), "Duration" | "Timestamp")
                    {
                        return Ty::Type;
                    }
                }
            }
        }
        let operand = self.expr(&select.operand);
        let field = self.field(id, operand, &select.field);
        if select.test {
            Ty::Bool
        } else {
            field
        }
    }

    /// The type of `operand.name`, reporting a field the schema does not declare.
    fn field(&mut self, id: u64, operand: Ty<'n>, name: &str) -> Ty<'n> {
        match operand {
            Ty::Object(node) => match if self.raw_names {
                node.raw_field(name)
            } else {
                node.cel_field(name)
            } {
                Some(field) => Ty::of(field),
                None => {
                    self.error(id, format!("undefined field '{name}'"));
                    Ty::Dyn
                }
            },
            Ty::Map(values) => values.map_or(Ty::Dyn, Ty::of),
            Ty::Dyn | Ty::Optional => Ty::Dyn,
            Ty::Refused => Ty::Refused,
            other => {
                let type_name = other.name().unwrap_or("dyn");
                self.error(
                    id,
                    format!("type '{type_name}' does not support field selection"),
                );
                Ty::Dyn
            }
        }
    }

    fn call(&mut self, id: u64, call: &'p CallExpr) -> Ty<'n> {
        let name = call.func_name.as_str();
        // `ns.f(..)` with `ns` not a variable: the qualified function `ns.f`.
        if let Some(target) = &call.target {
            if let Expr::Ident(namespace) = &target.expr {
                if self.variable(namespace).is_none()
                    && self.root(namespace).is_none()
                    && !TYPE_NAMES.contains(&namespace.as_str())
                    && !KUBERNETES_ONLY_VARIABLES.contains(&namespace.as_str())
                {
                    let args: Vec<Ty<'n>> = call.args.iter().map(|a| self.expr(a)).collect();
                    return self.global(id, &format!("{namespace}.{name}"), call, &args);
                }
            }
        }
        let target = call.target.as_ref().map(|t| self.expr(t));
        let args: Vec<Ty<'n>> = call.args.iter().map(|a| self.expr(a)).collect();
        match target {
            None => self.global(id, name, call, &args),
            Some(target) => self.member(id, name, target, call, &args),
        }
    }

    fn global(&mut self, id: u64, name: &str, call: &'p CallExpr, args: &[Ty<'n>]) -> Ty<'n> {
        match check_lib::global(name, args) {
            Typed::Ty(t) => return t,
            Typed::NoOverload => {
                self.no_overload(id, name, None, args);
                return Ty::Dyn;
            }
            Typed::Unknown => {}
        }
        let arg = |i: usize| args.get(i).copied().unwrap_or(Ty::Dyn);
        let group = |i: usize| arg(i).group();
        match name {
            operators::LOGICAL_AND
            | operators::LOGICAL_OR
            | operators::LOGICAL_NOT
            | operators::NOT_STRICTLY_FALSE => {
                if args
                    .iter()
                    .any(|a| a.group().is_some_and(|g| g != Group::Bool))
                {
                    self.no_overload(id, name, None, args);
                }
                Ty::Bool
            }
            operators::EQUALS | operators::NOT_EQUALS => {
                if let (Some(a), Some(b)) = (group(0), group(1)) {
                    if a != b && a != Group::Null && b != Group::Null {
                        self.no_overload(id, name, None, args);
                    }
                }
                Ty::Bool
            }
            operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS => {
                if let (Some(a), Some(b)) = (group(0), group(1)) {
                    let ordered = matches!(
                        a,
                        Group::Bool
                            | Group::Number
                            | Group::String
                            | Group::Bytes
                            | Group::Duration
                            | Group::Timestamp
                    );
                    if a != b || !ordered {
                        self.no_overload(id, name, None, args);
                    }
                }
                Ty::Bool
            }
            operators::IN => {
                if group(1).is_some_and(|g| g != Group::List && g != Group::Map) {
                    self.no_overload(id, name, None, args);
                }
                Ty::Bool
            }
            operators::ADD
            | operators::SUBSTRACT
            | operators::MULTIPLY
            | operators::DIVIDE
            | operators::MODULO
                if group(0).is_some() && group(1).is_some() =>
            {
                match arithmetic(name, arg(0), arg(1)) {
                    Some(t) => t,
                    None => {
                        self.no_overload(id, name, None, args);
                        Ty::Dyn
                    }
                }
            }
            operators::NEGATE if group(0).is_some() => match arg(0) {
                t @ (Ty::Int | Ty::Double) => t,
                _ => {
                    self.no_overload(id, name, None, args);
                    Ty::Dyn
                }
            },
            operators::ADD => match (arg(0), arg(1)) {
                (Ty::Duration, Ty::Timestamp) => Ty::Timestamp,
                (Ty::List(_), _) => Ty::List(None),
                (a, _) if a.numeric() => a,
                (a @ (Ty::String | Ty::Bytes | Ty::Duration | Ty::Timestamp), _) => a,
                _ => Ty::Dyn,
            },
            operators::SUBSTRACT => match (arg(0), arg(1)) {
                (Ty::Timestamp, Ty::Timestamp) => Ty::Duration,
                (Ty::Timestamp, Ty::Duration) => Ty::Timestamp,
                (Ty::Duration, Ty::Duration) => Ty::Duration,
                (a, _) if a.numeric() => a,
                _ => Ty::Dyn,
            },
            operators::MULTIPLY | operators::DIVIDE | operators::MODULO | operators::NEGATE => {
                match arg(0) {
                    a if a.numeric() => a,
                    _ => Ty::Dyn,
                }
            }
            operators::CONDITIONAL => {
                if group(0).is_some_and(|g| g != Group::Bool) {
                    self.no_overload(id, name, None, args);
                }
                if arg(1).same(arg(2)) {
                    arg(1)
                } else {
                    Ty::Dyn
                }
            }
            operators::INDEX => match arg(0) {
                Ty::List(items) => items.map_or(Ty::Dyn, Ty::of),
                Ty::Map(values) => values.map_or(Ty::Dyn, Ty::of),
                _ => Ty::Dyn,
            },
            operators::OPT_INDEX => Ty::Optional,
            operators::OPT_SELECT => {
                if let Some(IdedExpr {
                    expr: Expr::Literal(LiteralValue::String(field)),
                    ..
                }) = call.args.get(1)
                {
                    if let Ty::Object(_) = arg(0) {
                        self.field(id, arg(0), field);
                    }
                }
                Ty::Optional
            }
            "size" => {
                let sized = [Group::String, Group::Bytes, Group::List, Group::Map];
                if group(0).is_some_and(|g| !sized.contains(&g)) {
                    self.no_overload(id, name, None, args);
                }
                Ty::Int
            }
            "int" => Ty::Int,
            "uint" => Ty::Uint,
            "double" => Ty::Double,
            "string" => Ty::String,
            "bool" => Ty::Bool,
            "bytes" => Ty::Bytes,
            "dyn" => Ty::Dyn,
            "type" => Ty::Type,
            "duration" => {
                self.literal(call, 0, "duration", |s| env::duration(s).is_some());
                Ty::Duration
            }
            "timestamp" => {
                self.literal(call, 0, "timestamp", |s| env::timestamp(s).is_some());
                Ty::Timestamp
            }
            "matches" => {
                self.literal(call, 1, "regex", env::valid_regex);
                Ty::Bool
            }
            "optional.none" | "optional.of" | "optional.ofNonZeroValue" => Ty::Optional,
            "strings.quote" => Ty::String,
            "sets.contains" | "sets.equivalent" | "sets.intersects" => Ty::Bool,
            _ => self.unknown(id, name),
        }
    }

    fn member(
        &mut self,
        id: u64,
        name: &str,
        target: Ty<'n>,
        call: &'p CallExpr,
        args: &[Ty<'n>],
    ) -> Ty<'n> {
        if let Ty::Refused = target {
            return Ty::Refused;
        }
        match check_lib::member(name, target, args) {
            Typed::Ty(t) => {
                if matches!(name, "find" | "findAll") {
                    self.literal(call, 0, "regex", env::valid_regex);
                }
                return t;
            }
            Typed::NoOverload => {
                self.no_overload(id, name, Some(target), args);
                return Ty::Dyn;
            }
            Typed::Unknown => {}
        }
        // The kinds of receiver the function applies to (none: optionals only).
        let receivers: Option<&[Group]> = match name {
            "size" => Some(&[Group::String, Group::Bytes, Group::List, Group::Map]),
            "contains" | "startsWith" | "endsWith" | "matches" | "charAt" | "lowerAscii"
            | "upperAscii" | "replace" | "substring" | "trim" | "format" | "split" => {
                Some(&[Group::String])
            }
            "indexOf" | "lastIndexOf" => Some(&[Group::String, Group::List]),
            "join" => Some(&[Group::List]),
            "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth" | "getDayOfWeek"
            | "getDayOfYear" => Some(&[Group::Timestamp]),
            "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds" => {
                Some(&[Group::Timestamp, Group::Duration])
            }
            "hasValue" | "or" | "value" | "orValue" => Some(&[]),
            _ => None,
        };
        // The kinds of the leading arguments, where they are fixed.
        let string = Some(Group::String);
        let int = Some(Group::Number);
        let params: &[Option<Group>] = match name {
            "contains" | "startsWith" | "endsWith" | "matches" | "join" | "split" => &[string],
            "replace" => &[string, string, int],
            "charAt" | "substring" => &[int, int],
            "indexOf" | "lastIndexOf" if !matches!(target, Ty::List(_)) => &[string, int],
            _ => &[],
        };
        let receiver_ok = match (receivers, target.group()) {
            (Some(receivers), Some(g)) => receivers.contains(&g),
            _ => true,
        };
        let args_ok = params
            .iter()
            .zip(args)
            .all(|(want, got)| match (want, got.group()) {
                (Some(want), Some(got)) => *want == got,
                _ => true,
            });
        if !receiver_ok || !args_ok {
            self.no_overload(id, name, Some(target), args);
            return Ty::Dyn;
        }
        match name {
            "size" => Ty::Int,
            "contains" | "startsWith" | "endsWith" => Ty::Bool,
            "matches" => {
                self.literal(call, 0, "regex", env::valid_regex);
                Ty::Bool
            }
            "charAt" | "lowerAscii" | "upperAscii" | "replace" | "substring" | "trim"
            | "format" | "join" => Ty::String,
            "split" => Ty::List(None),
            "indexOf" | "lastIndexOf" => Ty::Int,
            "getDate" | "getDayOfMonth" | "getDayOfWeek" | "getDayOfYear" | "getFullYear"
            | "getHours" | "getMilliseconds" | "getMinutes" | "getMonth" | "getSeconds" => Ty::Int,
            "hasValue" => Ty::Bool,
            "or" => Ty::Optional,
            "value" | "orValue" => Ty::Dyn,
            "all" | "exists" | "exists_one" | "existsOne" if call.args.len() == 3 => {
                self.error(
                    id,
                    format!("two-variable comprehension '{name}' is not supported by this server"),
                );
                Ty::Bool
            }
            _ => self.unknown(id, name),
        }
    }

    /// A call no overload of `name` applies to, given the known types.
    fn no_overload(&mut self, id: u64, name: &str, receiver: Option<Ty<'n>>, args: &[Ty<'n>]) {
        let names: Vec<&str> = args.iter().map(|t| t.name().unwrap_or("dyn")).collect();
        let applied = match receiver {
            Some(r) => format!("{}.({})", r.name().unwrap_or("dyn"), names.join(", ")),
            None => format!("({})", names.join(", ")),
        };
        self.error(
            id,
            format!("found no matching overload for '{name}' applied to '{applied}'"),
        );
    }

    /// A function this server does not provide: reported, and its result `Refused`.
    fn unknown(&mut self, id: u64, name: &str) -> Ty<'n> {
        let message = if KUBERNETES_ONLY.contains(&name) {
            format!("function '{name}' is not supported by this server")
        } else {
            format!("undeclared reference to '{name}' (in container '')")
        };
        self.error(id, message);
        Ty::Refused
    }

    /// Reports the string literal argument `index` of `call` if `valid` refuses it, as
    /// Kubernetes' literal validators do.
    fn literal(
        &mut self,
        call: &'p CallExpr,
        index: usize,
        what: &str,
        valid: impl Fn(&str) -> bool,
    ) {
        let Some(IdedExpr {
            id,
            expr: Expr::Literal(LiteralValue::String(text)),
        }) = call.args.get(index)
        else {
            return;
        };
        if !valid(text.inner()) {
            let message = match what {
                "regex" => format!("invalid regex: {:?}", text.inner()),
                _ => format!(
                    "{what} validation failed: invalid {what} literal {:?}",
                    text.inner()
                ),
            };
            self.error(*id, message);
        }
    }
}
