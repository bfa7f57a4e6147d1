//! One binding's policy applied to a request (upstream's validating.Validator and its
//! dispatcher): parameters found through the binding's `paramRef`, then per parameter the
//! matchConditions, variables, validations and audit annotations, and the binding's
//! validationActions on each violation.

use std::collections::HashMap;
use std::sync::Arc;

use apiextensions::cel::{
    Authorizer, Bindings, Expression, RequestResource, ValueShapes, PER_CALL_LIMIT, RUNTIME_BUDGET,
};
use registry::admission::Attributes;
use registry::error::{Cause, Details, Result};
use registry::object::Object;
use registry::options::ListOptions;
use registry::selector::labels::LabelSelector;
use registry::{Registry, RegistryError};
use serde_json::{json, Value};

use crate::webhooks::review::admission_request;

/// What every expression of a request sees.
pub struct Context {
    object: Value,
    old_object: Value,
    request: Value,
    namespace_object: Value,
    /// `authorizer` (as the requesting user) and `authorizer.requestResource`; None when the
    /// server has no authorizer yet.
    authorizer: Option<(Authorizer, RequestResource)>,
    /// The sizes of the values above, which expressions are charged by.
    shapes: ValueShapes,
}

impl Context {
    /// What the expressions see of a request, its objects as `attrs` and `obj` give them (in
    /// the version the policy's rules took it in through); `requested` is what the client
    /// asked for (`request.requestKind`).
    pub fn new(
        registry: &Registry,
        attrs: &Attributes<'_>,
        obj: Option<&Object>,
        namespace: Option<Value>,
        requested: &registry::catalogue::ResourceInfo,
    ) -> Self {
        let uid = uuid::Uuid::new_v4().to_string();
        let name = if attrs.name.is_empty() {
            obj.map(registry::object::name).unwrap_or_default()
        } else {
            attrs.name
        };
        let mut request = admission_request(&uid, attrs, obj);
        crate::webhooks::review::set_requested(&mut request, requested);
        Self::of(
            obj.cloned().unwrap_or(Value::Null),
            attrs.old.cloned().unwrap_or(Value::Null),
            request,
            namespace.unwrap_or(Value::Null),
            authorizer(registry, attrs, name),
        )
    }

    fn of(
        object: Value,
        old_object: Value,
        request: Value,
        namespace_object: Value,
        authorizer: Option<(Authorizer, RequestResource)>,
    ) -> Self {
        let shapes = ValueShapes::of(&[
            ("object", &object),
            ("oldObject", &old_object),
            ("request", &request),
            ("namespaceObject", &namespace_object),
        ]);
        Self {
            object,
            old_object,
            request,
            namespace_object,
            authorizer,
            shapes,
        }
    }
}

/// Why an expression gave no value: it failed, or the evaluation's budget could not pay for
/// it.
enum Failure {
    Error(String),
    OutOfBudget,
}

