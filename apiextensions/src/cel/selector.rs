//! CEL expressions over plain JSON variables, in the one environment of the rules: what
//! dynamic resource allocation's device selectors are (`device.driver == "gpu.example.com"`,
//! `device.attributes["gpu.example.com"].model == "a100"`). Values have JSON's own types: no
//! schema types them (a DRA device's attributes are typed by their own tags, which the caller
//! unwraps), and Kubernetes' quantity and semver libraries are not in the environment yet.

use std::collections::HashMap;

use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, ExecutionError, Program, Value};
use serde_json::Value as Json;

use super::{env, value};

/// A compiled expression.
pub struct Expression {
    program: Program,
}

struct Variables<'v> {
    values: HashMap<&'v str, Box<dyn Val + 'v>>,
}

impl VariableResolver for Variables<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        self.values
            .get(variable)
            .map(|v| CowVal::Borrowed(v.as_ref()))
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
        let vars = Variables {
            values: variables
                .iter()
                .map(|(name, json)| (*name, value::any(json)))
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
        match result {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("expression returned {other:?}, not a bool")),
            Err(e) => Err(e.to_string()),
        }
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
    }
}
