use serde_json::{json, Value as Json};

use super::Rules;
use registry::error::Cause;

const AT: &str = "spec.versions[0].schema.openAPIV3Schema";

/// A resource schema whose spec is `spec`, with `root` rules at the root.
fn resource(spec: Json, root: Json) -> Json {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
        },
        "x-kubernetes-validations": root,
    })
}

/// A schema whose spec has `properties` and the spec-level `rules`.
fn spec(properties: Json, rules: Json) -> Json {
    resource(
        json!({"type": "object", "properties": properties, "x-kubernetes-validations": rules}),
        json!([]),
    )
}

fn compile(schema: &Json) -> Rules {
    match Rules::compile(schema, AT) {
        Ok(rules) => rules,
        Err(causes) => panic!("does not compile: {causes:#?}"),
    }
}

fn refused(schema: &Json) -> Vec<Cause> {
    match Rules::compile(schema, AT) {
        Ok(_) => panic!("compiles"),
        Err(causes) => causes,
    }
}

fn object(spec: Json) -> Json {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "labels": {"a": "b"}},
        "spec": spec,
    })
}

fn one(causes: Vec<Cause>) -> Cause {
    assert_eq!(causes.len(), 1, "{causes:#?}");
    causes.into_iter().next().unwrap()
}

fn replicas_schema(rules: Json) -> Json {
    spec(
        json!({
            "replicas": {"type": "integer"},
            "max": {"type": "integer"},
            "name": {"type": "string"},
        }),
        rules,
    )
}

mod compilation;
mod costs;
mod evaluation;
mod libraries;
