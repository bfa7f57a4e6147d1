//! CEL expressions over plain JSON variables, in the one environment of the rules: what
//! dynamic resource allocation's device selectors are (`device.driver == "gpu.example.com"`,
//! `device.attributes["gpu.example.com"].model == "a100"`). Values have JSON's own types: no
//! schema types them (a DRA device's attributes are typed by their own tags, which the caller
//! unwraps), and Kubernetes' quantity and semver libraries are not in the environment yet.

use std::sync::OnceLock;

use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, ExecutionError, Program, Value};
use serde_json::Value as Json;

use super::{env, value};

/// A compiled expression.
pub struct Expression {
    program: Program,
}

/// The bound variables, each turned into a CEL value the first time the expression reads it:
/// an admission policy binds the whole object, its old version and the request to every
/// expression, and most expressions read one of them.
struct Variables<'v> {
    values: Vec<(&'v str, &'v Json, Converted<'v>)>,
}

/// A variable's CEL value, once read.
type Converted<'v> = OnceLock<Box<dyn Val + 'v>>;

impl VariableResolver for Variables<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        self.values
            .iter()
            .find(|(name, ..)| *name == variable)
            .map(|(_, json, converted)| {
                CowVal::Borrowed(converted.get_or_init(|| value::any(json)).as_ref())
            })
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
        match self.evaluate(variables)? {
            Value::Bool(b) => Ok(b),
            other => Err(format!("expression returned {other:?}, not a bool")),
        }
    }

    /// Evaluates to a JSON value (a policy's variables, a messageExpression's string).
    pub fn evaluate_json(&self, variables: &[(&str, &Json)]) -> Result<Json, String> {
        self.evaluate(variables).map(|v| to_json(&v))
    }

    fn evaluate(&self, variables: &[(&str, &Json)]) -> Result<Value, String> {
        let vars = Variables {
            values: variables
                .iter()
                .map(|(name, json)| (*name, *json, OnceLock::new()))
                .collect(),
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut context = Context::with_env(env::env().clone());
            context.set_variable_resolver(&vars);
            self.program.execute(&context)
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
