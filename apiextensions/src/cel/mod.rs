//! CEL validation rules of CustomResourceDefinitions (`x-kubernetes-validations`), as
//! upstream's apiextensions-apiserver evaluates them (pkg/apiserver/schema/cel): compiled once
//! per version's schema, refused when written if they use anything this server's CEL (the
//! cel crate) does not provide, evaluated on every create and update of a custom resource.
//!
//! Rules see `self`, the value of their schema node typed by the schema, and in transition
//! rules `oldSelf`, the old value where one correlates. They have the standard library and
//! macros, the strings extension (`lowerAscii`, `split`, `join`, `format`, ...), optionals,
//! durations and timestamps, the sets library, and Kubernetes' own libraries (quantity, URLs,
//! IPs, CIDRs, semver, format, the lists and regex libraries: see `lib`); the authorizer and
//! image libraries and two-variable comprehensions are refused.

mod budget;
mod check;
mod check_lib;
mod cost;
mod env;
mod lib;
mod policy_check;
mod policy_cost;
mod rules;
mod schema;
mod selector;
mod types;
mod value;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use cel::common::types::CelOptional;
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, ExecutionError, Program, ResolveResult, Value};
use serde_json::Value as Json;

use registry::error::Cause;
use registry::validation::quote;
use rules::Reason;
use schema::{Kind, Node};

pub use lib::authz::{Authorizer, RequestResource};
pub use policy_check::{check_policy_expression, ObjectType};
pub use policy_cost::{ValueShapes, PER_CALL_LIMIT, RUNTIME_BUDGET};
pub use selector::{Bindings, Expression};

/// Every x-kubernetes-validations rule of a version's openAPIV3Schema, compiled.
pub struct Rules {
    /// The root of the schema, `None` when no rule is anywhere in it.
    root: Option<Node>,
}

/// What compiling collects.
struct Build {
    causes: Vec<Cause>,
    /// How many of the causes are problems of the schema rather than of compilation: rules
    /// are not compiled where the schema at or below them has one.
    schema_errors: usize,
}

/// The longest messageExpression result upstream accepts.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

impl Rules {
    /// Compiles every rule in the schema (walking properties, items, additionalProperties).
    /// Problems are returned as causes for the CRD's own validation, with upstream's field
    /// paths under `path` (e.g. "spec.versions[0].schema.openAPIV3Schema").
    pub fn compile(schema: &Json, path: &str) -> Result<Rules, Vec<Cause>> {
        let mut build = Build {
            causes: Vec::new(),
            schema_errors: 0,
        };
        let root = schema::build(schema, path, true, None, &mut build);
        if !build.causes.is_empty() {
            return Err(build.causes);
        }
        Ok(Rules {
            root: root.has_rules.then_some(root),
        })
    }

    /// What is wrong with the rules of a schema being written: what `compile` reports, and
    /// rules over upstream's cost limits (which apply only to writes: rules already stored
    /// keep running). `limit_each_rule` is false for a schema an update leaves as it was:
    /// only the total is limited then.
    pub fn check(schema: &Json, path: &str, limit_each_rule: bool) -> Vec<Cause> {
        let mut build = Build {
            causes: Vec::new(),
            schema_errors: 0,
        };
        let root = schema::build(schema, path, true, None, &mut build);
        let mut causes = build.causes;
        causes.extend(budget::check(&root, path, limit_each_rule));
        causes
    }

    /// True when the schema has no rules: validation then costs nothing.
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// Evaluates the rules against `obj`, the whole custom resource, and on update `old`, the
    /// object it replaces. Returns a cause per failed rule, as upstream: the field is the
    /// node's path (`spec.items[1]`, plus the rule's fieldPath; `<nil>` at the root, upstream's
    /// nil path), the type the rule's reason, the message its evaluated messageExpression, else
    /// its message, else `failed rule: <rule>`. Rules evaluate where the value is not null;
    /// transition rules (oldSelf) where an old value correlates (through objects and maps, and
    /// list-type=map lists by key) or oldSelf is optional. On update, a rule without oldSelf
    /// that fails on a value equal to its old value (or, below uncorrelated list items, whose
    /// nearest correlated ancestor is unchanged) is ratcheted: not reported. Rules that cannot
    /// be evaluated are reported as invalid, `... evaluating rule: <rule>`.
    pub fn validate(&self, obj: &Json, old: Option<&Json>) -> Vec<Cause> {
        let Some(root) = &self.root else {
            return Vec::new();
        };
        let mut walk = Walk {
            causes: Vec::new(),
            path: String::new(),
            budget: cost::VALIDATION_BUDGET,
            stopped: false,
        };
        walk.node(root, obj, old, None);
        walk.causes
    }
}

