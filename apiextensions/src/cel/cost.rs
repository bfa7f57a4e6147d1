//! Upstream's CEL cost model (cel-go's checker/cost.go with Kubernetes' library costs,
//! k8s.io/apiserver/pkg/cel/library/cost.go): the most a rule can cost to evaluate, from the
//! sizes its values can have. With the schema's sizes (maxLength, maxItems, maxProperties,
//! else what fits in the largest request) it is the rule's estimated cost, limited when a
//! CRD is written; with the sizes of the object being validated it is what an evaluation is
//! charged against the per-call limit and the validation's budget.
//!
//! A cost is in upstream's units: 1 per variable, field selection and plain function call, a
//! tenth per byte a string function traverses, a quarter per byte of a regular expression,
//! 10 to create a list, 30 a map; comprehensions cost their body once per element.

use std::collections::HashMap;

use cel::common::ast::{
    operators, CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue,
};
use cel::Program;
use serde_json::Value as Json;

use super::schema::{Kind, Node, MAX_REQUEST_BYTES};

/// The most a rule may be estimated to cost, times the most times it can run
/// (StaticEstimatedCostLimit).
pub(super) const PER_EXPRESSION_LIMIT: u64 = 10_000_000;
/// The most all the rules of a schema may be estimated to cost (StaticEstimatedCRDCostLimit).
pub(super) const SCHEMA_LIMIT: u64 = 100_000_000;
/// The most one evaluation of a rule may cost (PerCallLimit).
pub(super) const PER_CALL_LIMIT: u64 = 1_000_000;
/// The most the evaluations of one validation may cost together (RuntimeCELCostBudget).
pub(super) const VALIDATION_BUDGET: u64 = 10_000_000;

const STRING_TRAVERSAL: f64 = 0.1;
const REGEX_LENGTH: f64 = 0.25;
/// What Kubernetes charges validating a named format as, a regex of at most this size.
const NAMED_FORMAT_REGEX: f64 = 128.0;
/// The size an IP or CIDR value is taken to have (the longest IPv6 prefix in text).
const ADDRESS_SIZE: u64 = 43;

/// The sizes values of a schema node can have.
pub(super) trait Sizes {
    /// The most bytes of a string, items of a list or entries of a map of `node`.
    fn of(&self, node: &Node) -> u64;
}

/// The sizes the schema allows.
pub(super) struct Declared;

impl Sizes for Declared {
    fn of(&self, node: &Node) -> u64 {
        node.bounds.max_elements
    }
}

/// The sizes values have in the objects at hand: the largest of each node.
#[derive(Default)]
pub(super) struct Observed(HashMap<*const Node, u64>);

impl Sizes for Observed {
    fn of(&self, node: &Node) -> u64 {
        self.0.get(&(node as *const Node)).copied().unwrap_or(0)
    }
}

impl Observed {
    /// Records the sizes of `value`, of schema `node`, and of everything below it.
    pub(super) fn observe(&mut self, node: &Node, value: &Json) {
        let size = match value {
            Json::String(s) => s.len() as u64,
            Json::Array(items) => items.len() as u64,
            Json::Object(map) if !matches!(node.kind, Kind::Object(_)) => map.len() as u64,
            _ => 0,
        };
        let entry = self.0.entry(node as *const Node).or_default();
        *entry = (*entry).max(size);
        match (&node.kind, value) {
            (Kind::Object(fields), Json::Object(map)) => {
                for (name, field) in fields {
                    if let Some(v) = map.get(name) {
                        self.observe(field.cel(), v);
                    }
                }
            }
            (Kind::Map(values), Json::Object(map)) => {
                map.values().for_each(|v| self.observe(values, v))
            }
            (Kind::List { items, .. }, Json::Array(list)) => {
                list.iter().for_each(|v| self.observe(items, v))
            }
            _ => {}
        }
    }
}

