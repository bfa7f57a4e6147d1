//! CEL expressions over plain JSON variables, in the one environment of the rules: what
//! dynamic resource allocation's device selectors are (`device.driver == "gpu.example.com"`,
//! `device.attributes["gpu.example.com"].model == "a100"`). Values have JSON's own types: no
//! schema types them (a DRA device's attributes are typed by their own tags, which the caller
//! unwraps). Admission policies bind the request's values, the authorizer and their
//! composited variables through `Bindings`.

use std::sync::{LazyLock, OnceLock};

use cel::common::types::{CelString, Type, MAP_TYPE};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, ExecutionError, Program, Value};
use serde_json::Value as Json;

use super::lib::authz::{Authorizer, RequestResource};
use super::{env, value};

/// A compiled expression.
pub struct Expression {
    pub(super) program: Program,
}

/// What an expression's names are bound to: JSON values, each turned into a CEL value the
/// first time an expression reads it (an admission policy binds the whole object, its old
/// version and the request to every expression, and most expressions read one of them); CEL
/// values given as they are (the authorizer); and a policy's composited `variables`, each
/// evaluated the first time an expression reads it and then kept for every later one, as
/// upstream's lazily evaluated variables are (once per request, whatever reads them).
pub struct Bindings<'j> {
    json: Vec<(&'j str, &'j Json, Converted<'j>)>,
    values: Vec<(&'static str, Box<dyn Val + 'static>)>,
    /// `None`: no `variables` is bound at all.
    variables: Option<Vec<Variable<'j>>>,
}

/// A variable's CEL value, once read.
type Converted<'v> = OnceLock<Box<dyn Val + 'v>>;

/// One composited variable: its expression (or why it did not compile) and its value, once
/// evaluated (or why it could not be).
struct Variable<'j> {
    name: &'j str,
    expression: Result<&'j Expression, &'j str>,
    value: OnceLock<Result<Box<dyn Val + 'static>, String>>,
}

impl<'j> Bindings<'j> {
    /// `json`'s names bound to its values.
    pub fn new(json: &[(&'j str, &'j Json)]) -> Self {
        Self {
            json: json
                .iter()
                .map(|(name, value)| (*name, *value, OnceLock::new()))
                .collect(),
            values: Vec::new(),
            variables: None,
        }
    }

    /// Binds `authorizer` and, for a request of a resource, `authorizer.requestResource`.
    pub fn authorizer(&mut self, authorizer: Authorizer, request: Option<RequestResource>) {
        if let Some(resource) = request {
            let check = authorizer.request_resource(resource);
            self.values
                .push(("authorizer.requestResource", Box::new(check)));
        }
        self.values.push(("authorizer", Box::new(authorizer)));
    }

    /// Binds `variables` (empty until variables are added).
    pub fn with_variables(&mut self) {
        self.variables.get_or_insert_with(Vec::new);
    }

    /// Adds the variable `name`, computed by `expression` (Err: why it did not compile) from
    /// the other bindings and the variables added before it.
    pub fn variable(&mut self, name: &'j str, expression: Result<&'j Expression, &'j str>) {
        self.variables.get_or_insert_with(Vec::new).push(Variable {
            name,
            expression,
            value: OnceLock::new(),
        });
    }

    /// The value of variable `index`, evaluated on first use.
    fn variable_value(&self, index: usize) -> Result<&(dyn Val + 'static), String> {
        let Some(variable) = self.variables.as_ref().and_then(|v| v.get(index)) else {
            return Err("no such variable".to_string());
        };
        let value = variable.value.get_or_init(|| {
            let name = variable.name;
            let expression = variable
                .expression
                .map_err(|e| format!("composited variable {name:?} fails to compile: {e}"))?;
            let scope = Scope {
                bindings: self,
                visible: index,
            };
            expression.with_result(&scope, |v| {
                value::to_static(v).ok_or_else(|| {
                    format!(
                        "composited variable {name:?}: a value of type {} cannot be kept",
                        v.get_type().name()
                    )
                })
            })?
        });
        value.as_deref().map_err(Clone::clone)
    }
}

/// The names an expression sees: the bindings, and the first `visible` variables (a
/// variable sees only those before it, so none can read itself).
struct Scope<'a, 'j> {
    bindings: &'a Bindings<'j>,
    visible: usize,
}