/// upstream's words for an evaluation whose cost budget ran out.
const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// Runs a policy's expressions for one parameter, charging each its cost.
struct Meter<'a, 'j> {
    programs: &'a Programs,
    bindings: &'a Bindings<'j>,
    shapes: [&'a ValueShapes; 2],
    variables: Vec<(&'a str, &'a Expression)>,
}

impl Meter<'_, '_> {
    /// The value of `source`, charged to `budget` (upstream's per-call limit and budget).
    fn run(&self, source: &str, budget: &mut u64) -> std::result::Result<Value, Failure> {
        let compiled = self.programs.compiled(source).map_err(Failure::Error)?;
        let cost = compiled.cost(&self.shapes, &self.variables);
        // an evaluation over the per-call limit is cut off just past it
        let charged = cost.min(PER_CALL_LIMIT + 1);
        if charged > *budget {
            *budget = 0;
            return Err(Failure::OutOfBudget);
        }
        *budget -= charged;
        if cost > PER_CALL_LIMIT {
            return Err(Failure::Error(
                "operation cancelled: actual cost limit exceeded".to_string(),
            ));
        }
        compiled
            .evaluate_json_in(self.bindings)
            .map_err(Failure::Error)
    }
}

/// The authorizer library's binding for a request: checks made as the requesting user (the
/// loopback user for in-process writers), and the request's own resource.
pub fn authorizer(
    registry: &Registry,
    attrs: &Attributes<'_>,
    name: &str,
) -> Option<(Authorizer, RequestResource)> {
    let judge = registry.authorizer()?;
    let user = attrs
        .user
        .cloned()
        .unwrap_or_else(|| Arc::new(registry::auth::UserInfo::loopback()));
    let info = attrs.info;
    let resource = RequestResource {
        group: info.group.clone(),
        version: info.version.clone(),
        resource: info.plural.clone(),
        subresource: attrs.subresource.to_string(),
        namespace: attrs.namespace.unwrap_or_default().to_string(),
        name: name.to_string(),
    };
    Some((Authorizer::new(judge, user), resource))
}

/// A violation: its message and the reason (and code) it refuses with.
struct Violation {
    message: String,
    reason: &'static str,
    /// Which validation failed (the audit annotation's `expressionIndex`).
    index: usize,
}

fn code_of(reason: &str) -> u16 {
    match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

fn names<'a>(policy: &'a Value, binding: &'a Value) -> (&'a str, &'a str) {
    (
        registry::object::name(policy),
        registry::object::name(binding),
    )
}

/// upstream's refusal: NewForbidden's message with the violation's reason and code, and the
/// message again as the one cause.
fn deny(
    attrs: &Attributes<'_>,
    obj: Option<&Object>,
    message: String,
    reason: &'static str,
) -> RegistryError {
    let name = if attrs.name.is_empty() {
        obj.map(registry::object::name).unwrap_or_default()
    } else {
        attrs.name
    };
    let resource = attrs.info.qualified_resource();
    RegistryError::Rejected {
        code: code_of(reason),
        reason,
        message: format!("{resource} \"{name}\" is forbidden: {message}"),
        details: Some(Box::new(Details {
            name: Some(name.to_string()),
            group: Some(resource.group.clone()).filter(|g| !g.is_empty()),
            kind: Some(resource.name.clone()),
            causes: vec![Cause::new("", "", message)],
            ..Default::default()
        })),
    }
}

/// The parameter objects of a binding; None when the policy takes none.
async fn params(
    registry: &Registry,
    policy: &Value,
    binding: &Value,
    attrs: &Attributes<'_>,
) -> std::result::Result<Option<Vec<Value>>, String> {
    let kind = &policy["spec"]["paramKind"];
    if !kind.is_object() {
        return Ok(None);
    }
    let api_version = kind["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind_name = kind["kind"].as_str().unwrap_or_default();
    let info = registry
        .catalogue()
        .by_kind(group, kind_name)
        .ok_or_else(|| format!("failed to find resource referenced by paramKind: '{api_version}, Kind={kind_name}'"))?;
    let store = registry
        .store(group, version, &info.plural)
        .or_else(|| registry.store(group, &info.version, &info.plural))
        .ok_or_else(|| format!("paramKind {api_version} {kind_name} is not served"))?;
    let reference = &binding["spec"]["paramRef"];
    if !reference.is_object() {
        return Err("the binding has no paramRef, but its policy has a paramKind".into());
    }
    let namespace = if info.namespaced {
        match reference["namespace"].as_str().filter(|n| !n.is_empty()) {
            Some(ns) => Some(ns.to_string()),
            None => match attrs.namespace.filter(|n| !n.is_empty()) {
                Some(ns) => Some(ns.to_string()),
                None => return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into()),
            },
        }
    } else {
        None
    };
    let cached = ListOptions::any();
    if let Some(name) = reference["name"].as_str().filter(|n| !n.is_empty()) {
        return Ok(Some(
            store
                .get(namespace.as_deref(), name, &cached)
                .await
                .ok()
                .into_iter()
                .collect(),
        ));
    }
    let selector = LabelSelector::from_label_selector_json(&reference["selector"])
        .map_err(|e| e.message().to_string())?;
    let list = store
        .list(namespace.as_deref(), &cached)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Some(
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|o| selector.matches_labels(&o["metadata"]["labels"]))
            .cloned()
            .collect(),
    ))
}