/// The most `program`, a rule of `node`, costs with values of the given sizes.
pub(super) fn estimate(program: &Program, node: &Node, sizes: &dyn Sizes) -> u64 {
    let roots = [("self", node), ("oldSelf", node)];
    let mut estimator = Estimator {
        sizes,
        roots: &roots,
        raw_names: false,
        variables: &[],
        locals: Vec::new(),
    };
    estimator.expr(program.expression()).0
}

/// What an expression of an admission policy reads: its variables' values (typed by the
/// values themselves) and the policy's composited `variables`, in order.
pub(super) struct Scope<'s, 'n> {
    pub(super) roots: &'s [(&'s str, &'n Node)],
    pub(super) variables: &'s [(&'s str, &'s Program)],
}

/// The most `program` costs with `scope` bound: reading a composited variable costs what
/// computing it does. Each variable is estimated once, in order (a variable reads only those
/// before it), however many expressions read it.
pub(super) fn estimate_in(program: &Program, scope: &Scope, sizes: &dyn Sizes) -> u64 {
    let mut known: Vec<(&str, Estimate)> = Vec::with_capacity(scope.variables.len());
    for (name, variable) in scope.variables {
        let estimate = estimate_with(variable, scope.roots, &known, sizes);
        known.push((name, estimate));
    }
    estimate_with(program, scope.roots, &known, sizes).0
}