impl VariableResolver for Scope<'_, '_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        let bindings = self.bindings;
        if let Some((_, json, converted)) = bindings.json.iter().find(|(n, ..)| *n == variable) {
            return Some(CowVal::Borrowed(
                converted.get_or_init(|| value::any(json)).as_ref(),
            ));
        }
        if let Some((_, value)) = bindings.values.iter().find(|(n, _)| *n == variable) {
            return Some(CowVal::Borrowed(value.as_ref()));
        }
        if variable == "variables" && bindings.variables.is_some() {
            return Some(CowVal::owned(Lazy {
                bindings,
                visible: self.visible,
            }));
        }
        None
    }
}

/// `variables`: a map whose values are computed when read.
#[derive(Clone, Copy)]
struct Lazy<'a, 'j> {
    bindings: &'a Bindings<'j>,
    visible: usize,
}

impl std::fmt::Debug for Lazy<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("variables")
    }
}

static VARIABLES_TYPE: LazyLock<Type> = LazyLock::new(|| MAP_TYPE);

impl Lazy<'_, '_> {
    fn index(&self, name: &str) -> Option<usize> {
        self.bindings.variables.as_ref()?[..self.visible]
            .iter()
            .position(|v| v.name == name)
    }
}

impl Val for Lazy<'_, '_> {
    fn get_type(&self) -> &Type {
        &VARIABLES_TYPE
    }

    fn cel_type() -> &'static Type {
        &VARIABLES_TYPE
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(*self)
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn cel::common::traits::Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn as_container(&self) -> Option<&dyn cel::common::traits::Container> {
        Some(self)
    }
}

impl cel::common::traits::Container for Lazy<'_, '_> {
    fn contains(&self, value: &dyn Val) -> Result<bool, ExecutionError> {
        Ok(value
            .downcast_ref::<CelString>()
            .is_some_and(|name| self.index(name.inner()).is_some()))
    }
}

impl cel::common::traits::Indexer for Lazy<'_, '_> {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let Some(name) = idx.downcast_ref::<CelString>() else {
            return Err(ExecutionError::UnexpectedType {
                got: idx.get_type().name().to_string(),
                want: "string".to_string(),
            });
        };
        let Some(index) = self.index(name.inner()) else {
            return Err(ExecutionError::NoSuchKey(std::sync::Arc::new(
                name.inner().to_string(),
            )));
        };
        match self.bindings.variable_value(index) {
            Ok(value) => Ok(CowVal::Borrowed(value)),
            Err(e) => Err(ExecutionError::InternalError(e)),
        }
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

impl Expression {
    /// Compiles `source`; Err is the compiler's message.
    pub fn compile(source: &str) -> Result<Self, String> {
        env::env()
            .compile(source)
            .map(|program| Self { program })
            .map_err(|errors| errors.to_string())
    }

    /// Evaluates to a bool with `variables` bound; Err says why it could not (an error of
    /// evaluation, or a result that is not a bool).
    pub fn evaluate_bool(&self, variables: &[(&str, &Json)]) -> Result<bool, String> {
        self.evaluate_bool_in(&Bindings::new(variables))
    }

    /// Evaluates to a bool with `bindings` bound.
    pub fn evaluate_bool_in(&self, bindings: &Bindings) -> Result<bool, String> {
        match self.evaluate_json_in(bindings)? {
            Json::Bool(b) => Ok(b),
            other => Err(format!("expression returned {other}, not a bool")),
        }
    }

    /// Evaluates to a JSON value (a policy's variables, a messageExpression's string).
    pub fn evaluate_json(&self, variables: &[(&str, &Json)]) -> Result<Json, String> {
        self.evaluate_json_in(&Bindings::new(variables))
    }

    /// Evaluates to a JSON value with `bindings` bound. A value of one of Kubernetes'
    /// libraries has no JSON form: Err.
    pub fn evaluate_json_in(&self, bindings: &Bindings) -> Result<Json, String> {
        let scope = Scope {
            bindings,
            visible: bindings.variables.as_ref().map_or(0, Vec::len),
        };
        self.with_result(&scope, |v| {
            Value::try_from(v)
                .map(|v| to_json(&v))
                .map_err(|e| super::describe(&e))
        })?
    }

