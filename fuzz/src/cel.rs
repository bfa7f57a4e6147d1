//! CEL: an expression compiled as admission policies, webhook matchConditions and selectors
//! compile it, held to the per-call cost limit as they hold it, and evaluated over a request's
//! object; with first byte `r`, the rest is a CRD validation rule (`x-kubernetes-validations`)
//! compiled into a schema and run over a custom resource, old and new.

use std::sync::LazyLock;

use apiextensions::cel::{Expression, Rules, ValueShapes, PER_CALL_LIMIT};
use serde_json::{json, Value};

static OBJECT: LazyLock<Value> = LazyLock::new(|| crate::patch::default_object());

pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let source = String::from_utf8_lossy(rest);
    if mode == b'r' {
        return rule(&source);
    }
    let Ok(expression) = Expression::compile(&source) else {
        return;
    };
    let object: &Value = &OBJECT;
    let old = json!(null);
    let shapes = ValueShapes::of(&[("object", object), ("oldObject", &old)]);
    if expression.cost(&[&shapes], &[]) > PER_CALL_LIMIT {
        return;
    }
    let _ = expression.evaluate_json(&[("object", object), ("oldObject", &old)]);
}

fn rule(source: &str) {
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": source}],
                "properties": {
                    "replicas": {"type": "integer"},
                    "name": {"type": "string", "maxLength": 63},
                    "tags": {"type": "array", "maxItems": 10,
                        "items": {"type": "string", "maxLength": 20}},
                    "limits": {"type": "object", "maxProperties": 5,
                        "additionalProperties": {"type": "integer"}}
                }
            }
        }
    });
    // A CRD's rules are checked (cost included) when it is written; only then do they run.
    if !Rules::check(&schema, "openAPIV3Schema", true).is_empty() {
        return;
    }
    let Ok(rules) = Rules::compile(&schema, "openAPIV3Schema") else {
        return;
    };
    let new = json!({"spec": {"replicas": 3, "name": "web", "tags": ["a", "b"],
        "limits": {"cpu": 2}}});
    let old = json!({"spec": {"replicas": 1, "name": "web", "tags": [], "limits": {}}});
    let _ = rules.validate(&new, None);
    let _ = rules.validate(&new, Some(&old));
}