/// A value and the old value it is compared with, for ratcheting.
type Pair<'v> = (&'v Json, &'v Json);

struct Walk {
    causes: Vec<Cause>,
    /// The path of the node being validated, upstream's field path (empty at the root).
    path: String,
    /// What is left of the validation's cost budget.
    budget: u64,
    /// Set once the budget or a rule's per-call limit is exceeded: no further rule runs.
    stopped: bool,
}

/// A value and the old value it replaces, if any.
type Values<'v> = (&'v Json, Option<&'v Json>);

/// What charging an evaluation came to.
enum Spent {
    Paid,
    /// More than is left of the validation's budget.
    OverBudget,
    /// More than one evaluation may cost.
    OverCall,
}

/// Rules estimated to cost at most this much with the schema's sizes are charged that:
/// measuring the object for them would cost more than it tells.
const CHEAP_RULE: u64 = 100;

impl Walk {
    /// Validates `new` against `node`. `old` is the old value correlated with it, if any;
    /// `ratchet` the nearest correlated pair at or above it.
    fn node<'v>(
        &mut self,
        node: &'v Node,
        new: &'v Json,
        old: Option<&'v Json>,
        ratchet: Option<Pair<'v>>,
    ) {
        // Rules never see null: a rule of the schema around checks for it.
        if self.stopped || !node.has_rules || new.is_null() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        let ratchet = match old {
            Some(old) => Some((new, old)),
            None => ratchet,
        };
        if !node.rules.is_empty() {
            self.rules(node, new, old, ratchet);
        }
        let len = self.path.len();
        match (&node.kind, new) {
            (Kind::Object(fields), Json::Object(map)) => {
                for (name, value) in map {
                    let Some(field) = fields.get(name).filter(|f| f.node.has_rules) else {
                        continue;
                    };
                    if !self.path.is_empty() {
                        self.path.push('.');
                    }
                    self.path.push_str(name);
                    let old = old.and_then(|o| o.get(name));
                    self.node(&field.node, value, old, ratchet);
                    self.path.truncate(len);
                }
            }
            (Kind::Map(values), Json::Object(map)) if values.has_rules => {
                for (key, value) in map {
                    self.path.push('[');
                    self.path.push_str(key);
                    self.path.push(']');
                    let old = old.and_then(|o| o.get(key));
                    self.node(values, value, old, ratchet);
                    self.path.truncate(len);
                }
            }
            (Kind::List { items, map_keys }, Json::Array(list)) if items.has_rules => {
                // Only the items of list-type=map lists correlate, by their keys.
                let olds = match (map_keys, old) {
                    (Some(keys), Some(Json::Array(olds))) => Some(
                        olds.iter()
                            .map(|item| (list_key(keys, item), item))
                            .collect::<HashMap<_, _>>(),
                    ),
                    _ => None,
                };
                for (i, value) in list.iter().enumerate() {
                    use std::fmt::Write;
                    let _ = write!(self.path, "[{i}]");
                    let old = match (&olds, map_keys) {
                        (Some(olds), Some(keys)) => olds.get(&list_key(keys, value)).copied(),
                        _ => None,
                    };
                    self.node(items, value, old, ratchet);
                    self.path.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// Evaluates the rules of `node` on `new`.
    fn rules<'v>(
        &mut self,
        node: &'v Node,
        new: &'v Json,
        old: Option<&'v Json>,
        ratchet: Option<Pair<'v>>,
    ) {
        let this = value::to_val(node, new);
        let mut old_val: Option<Box<dyn Val + 'v>> = None;
        let mut sizes: Option<cost::Observed> = None;
        for rule in &node.rules {
            if self.stopped {
                return;
            }
            if rule.uses_old_self {
                // Transition rules only run where an old value correlates, unless oldSelf
                // is optional.
                if old.is_none() && !rule.optional_old_self {
                    continue;
                }
                if old_val.is_none() {
                    old_val = old.map(|o| value::to_val(node, o));
                }
            }
            if !self.charge(rule, node, (new, old), &mut sizes) {
                return;
            }
            let optional;
            let old_self: Option<&dyn Val> = if rule.optional_old_self {
                optional = match &old_val {
                    Some(v) => CelOptional::of(v.clone_as_boxed()),
                    None => CelOptional::none(),
                };
                Some(&optional)
            } else {
                old_val.as_deref()
            };
            let vars = Vars {
                this: &*this,
                old: old_self,
            };
            match run(&rule.program, &vars) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => {
                    // Ratcheting: a value that did not change keeps passing, unless the rule
                    // is about the change.
                    if !rule.uses_old_self && ratchet.is_some_and(|(n, o)| n == o) {
                        continue;
                    }
                    let plain = Vars {
                        this: &*this,
                        old: old_val.as_deref(),
                    };
                    let field = match &rule.field_path {
                        None => self.field(),
                        Some(below) if self.path.is_empty() => below.clone(),
                        Some(below) => format!("{}.{below}", self.path),
                    };
                    let mut evaluated = None;
                    if let (Some(m), Some(estimate)) = (&rule.message_expression, rule.message_cost)
                    {
                        let why = match self.spend(m, estimate, node, (new, old), &mut sizes) {
                            Spent::Paid => {
                                evaluated = message(m, &plain);
                                None
                            }
                            Spent::OverBudget => Some("messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".to_string()),
                            Spent::OverCall => Some(format!(
                                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {:?}",
                                rule.message_expression_source.as_deref().unwrap_or("")
                            )),
                        };
                        if let Some(why) = why {
                            self.causes
                                .push(Cause::invalid(&field, quote(&node.type_name), &why));
                            return;
                        }
                    }
                    let detail = evaluated
                        .or_else(|| rule.message.clone())
                        .unwrap_or_else(|| format!("failed rule: {}", rule.rule));
                    self.causes
                        .push(failure(rule.reason, field, &node.type_name, detail));
                }
                Ok(other) => {
                    let got = other.type_of();
                    self.invalid(
                        node,
                        format!(
                            "cel expression must evaluate to a bool, got {got} evaluating rule: {}",
                            rule.error_string()
                        ),
                    );
                }
                Err(ExecutionError::NoSuchOverload(overload)) => {
                    let types = overload.argument_types();
                    let call = match (overload.is_member_function(), types.split_first()) {
                        (true, Some((receiver, rest))) => {
                            format!("{receiver}.{}({})", overload.function(), rest.join(", "))
                        }
                        _ => format!("{}({})", overload.function(), types.join(", ")),
                    };
                    self.invalid(
                        node,
                        format!(
                            "'no such overload: {call}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule.error_string()
                        ),
                    );
                }
                Err(error) => {
                    let detail = format!(
                        "{} evaluating rule: {}",
                        describe(&error),
                        rule.error_string()
                    );
                    self.invalid(node, detail);
                }
            }
        }
    }

    /// Charges an evaluation of `rule` to the budget. False (with the cause, and no rule
    /// running after) when the budget cannot pay for it or it costs more than one evaluation
    /// may.
    fn charge(
        &mut self,
        rule: &rules::Rule,
        node: &Node,
        values: Values,
        sizes: &mut Option<cost::Observed>,
    ) -> bool {
        match self.spend(&rule.program, rule.cost, node, values, sizes) {
            Spent::Paid => true,
            Spent::OverBudget => {
                self.invalid(
                    node,
                    "validation failed due to running out of cost budget, no further validation rules will be run".to_string(),
                );
                false
            }
            Spent::OverCall => {
                self.invalid(
                    node,
                    format!(
                        "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule.error_string()
                    ),
                );
                false
            }
        }
    }

    /// Charges an evaluation of `program` (estimated at `estimate` with the schema's
    /// sizes) at its cost with the sizes of the values at hand.
    fn spend(
        &mut self,
        program: &Program,
        estimate: u64,
        node: &Node,
        (new, old): Values,
        sizes: &mut Option<cost::Observed>,
    ) -> Spent {
        let cost = if estimate <= CHEAP_RULE {
            estimate
        } else {
            let observed = sizes.get_or_insert_with(|| {
                let mut observed = cost::Observed::default();
                observed.observe(node, new);
                if let Some(old) = old {
                    observed.observe(node, old);
                }
                observed
            });
            cost::estimate(program, node, observed)
        };
        // an evaluation over the per-call limit is cut off just past it
        let charged = cost.min(cost::PER_CALL_LIMIT + 1);
        if charged > self.budget {
            self.stopped = true;
            return Spent::OverBudget;
        }
        self.budget -= charged;
        if cost > cost::PER_CALL_LIMIT {
            self.stopped = true;
            return Spent::OverCall;
        }
        Spent::Paid
    }

    /// The field of the node: upstream's nil path prints as `<nil>` at the root.
    fn field(&self) -> String {
        if self.path.is_empty() {
            "<nil>".to_string()
        } else {
            self.path.clone()
        }
    }

    fn invalid(&mut self, node: &Node, detail: String) {
        let field = self.field();
        self.causes
            .push(Cause::invalid(&field, quote(&node.type_name), &detail));
    }
}

/// The cause of a failed rule, by its reason.
fn failure(reason: Reason, field: String, type_name: &str, detail: String) -> Cause {
    let (kind, message) = match reason {
        Reason::Invalid => (
            "FieldValueInvalid",
            format!("Invalid value: {}: {detail}", quote(type_name)),
        ),
        Reason::Forbidden => ("FieldValueForbidden", format!("Forbidden: {detail}")),
        Reason::Required => ("FieldValueRequired", format!("Required value: {detail}")),
        // upstream's field.Duplicate takes the value, not the detail
        Reason::Duplicate => (
            "FieldValueDuplicate",
            format!("Duplicate value: {}", quote(type_name)),
        ),
    };
    Cause {
        kind: kind.to_string(),
        message,
        field,
    }
}

/// The evaluated messageExpression, `None` when it fails or gives no usable message (the
/// rule's message or the default is used then, as upstream).
fn message(program: &Program, vars: &Vars) -> Option<String> {
    match run(program, vars) {
        Ok(Value::String(s)) => {
            let trimmed = s.trim();
            (!trimmed.is_empty()
                && trimmed.len() <= MAX_MESSAGE_BYTES
                && !trimmed.contains(['\n', '\r']))
            .then(|| trimmed.to_string())
        }
        _ => None,
    }
}

/// An evaluation error, worded as cel-go words it where the two differ.
fn describe(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        ExecutionError::Overflow(..) => "integer overflow".to_string(),
        ExecutionError::InternalError(message) => message.clone(),
        // the libraries' own errors are worded as upstream's
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::IndexOutOfBounds(index) => match Value::clone(index) {
            Value::Int(i) => format!("index out of bounds: {i}"),
            Value::UInt(i) => format!("index out of bounds: {i}"),
            other => format!("index out of bounds: {other:?}"),
        },
        other => lower_first(&other.to_string()),
    }
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The key of a list-type=map item: its key fields' values.
fn list_key(keys: &[String], item: &Json) -> String {
    let mut key = String::new();
    for name in keys {
        match item.get(name) {
            Some(value) => key.push_str(&value.to_string()),
            None => key.push_str("null"),
        }
        key.push('\u{0}');
    }
    key
}

/// `self` and `oldSelf`.
struct Vars<'a, 'v> {
    this: &'a (dyn Val + 'v),
    old: Option<&'a (dyn Val + 'v)>,
}

impl VariableResolver for Vars<'_, '_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        match variable {
            "self" => Some(CowVal::Borrowed(self.this)),
            "oldSelf" => self.old.map(CowVal::Borrowed),
            _ => None,
        }
    }
}

/// Runs a program. A panic of the interpreter is an evaluation error, not a crashed request.
fn run(program: &Program, vars: &Vars) -> ResolveResult {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut context = Context::with_env(env::env().clone());
        context.set_variable_resolver(vars);
        program.execute(&context)
    }))
    .unwrap_or_else(|_| {
        Err(ExecutionError::InternalError(
            "the rule could not be evaluated".to_string(),
        ))
    })
}