    /// Evaluates in `scope` and hands the result to `f`. A panic of the interpreter is an
    /// evaluation error, not a crashed request.
    fn with_result<T>(&self, scope: &Scope, f: impl FnOnce(&dyn Val) -> T) -> Result<T, String> {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut context = Context::with_env(env::env().clone());
            context.set_variable_resolver(scope);
            Value::resolve_val(self.program.expression(), &context).map(|v| f(v.as_ref()))
        }))
        .unwrap_or_else(|_| {
            Err(ExecutionError::InternalError(
                "the expression could not be evaluated".to_string(),
            ))
        });
        result.map_err(|e| super::describe(&e))
    }
}

/// A CEL value as JSON: lists, maps with their keys as text, numbers, strings, bools, null;
/// bytes in base64, durations and timestamps as their text.
fn to_json(value: &Value) -> Json {
    use base64::Engine;
    match value {
        Value::List(items) => Json::Array(items.iter().map(to_json).collect()),
        Value::Map(map) => Json::Object(
            map.map
                .iter()
                .map(|(k, v)| (key_text(k), to_json(v)))
                .collect(),
        ),
        Value::Int(i) => Json::from(*i),
        Value::UInt(u) => Json::from(*u),
        Value::Float(f) => Json::from(*f),
        Value::String(s) => Json::String(s.to_string()),
        Value::Bytes(b) => {
            Json::String(base64::engine::general_purpose::STANDARD.encode(b.as_slice()))
        }
        Value::Bool(b) => Json::Bool(*b),
        Value::Duration(d) => Json::String(format!("{}s", d.num_milliseconds() as f64 / 1000.0)),
        Value::Timestamp(t) => Json::String(t.to_rfc3339()),
        _ => Json::Null,
    }
}