/// Applies `policy` as `binding` binds it.
pub async fn apply(
    registry: &Registry,
    programs: &Programs,
    policy: &Value,
    binding: &Value,
    context: &Context,
    attrs: &Attributes<'_>,
    obj: Option<&Object>,
) -> Result<()> {
    let (policy_name, binding_name) = names(policy, binding);
    let fail_closed = policy["spec"]["failurePolicy"] != "Ignore";
    let prefix = format!(
        "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request"
    );
    let params = match params(registry, policy, binding, attrs).await {
        Ok(p) => p,
        Err(e) if fail_closed => {
            return Err(deny(
                attrs,
                obj,
                format!("{prefix}: failed to configure binding: {e}"),
                "Invalid",
            ))
        }
        Err(_) => return Ok(()),
    };
    let list = match params {
        None => vec![Value::Null],
        Some(found) if found.is_empty() => {
            return if binding["spec"]["paramRef"]["parameterNotFoundAction"] == "Allow" {
                Ok(())
            } else {
                Err(deny(
                    attrs,
                    obj,
                    format!("{prefix}: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"),
                    "Invalid",
                ))
            };
        }
        Some(found) => found,
    };
    for param in &list {
        if let Some(violation) = evaluate(programs, policy, context, param, fail_closed) {
            act(policy, binding, attrs, obj, violation)?;
        }
    }
    Ok(())
}

/// The binding's actions on a violation: Deny refuses, Warn warns, Audit annotates.
fn act(
    policy: &Value,
    binding: &Value,
    attrs: &Attributes<'_>,
    obj: Option<&Object>,
    violation: Violation,
) -> Result<()> {
    let (policy_name, binding_name) = names(policy, binding);
    let actions: Vec<&str> = binding["spec"]["validationActions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if actions.contains(&"Warn") {
        registry::warning::add(format!(
            "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {}",
            violation.message
        ));
    }
    if actions.contains(&"Audit") {
        registry::audit::annotate(
            "validation.policy.admission.k8s.io/validation_failure",
            json!([{
                "message": violation.message,
                "policy": policy_name,
                "binding": binding_name,
                "expressionIndex": violation.index,
                "validationActions": actions,
            }])
            .to_string(),
        );
    }
    if actions.contains(&"Deny") {
        return Err(deny(
            attrs,
            obj,
            format!(
                "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request: {}",
                violation.message
            ),
            violation.reason,
        ));
    }
    Ok(())
}

/// Every expression of the policies, compiled once when the policies are loaded rather than
/// on each request; keyed by source text (the same text compiles the same).
#[derive(Default)]
pub struct Programs(HashMap<String, std::result::Result<Arc<Expression>, String>>);

impl Programs {
    pub fn of<'a>(policies: impl Iterator<Item = &'a Value>) -> Self {
        let mut compiled = HashMap::new();
        for policy in policies {
            let spec = &policy["spec"];
            let sources = [
                ("matchConditions", "expression"),
                ("variables", "expression"),
                ("validations", "expression"),
                ("validations", "messageExpression"),
                ("auditAnnotations", "valueExpression"),
            ]
            .into_iter()
            .flat_map(|(list, field)| {
                spec[list]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(move |item| item[field].as_str())
            });
            for source in sources {
                compiled
                    .entry(source.to_string())
                    .or_insert_with(|| Expression::compile(source).map(Arc::new));
            }
        }
        Self(compiled)
    }

    /// The compiled expression of `source` (compiled now if it was not loaded).
    fn compiled(&self, source: &str) -> std::result::Result<Arc<Expression>, String> {
        match self.0.get(source) {
            Some(compiled) => compiled.clone(),
            None => Expression::compile(source).map(Arc::new),
        }
    }
}

fn known_reason(reason: &str) -> &'static str {
    match reason {
        "Unauthorized" => "Unauthorized",
        "Forbidden" => "Forbidden",
        "RequestEntityTooLarge" => "RequestEntityTooLarge",
        _ => "Invalid",
    }
}