fn estimate_with<'n>(
    program: &Program,
    roots: &[(&str, &'n Node)],
    variables: &[(&str, Estimate<'n>)],
    sizes: &dyn Sizes,
) -> Estimate<'n> {
    let mut estimator = Estimator {
        sizes,
        roots,
        raw_names: true,
        variables,
        locals: Vec::new(),
    };
    estimator.expr(program.expression())
}

/// What a value typed by itself does not have: nothing, of no size.
static ABSENT: std::sync::LazyLock<Node> = std::sync::LazyLock::new(|| {
    let mut node = Node::leaf(Kind::Any, "");
    node.bounds.max_elements = 0;
    node
});

/// A multiple of a size, rounded up, as upstream's MultiplyByCostFactor.
fn factor(size: u64, f: f64) -> u64 {
    (size as f64 * f).ceil() as u64
}

/// What is known of a value: its schema node, and its size (bytes, items or entries), and
/// that of its elements when it was built by the expression.
#[derive(Clone, Copy)]
struct Shape<'n> {
    node: Option<&'n Node>,
    size: u64,
    element: Option<u64>,
}

impl<'n> Shape<'n> {
    fn sized(size: u64) -> Self {
        Shape {
            node: None,
            size,
            element: None,
        }
    }

    /// A value nothing is known of: as large as can be.
    fn unknown() -> Self {
        Shape::sized(u64::MAX)
    }

    fn union(self, other: Shape<'n>) -> Self {
        Shape {
            node: match (self.node, other.node) {
                (Some(a), Some(b)) if std::ptr::eq(a, b) => Some(a),
                _ => None,
            },
            size: self.size.max(other.size),
            element: match (self.element, other.element) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

struct Estimator<'s, 'n> {
    sizes: &'s dyn Sizes,
    /// The variables and the schema nodes of their values.
    roots: &'s [(&'s str, &'n Node)],
    /// Fields are selected by their property names as they are (policies), not escaped.
    raw_names: bool,
    /// A policy's composited variables, in order: what computing each costs, and its shape.
    variables: &'s [(&'s str, Estimate<'n>)],
    /// Comprehension variables and accumulators in scope, innermost last.
    locals: Vec<(String, Shape<'n>)>,
}

type Estimate<'n> = (u64, Shape<'n>);

impl<'n> Estimator<'_, 'n> {
    fn of_node(&self, node: &'n Node) -> Shape<'n> {
        Shape {
            node: Some(node),
            size: self.sizes.of(node),
            element: None,
        }
    }

    /// The shape of an element of `range` (a list's item, a map's key).
    fn element(&self, range: Shape<'n>) -> Shape<'n> {
        match range.node.map(|n| &n.kind) {
            Some(Kind::List { items, .. }) => self.of_node(items),
            Some(Kind::Map(_) | Kind::Object(_)) => Shape::sized(0),
            _ => range.element.map_or_else(Shape::unknown, Shape::sized),
        }
    }

    fn expr(&mut self, e: &IdedExpr) -> Estimate<'n> {
        match &e.expr {
            Expr::Unspecified => (0, Shape::unknown()),
            Expr::Literal(literal) => (0, Shape::sized(literal_size(literal))),
            Expr::Ident(name) => {
                let shape = match self.locals.iter().rev().find(|(n, _)| n == name) {
                    Some((_, shape)) => *shape,
                    None => match self.roots.iter().find(|(n, _)| n == name) {
                        Some((_, node)) => self.of_node(node),
                        None => Shape::unknown(),
                    },
                };
                (1, shape)
            }
            Expr::Select(select) => {
                if let Some(read) = self.variable(select) {
                    return read;
                }
                let (cost, operand) = self.expr(&select.operand);
                if select.test {
                    return (cost.saturating_add(1), Shape::sized(1));
                }
                let field = match operand.node.map(|n| &n.kind) {
                    Some(Kind::Object(_)) => operand
                        .node
                        .and_then(|n| self.field(n, &select.field))
                        .map_or_else(|| self.absent(), |f| self.of_node(f)),
                    Some(Kind::Map(values)) => self.of_node(values),
                    Some(_) => self.absent(),
                    None => Shape::unknown(),
                };
                (cost.saturating_add(1), field)
            }
            Expr::Call(call) => self.call(call),
            Expr::List(list) => {
                let mut cost = 10u64;
                let mut element: Option<u64> = None;
                for item in &list.elements {
                    let (c, shape) = self.expr(item);
                    cost = cost.saturating_add(c);
                    element = Some(element.unwrap_or(0).max(shape.size));
                }
                let shape = Shape {
                    node: None,
                    size: list.elements.len() as u64,
                    element: Some(element.unwrap_or(0)),
                };
                (cost, shape)
            }
            Expr::Map(map) => {
                let mut cost = 30u64;
                for entry in &map.entries {
                    let parts: Vec<&IdedExpr> = match &entry.expr {
                        EntryExpr::MapEntry(entry) => vec![&entry.key, &entry.value],
                        EntryExpr::StructField(field) => vec![&field.value],
                    };
                    for part in parts {
                        cost = cost.saturating_add(self.expr(part).0);
                    }
                }
                (cost, Shape::sized(map.entries.len() as u64))
            }
            Expr::Struct(_) => (40, Shape::unknown()),
            Expr::Comprehension(c) => self.comprehension(c),
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> Estimate<'n> {
        let (range_cost, range) = self.expr(&c.iter_range);
        let (init_cost, init) = self.expr(&c.accu_init);
        let depth = self.locals.len();
        self.locals.push((c.accu_var.clone(), init));
        let bind = matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty())
            && matches!(&c.loop_cond.expr, Expr::Literal(LiteralValue::Boolean(b)) if !bool::from(*b))
            && c.accu_var != "__result__";
        if bind {
            // cel.bind: the result once, with the variable bound
            let (result_cost, result) = self.expr(&c.result);
            self.locals.truncate(depth);
            return (
                range_cost
                    .saturating_add(init_cost)
                    .saturating_add(result_cost),
                result,
            );
        }
        match &c.iter_var2 {
            Some(second) => {
                self.locals.push((c.iter_var.clone(), Shape::sized(1)));
                let value = self.element(range);
                self.locals.push((second.clone(), value));
            }
            None => {
                let element = self.element(range);
                self.locals.push((c.iter_var.clone(), element));
            }
        }
        let (cond_cost, _) = self.expr(&c.loop_cond);
        let (step_cost, step) = self.expr(&c.loop_step);
        self.locals.truncate(depth + 1);
        let (result_cost, result) = self.expr(&c.result);
        self.locals.truncate(depth);
        let loops = range
            .size
            .saturating_mul(cond_cost.saturating_add(step_cost));
        let cost = range_cost
            .saturating_add(init_cost)
            .saturating_add(result_cost)
            .saturating_add(loops);
        // map and filter build a list as long as the range, of what the step adds
        let shape = match &c.accu_init.expr {
            Expr::List(_) | Expr::Map(_) => Shape {
                node: None,
                size: range.size,
                element: step.element,
            },
            _ => result,
        };
        (cost, shape)
    }

    fn call(&mut self, call: &CallExpr) -> Estimate<'n> {
        let name = call.func_name.as_str();
        let (target_cost, target) = match &call.target {
            // `ns.f()` names a function of a namespace, not a call on a variable
            Some(t) if matches!(&t.expr, Expr::Ident(n) if self.is_namespace(n)) => (0, None),
            Some(t) => {
                let (c, s) = self.expr(t);
                (c, Some(s))
            }
            None => (0, None),
        };
        let mut args_cost = target_cost;
        let mut args = Vec::with_capacity(call.args.len());
        let mut costs = Vec::with_capacity(call.args.len());
        for a in &call.args {
            let (c, s) = self.expr(a);
            args_cost = args_cost.saturating_add(c);
            costs.push(c);
            args.push(s);
        }
        let size = |i: usize| args.get(i).map_or(u64::MAX, |s: &Shape| s.size);
        let this = target.map_or(u64::MAX, |t| t.size);
        let (own, shape): (u64, Shape<'n>) = match name {
            operators::LOGICAL_AND | operators::LOGICAL_OR => (0, Shape::sized(1)),
            operators::CONDITIONAL => {
                let then = costs.get(1).copied().unwrap_or(0);
                let otherwise = costs.get(2).copied().unwrap_or(0);
                let cond = costs.first().copied().unwrap_or(0);
                let shape = match (args.get(1), args.get(2)) {
                    (Some(a), Some(b)) => a.union(*b),
                    _ => Shape::unknown(),
                };
                return (cond.saturating_add(then.max(otherwise)), shape);
            }
            operators::EQUALS
            | operators::NOT_EQUALS
            | operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS => {
                let smallest = size(0).min(size(1));
                let own = factor(smallest, STRING_TRAVERSAL);
                let ordering = !matches!(name, operators::EQUALS | operators::NOT_EQUALS);
                (if ordering { own.max(1) } else { own }, Shape::sized(1))
            }
            operators::OPT_SELECT => {
                let name = match call.args.get(1).map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::String(name))) => Some(name.inner()),
                    _ => None,
                };
                let field = match (args.first().and_then(|a| a.node), name) {
                    (Some(node), Some(name)) => match &node.kind {
                        Kind::Object(_) => self
                            .field(node, name)
                            .map_or_else(|| self.absent(), |f| self.of_node(f)),
                        Kind::Map(values) => self.of_node(values),
                        _ => self.absent(),
                    },
                    _ => Shape::unknown(),
                };
                (1, field)
            }
            operators::INDEX | operators::OPT_INDEX => {
                let element = match args.first().and_then(|a| a.node).map(|n| &n.kind) {
                    Some(Kind::List { items, .. }) => self.of_node(items),
                    Some(Kind::Map(values)) => self.of_node(values),
                    // a value's own fields, indexed by name: as large as the largest
                    Some(Kind::Object(fields)) if self.raw_names => Shape::sized(
                        fields
                            .values()
                            .map(|f| self.sizes.of(f.cel()))
                            .max()
                            .unwrap_or(0),
                    ),
                    _ => args
                        .first()
                        .and_then(|a| a.element)
                        .map_or_else(Shape::unknown, Shape::sized),
                };
                (1, element)
            }
            operators::ADD => {
                let sum = size(0).saturating_add(size(1));
                let list = args.iter().any(|a| {
                    a.element.is_some()
                        || matches!(a.node.map(|n| &n.kind), Some(Kind::List { .. }))
                });
                let element = match (args.first(), args.get(1)) {
                    (Some(a), Some(b)) => a.union(*b).element,
                    _ => None,
                };
                let own = if list || sum <= 2 {
                    1
                } else {
                    factor(sum, STRING_TRAVERSAL)
                };
                (
                    own,
                    Shape {
                        node: None,
                        size: sum,
                        element,
                    },
                )
            }
            operators::IN => (size(1), Shape::sized(1)),
            // an authorization check has a fixed cost: two fit in one evaluation
            "check" if target.is_some() => (350_000, Shape::unknown()),
            "dyn" => {
                return (
                    1u64.saturating_add(args_cost),
                    args.first().copied().unwrap_or_else(Shape::unknown),
                )
            }
            "matches" => {
                let (text, regex) = match target {
                    Some(t) => (t.size, size(0)),
                    None => (size(0), size(1)),
                };
                let own = factor(text.saturating_add(1), STRING_TRAVERSAL)
                    .saturating_mul(factor(regex, REGEX_LENGTH));
                (own, Shape::sized(1))
            }
            "find" | "findAll" => {
                let own = factor(this.saturating_add(1), STRING_TRAVERSAL)
                    .saturating_mul(factor(size(0), REGEX_LENGTH));
                let shape = if name == "find" {
                    Shape::sized(this)
                } else {
                    Shape {
                        node: None,
                        size: this,
                        element: Some(this),
                    }
                };
                (own, shape)
            }
            "contains" if target.is_some() => (
                factor(this, STRING_TRAVERSAL).saturating_mul(factor(size(0), STRING_TRAVERSAL)),
                Shape::sized(1),
            ),
            "startsWith" | "endsWith" => (factor(size(0), STRING_TRAVERSAL), Shape::sized(1)),
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                (factor(this, STRING_TRAVERSAL), Shape::sized(this))
            }
            "replace" => (factor(this, 2.0 * STRING_TRAVERSAL), Shape::sized(this)),
            "split" => (
                factor(this, 2.0 * STRING_TRAVERSAL),
                Shape {
                    node: None,
                    size: this,
                    element: Some(this),
                },
            ),
            "join" => {
                let element = target.map_or(u64::MAX, |t| self.element(t).size);
                let total = this.saturating_mul(element);
                (factor(total, STRING_TRAVERSAL), Shape::sized(total))
            }
            "format" if target.is_some() => (factor(this, STRING_TRAVERSAL), Shape::unknown()),
            "isSorted" | "sum" | "min" | "max" | "indexOf" | "lastIndexOf"
                if matches!(
                    target.and_then(|t| t.node).map(|n| &n.kind),
                    Some(Kind::List { .. })
                ) || target.is_some_and(|t| t.element.is_some()) =>
            {
                let list = target.unwrap_or_else(Shape::unknown);
                let element = self.element(list);
                let each = 1u64.saturating_add(factor(element.size, STRING_TRAVERSAL));
                (
                    list.size.saturating_mul(each),
                    if matches!(name, "indexOf" | "lastIndexOf" | "isSorted") {
                        Shape::sized(1)
                    } else {
                        element
                    },
                )
            }
            "url" | "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver"
            | "isSemver" => (
                factor(size(0), STRING_TRAVERSAL),
                Shape::sized(ADDRESS_SIZE),
            ),
            "ip" if target.is_none() => (
                factor(size(0), STRING_TRAVERSAL),
                Shape::sized(ADDRESS_SIZE),
            ),
            "ip.isCanonical" => (factor(size(0), 2.0 * STRING_TRAVERSAL), Shape::sized(1)),
            "containsIP" | "containsCIDR" => {
                let mut own = factor(2 * ADDRESS_SIZE, STRING_TRAVERSAL);
                if name == "containsCIDR" {
                    own += factor(ADDRESS_SIZE, STRING_TRAVERSAL) + 1;
                }
                let other = args.first().map_or(0, |a| {
                    if a.size == ADDRESS_SIZE {
                        0
                    } else {
                        factor(a.size, STRING_TRAVERSAL)
                    }
                });
                (own.saturating_add(other), Shape::sized(1))
            }
            "validate" => {
                let own = factor(
                    factor(size(0), STRING_TRAVERSAL),
                    NAMED_FORMAT_REGEX * REGEX_LENGTH,
                );
                (own, Shape::unknown())
            }
            "size" | "int" | "uint" | "double" | "bool" | "duration" | "timestamp" | "type" => {
                (1, Shape::sized(1))
            }
            // the libraries' accessors of numbers and truths
            "sign"
            | "asInteger"
            | "isInteger"
            | "asApproximateFloat"
            | "isGreaterThan"
            | "isLessThan"
            | "compareTo"
            | "family"
            | "prefixLength"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast"
            | "major"
            | "minor"
            | "patch"
            | "allowed"
            | "errored"
                if target.is_some() =>
            {
                (1, Shape::sized(1))
            }
            "add" | "sub" if target.is_some() => (1, Shape::sized(ADDRESS_SIZE)),
            // a number's text is at most 20 bytes; a string's is itself
            "string" => (
                1,
                args.first().map_or_else(Shape::unknown, |a| {
                    Shape::sized(if a.size <= 1 { 20 } else { a.size })
                }),
            ),
            // optionals carry the shape of their value
            "value" | "orValue" | "or" => (1, target.unwrap_or_else(Shape::unknown)),
            "optional.of" | "optional.ofNonZeroValue" => {
                (1, args.first().copied().unwrap_or_else(Shape::unknown))
            }
            "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" => {
                (1, Shape::sized(this))
            }
            _ => (1, Shape::unknown()),
        };
        (own.saturating_add(args_cost), shape)
    }

    /// What selecting a field a node does not have gives. A schema may leave fields out
    /// (unknown); a value typed by itself (policies) has none: the selection fails.
    fn absent(&self) -> Shape<'n> {
        if self.raw_names {
            // a node of its own, so that selecting below it is absent too
            self.of_node(&ABSENT)
        } else {
            Shape::unknown()
        }
    }

    /// The field `name` of an object node, by its escaped or its raw name.
    fn field(&self, node: &'n Node, name: &str) -> Option<&'n Node> {
        if self.raw_names {
            node.raw_field(name)
        } else {
            node.cel_field(name)
        }
    }

    /// `variables.x` of a policy: what computing `x` costs, and its value's shape.
    fn variable(&mut self, select: &cel::common::ast::SelectExpr) -> Option<Estimate<'n>> {
        let Expr::Ident(root) = &select.operand.expr else {
            return None;
        };
        if root != "variables" || select.test || self.locals.iter().any(|(n, _)| n == root) {
            return None;
        }
        let (_, (cost, shape)) = self.variables.iter().find(|(n, _)| *n == select.field)?;
        Some((cost.saturating_add(2), *shape))
    }

    fn is_namespace(&self, name: &str) -> bool {
        !self.locals.iter().any(|(n, _)| n == name)
            && matches!(
                name,
                "format" | "ip" | "optional" | "sets" | "strings" | "math" | "lists"
            )
    }
}

fn literal_size(literal: &LiteralValue) -> u64 {
    match literal {
        LiteralValue::String(s) => s.inner().chars().count() as u64,
        LiteralValue::Bytes(b) => b.inner().len() as u64,
        _ => 1,
    }
}

/// Upstream's wording of a cost over its limit.
pub(super) fn over_budget(what: &str, cost: u64, limit: u64) -> String {
    let exceed = cost as f64 / limit as f64;
    let factor = if exceed > 100.0 {
        "more than 100x".to_string()
    } else if exceed < 1.5 {
        format!("{exceed:.6}x")
    } else {
        format!("{exceed:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// The most times the rules of a node with cardinality `cardinality` (`None`: unbounded)
/// can run: unbounded, as many values of its smallest size as fit in a request.
pub(super) fn runs(cardinality: Option<u64>, node: &Node) -> u64 {
    cardinality.unwrap_or(MAX_REQUEST_BYTES / (node.bounds.min_size + 1))
}