fn key_text(key: &cel::objects::Key) -> String {
    match key {
        cel::objects::Key::Int(i) => i.to_string(),
        cel::objects::Key::Uint(u) => u.to_string(),
        cel::objects::Key::Bool(b) => b.to_string(),
        cel::objects::Key::String(s) => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn device_selectors_evaluate_over_json() {
        let device = json!({"driver": "gpu.example.com",
            "attributes": {"gpu.example.com": {"model": "a100", "index": 3}}});
        let yes = Expression::compile(
            r#"device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].index > 2"#,
        )
        .expect("compiles");
        assert_eq!(yes.evaluate_bool(&[("device", &device)]), Ok(true));
        let no = Expression::compile(r#"device.attributes["gpu.example.com"].model == "h100""#)
            .expect("compiles");
        assert_eq!(no.evaluate_bool(&[("device", &device)]), Ok(false));
        assert!(Expression::compile("device.driver ==").is_err());
        let missing =
            Expression::compile(r#"device.attributes["other"].model == "x""#).expect("compiles");
        assert!(missing.evaluate_bool(&[("device", &device)]).is_err());
        let not_bool = Expression::compile("device.driver").expect("compiles");
        assert!(not_bool.evaluate_bool(&[("device", &device)]).is_err());
        assert_eq!(
            not_bool.evaluate_json(&[("device", &device)]),
            Ok(json!("gpu.example.com"))
        );
        let map = Expression::compile(
            r#"{"n": device.attributes["gpu.example.com"].index + 1, "l": [true]}"#,
        )
        .expect("compiles");
        assert_eq!(
            map.evaluate_json(&[("device", &device)]),
            Ok(json!({"n": 4, "l": [true]}))
        );
    }
}

#[cfg(test)]
mod variable_tests {
    use std::sync::Arc;

    use registry::auth::{Attributes, Rules, UserInfo, Verdict};
    use serde_json::json;

    use super::*;

    fn compile(source: &str) -> Expression {
        Expression::compile(source).unwrap_or_else(|e| panic!("{source}: {e}"))
    }

    #[test]
    fn variables_keep_their_cel_values_and_see_only_earlier_ones() {
        let object = json!({"spec": {"limit": "1500m"}});
        let q = compile("quantity(object.spec.limit)");
        let more = compile("variables.q.add(quantity('500m'))");
        let broken = compile("object.spec.missing.field");
        let ahead = compile("variables.later");
        let later = compile("1");
        let mut bindings = Bindings::new(&[("object", &object)]);
        bindings.variable("q", Ok(&q));
        bindings.variable("more", Ok(&more));
        bindings.variable("broken", Ok(&broken));
        bindings.variable("ahead", Ok(&ahead));
        bindings.variable("bad", Err("syntax error"));
        bindings.variable("later", Ok(&later));
        let check = |source: &str| compile(source).evaluate_bool_in(&bindings);
        assert_eq!(check("variables.q.isLessThan(quantity('2'))"), Ok(true));
        assert_eq!(
            check("variables.more.compareTo(quantity('2')) == 0"),
            Ok(true)
        );
        assert_eq!(
            check("variables['q'].isGreaterThan(quantity('1'))"),
            Ok(true)
        );
        assert_eq!(
            check("'q' in variables && !('nope' in variables)"),
            Ok(true)
        );
        assert_eq!(check("has(variables.q)"), Ok(true));
        // a variable that fails is only an error where it is read
        assert_eq!(check("variables.q.sign() == 1"), Ok(true));
        let read = check("variables.broken == 1").expect_err("fails");
        assert!(read.contains("missing"), "{read}");
        // a variable sees only those declared before it
        assert!(check("variables.ahead == 1").is_err());
        assert_eq!(check("variables.later == 1"), Ok(true));
        let bad = check("variables.bad == 1").expect_err("does not compile");
        assert!(
            bad.contains("\"bad\" fails to compile: syntax error"),
            "{bad}"
        );
        // a library value has no JSON form
        assert!(compile("variables.q").evaluate_json_in(&bindings).is_err());
        // no `variables` is bound without with_variables / variable
        let plain = Bindings::new(&[("object", &object)]);
        assert!(compile("variables.q == 1")
            .evaluate_bool_in(&plain)
            .is_err());
    }

    /// Allows `get` of secrets in `ns` to `jane`, and GET of `/healthz` to anyone.
    struct Judge;

    impl registry::auth::Authorizer for Judge {
        fn authorize(&self, a: &Attributes) -> Verdict {
            let allowed = if a.resource_request {
                a.user.name == "jane"
                    && a.verb == "get"
                    && a.resource == "secrets"
                    && a.namespace == "ns"
                    && a.api_group.is_empty()
            } else {
                a.path == "/healthz" && a.verb == "get"
            };
            if allowed {
                Verdict::allow(format!("allowed {}", a.user.name))
            } else {
                Verdict::no_opinion()
            }
        }

        fn rules_for(&self, _: &UserInfo, _: &str) -> Rules {
            Rules::default()
        }
    }

    #[test]
    fn the_authorizer_asks_as_the_user_or_a_service_account() {
        let jane = Arc::new(UserInfo {
            name: "jane".into(),
            ..Default::default()
        });
        let mut bindings = Bindings::new(&[]);
        let resource = RequestResource {
            resource: "secrets".into(),
            namespace: "ns".into(),
            version: "v1".into(),
            ..Default::default()
        };
        bindings.authorizer(Authorizer::new(Arc::new(Judge), jane), Some(resource));
        let check = |source: &str| compile(source).evaluate_bool_in(&bindings);
        let get = "authorizer.group('').resource('secrets').namespace('ns')";
        assert_eq!(check(&format!("{get}.check('get').allowed()")), Ok(true));
        assert_eq!(check(&format!("{get}.check('list').allowed()")), Ok(false));
        assert_eq!(
            check(&format!(
                "{get}.name('x').subresource('y').check('get').reason() == 'allowed jane'"
            )),
            Ok(true)
        );
        assert_eq!(
            check("authorizer.group('apps').resource('secrets').namespace('ns').check('get').allowed()"),
            Ok(false)
        );
        assert_eq!(
            check("authorizer.requestResource.check('get').allowed()"),
            Ok(true)
        );
        assert_eq!(
            check("authorizer.path('/healthz').check('get').allowed()"),
            Ok(true)
        );
        assert_eq!(
            check("authorizer.serviceAccount('ns', 'sa').group('').resource('secrets').namespace('ns').check('get').allowed()"),
            Ok(false)
        );
        assert_eq!(
            check(&format!(
                "!{get}.check('get').errored() && {get}.check('get').error() == ''"
            )),
            Ok(true)
        );
        assert_eq!(
            check(&format!(
                "{get}.labelSelector('a in (').check('get').errored()"
            )),
            Ok(true)
        );
        assert_eq!(
            check(&format!(
                "{get}.fieldSelector('a=b').labelSelector('x=y').check('get').allowed()"
            )),
            Ok(true)
        );
        // not bound: an undeclared reference
        assert!(compile("authorizer.path('/').check('get').allowed()")
            .evaluate_bool(&[])
            .is_err());
    }
}