/// The first violation of the policy for one parameter, if any.
fn evaluate(
    programs: &Programs,
    policy: &Value,
    context: &Context,
    param: &Value,
    fail_closed: bool,
) -> Option<Violation> {
    let spec = &policy["spec"];
    let declared: Vec<(&str, std::result::Result<Arc<Expression>, String>)> = spec["variables"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            let source = v["expression"].as_str().unwrap_or_default();
            (
                v["name"].as_str().unwrap_or_default(),
                programs.compiled(source),
            )
        })
        .collect();
    let mut bindings = Bindings::new(&[
        ("object", &context.object),
        ("oldObject", &context.old_object),
        ("request", &context.request),
        ("params", param),
        ("namespaceObject", &context.namespace_object),
    ]);
    if let Some((authorizer, resource)) = &context.authorizer {
        bindings.authorizer(authorizer.clone(), Some(resource.clone()));
    }
    // Variables are computed when an expression first reads them, once per parameter.
    bindings.with_variables();
    for (name, compiled) in &declared {
        bindings.variable(name, compiled.as_deref().map_err(String::as_str));
    }
    let param_shapes = ValueShapes::of(&[("params", param)]);
    let meter = Meter {
        programs,
        bindings: &bindings,
        shapes: [&context.shapes, &param_shapes],
        variables: declared
            .iter()
            .filter_map(|(name, compiled)| Some((*name, compiled.as_deref().ok()?)))
            .collect(),
    };
    // A failed expression: a violation under failurePolicy Fail, nothing under Ignore.
    let failed = |expression: &str, failure: Failure| {
        let message = match failure {
            Failure::Error(e) => format!("expression '{expression}' resulted in error: {e}"),
            Failure::OutOfBudget => OUT_OF_BUDGET.to_string(),
        };
        fail_closed.then_some(Violation {
            message,
            reason: "Invalid",
            index: 0,
        })
    };
    let not_bool = |other: Value| Failure::Error(format!("expected a bool, got {other}"));
    // matchConditions, the validations with their messages, and the audit annotations each
    // have a budget of their own, as upstream's.
    let mut budget = RUNTIME_BUDGET;
    for condition in spec["matchConditions"].as_array().into_iter().flatten() {
        let expression = condition["expression"].as_str().unwrap_or_default();
        match meter.run(expression, &mut budget) {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => return None,
            Ok(other) => return failed(expression, not_bool(other)),
            Err(e) => return failed(expression, e),
        }
    }
    let mut budget = RUNTIME_BUDGET;
    for annotation in spec["auditAnnotations"].as_array().into_iter().flatten() {
        let key = annotation["key"].as_str().unwrap_or_default();
        let expression = annotation["valueExpression"].as_str().unwrap_or_default();
        if let Ok(Value::String(value)) = meter.run(expression, &mut budget) {
            registry::audit::annotate(format!("{}/{key}", registry::object::name(policy)), value);
        }
    }
    let mut budget = RUNTIME_BUDGET;
    for (index, validation) in spec["validations"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let expression = validation["expression"].as_str().unwrap_or_default();
        match meter.run(expression, &mut budget) {
            Ok(Value::Bool(true)) => continue,
            Ok(Value::Bool(false)) => {}
            Ok(other) => {
                return failed(expression, not_bool(other)).map(|v| Violation { index, ..v })
            }
            Err(e) => return failed(expression, e).map(|v| Violation { index, ..v }),
        }
        // messageExpression wins over message; a runtime error, or a result that is blank
        // or spans lines, counts as unset (upstream's Validation.messageExpression). Out of
        // budget, the validation fails as upstream's does ("failed messageExpression: ...").
        let mut from_expression = None;
        if let Some(m) = validation["messageExpression"].as_str() {
            match meter.run(m, &mut budget) {
                Ok(Value::String(s)) if !s.trim().is_empty() && !s.contains('\n') => {
                    from_expression = Some(s.trim().to_string())
                }
                Err(Failure::OutOfBudget) => {
                    return fail_closed.then(|| Violation {
                        message: format!("failed messageExpression: {OUT_OF_BUDGET}"),
                        reason: "Invalid",
                        index,
                    });
                }
                _ => {}
            }
        }
        let message = from_expression
            .or_else(|| {
                validation["message"]
                    .as_str()
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| format!("failed expression: {}", expression.trim()));
        return Some(Violation {
            message,
            reason: known_reason(validation["reason"].as_str().unwrap_or_default()),
            index,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(object: Value) -> Context {
        Context::of(
            object,
            Value::Null,
            json!({"operation": "CREATE"}),
            Value::Null,
            None,
        )
    }

    #[test]
    fn validations_variables_and_messages() {
        let policy = json!({"metadata": {"name": "p"}, "spec": {
        "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
        "validations": [
            {"expression": "variables.replicas <= params.max", "messageExpression": "'too many: ' + string(variables.replicas)"},
            {"expression": "object.metadata.name != 'x'"}
        ]}});
        let ctx = context(json!({"metadata": {"name": "web"}, "spec": {"replicas": 7}}));
        // Compiled ahead (as loaded) and compiled on the spot: the same answers.
        let programs = Programs::of([&policy].into_iter());
        assert_eq!(programs.0.len(), 4);
        let v = evaluate(&programs, &policy, &ctx, &json!({"max": 5}), true).expect("a violation");
        assert_eq!(v.message, "too many: 7");
        assert_eq!(v.reason, "Invalid");
        assert!(evaluate(&programs, &policy, &ctx, &json!({"max": 10}), true).is_none());
        let named = context(json!({"metadata": {"name": "x"}, "spec": {"replicas": 1}}));
        let v = evaluate(
            &Programs::default(),
            &policy,
            &named,
            &json!({"max": 10}),
            true,
        )
        .expect("a violation");
        assert_eq!(v.message, "failed expression: object.metadata.name != 'x'");
    }

    #[test]
    fn match_conditions_and_failure_policy() {
        let policy = json!({"metadata": {"name": "p"}, "spec": {
            "matchConditions": [{"name": "only-web", "expression": "object.metadata.name == 'web'"}],
            "validations": [{"expression": "object.spec.missing.field == 1", "reason": "Forbidden"}]}});
        let other = context(json!({"metadata": {"name": "db"}, "spec": {}}));
        assert!(evaluate(&Programs::default(), &policy, &other, &Value::Null, true).is_none());
        let web = context(json!({"metadata": {"name": "web"}, "spec": {}}));
        let v = evaluate(&Programs::default(), &policy, &web, &Value::Null, true)
            .expect("fails closed");
        assert!(
            v.message
                .starts_with("expression 'object.spec.missing.field == 1' resulted in error"),
            "{}",
            v.message
        );
        assert!(evaluate(&Programs::default(), &policy, &web, &Value::Null, false).is_none());
        assert_eq!(code_of("Forbidden"), 403);
        assert_eq!(code_of("Invalid"), 422);
    }

    #[test]
    fn expressions_are_charged_their_cost() {
        let items: Vec<String> = (0..3000).map(|i| format!("item-{i}")).collect();
        let big = context(json!({"metadata": {"name": "web"}, "spec": {"items": items}}));
        let quadratic = "object.spec.items.all(a, object.spec.items.exists(b, a == b))";
        let policy = json!({"metadata": {"name": "p"}, "spec": {
            "validations": [{"expression": quadratic}]}});
        let v = evaluate(&Programs::default(), &policy, &big, &Value::Null, true)
            .expect("over the per-call limit");
        assert_eq!(
            v.message,
            format!("expression '{quadratic}' resulted in error: operation cancelled: actual cost limit exceeded")
        );
        assert!(evaluate(&Programs::default(), &policy, &big, &Value::Null, false).is_none());
        // the same expression on a small object is cheap
        let small = context(json!({"metadata": {"name": "web"}, "spec": {"items": ["a"]}}));
        assert!(evaluate(&Programs::default(), &policy, &small, &Value::Null, true).is_none());
        // each evaluation may spend 10M: fifteen expressions of two checks each do not fit
        let two_checks = "true || authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed()";
        let validations: Vec<Value> = (0..15).map(|_| json!({"expression": two_checks})).collect();
        let policy = json!({"metadata": {"name": "p"}, "spec": {"validations": validations}});
        let v = evaluate(&Programs::default(), &policy, &small, &Value::Null, true)
            .expect("out of budget");
        assert_eq!(
            v.message,
            "validation failed due to running out of cost budget, no further validation rules will be run"
        );
        assert_eq!(v.index, 14);
        // a variable read is charged what computing it costs
        let policy = json!({"metadata": {"name": "p"}, "spec": {
            "variables": [{"name": "pairs", "expression": "object.spec.items.map(a, object.spec.items.filter(b, b == a))"}],
            "validations": [{"expression": "size(variables.pairs) > 0"}]}});
        let v = evaluate(&Programs::default(), &policy, &big, &Value::Null, true)
            .expect("the variable is too costly");
        assert!(
            v.message
                .ends_with("operation cancelled: actual cost limit exceeded"),
            "{}",
            v.message
        );
    }
}
