//! The cost model: estimates agree with upstream's figures for the same schemas and rules
//! (apiextensions-apiserver's cost estimation tests), the limits refuse CRDs when written,
//! and evaluations are charged to the budget.

use serde_json::{json, Value as Json};

use super::*;

/// The estimated cost of the one rule at the root of `schema`.
fn cost(schema: Json) -> u64 {
    let rules = compile(&schema);
    let root = rules.root.as_ref().expect("has rules");
    root.rules[0].cost
}

fn with_rule(mut schema: Json, rule: &str) -> Json {
    schema["x-kubernetes-validations"] = json!([{"rule": rule}]);
    schema
}

fn array(items: Json, max_items: Option<u64>) -> Json {
    let mut schema = json!({"type": "array", "items": items});
    if let Some(n) = max_items {
        schema["maxItems"] = json!(n);
    }
    schema
}

#[test]
fn estimates_follow_upstreams_figures() {
    let number = || json!({"type": "number"});
    let string = |max: Option<u64>| match max {
        Some(n) => json!({"type": "string", "maxLength": n}),
        None => json!({"type": "string"}),
    };
    for (schema, rule, expected) in [
        (array(number(), None), "self.all(x, true)", 4_718_591),
        (array(number(), Some(10)), "self.all(x, true)", 32),
        (array(string(None), None), "self.all(x, true)", 3_145_727),
        (
            array(json!({"type": "boolean"}), None),
            "self.all(x, true)",
            1_887_437,
        ),
        (
            array(json!({"type": "string", "format": "date"}), None),
            "self.all(x, true)",
            725_936,
        ),
        (
            array(number(), Some(10)),
            "self.all(x, self.all(y, true))",
            352,
        ),
        (
            array(number(), Some(10)),
            "self.all(x, self.all(y, self.all(z, true)))",
            3_552,
        ),
        (array(number(), None), "self[1] == 0.0", 2),
        (array(string(None), Some(8)), "self[1] == self[1]", 314_577),
        (string(None), "self.contains('test')", 314_574),
        (string(Some(10)), "self.contains('test')", 5),
        (string(None), "self.startsWith('test')", 2),
        (
            string(None),
            r#"size(self + "hello") > size("hello")"#,
            314_578,
        ),
        (
            string(Some(4)),
            r#"size(self + "hello") > size("hello")"#,
            7,
        ),
        (string(None), r#"self.matches("x")"#, 314_574),
        (string(Some(50)), r#"self.matches("x")"#, 22),
        (
            string(None),
            r#""".matches("(((((((((())))))))))[0-9]")"#,
            7,
        ),
        (string(Some(0)), r#"self == "x""#, 1),
        (
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            "self.all(x, x.contains(self[x]))",
            2_752_507,
        ),
        (
            json!({"type": "object", "additionalProperties": number()}),
            "self.all(x, true)",
            1_348_169,
        ),
    ] {
        let source = schema.to_string();
        assert_eq!(
            cost(with_rule(schema, rule)),
            expected,
            "{rule} on {source}"
        );
    }
}

/// A CRD-like schema whose spec has `names`, a list of strings with `rule`.
fn names_schema(rule: &str, max_items: Option<u64>, max_length: Option<u64>) -> Json {
    let mut items = json!({"type": "string"});
    if let Some(n) = max_length {
        items["maxLength"] = json!(n);
    }
    let mut names = array(items, max_items);
    names["x-kubernetes-validations"] = json!([{"rule": rule}]);
    spec(json!({"names": names}), json!([]))
}

#[test]
fn a_rule_over_the_estimated_cost_limit_is_refused_when_written() {
    let rule = "self.all(x, x.matches('^[a-z]+$'))";
    let causes = Rules::check(&names_schema(rule, None, None), AT, true);
    // as upstream, such a rule also takes the schema's total over its limit
    assert_eq!(causes.len(), 3, "{causes:#?}");
    let cause = causes[0].clone();
    assert_eq!(
        cause.field,
        format!("{AT}.properties[spec].properties[names].x-kubernetes-validations[0].rule")
    );
    assert_eq!(cause.kind, "FieldValueForbidden");
    assert_eq!(
        cause.message,
        "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try \
         simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, \
         maps, and strings are declared)"
    );
    assert!(Rules::check(&names_schema(rule, Some(100), Some(64)), AT, true).is_empty());
    // an update leaving the schema as it was holds it to the total only
    let unchanged = Rules::check(&names_schema(rule, None, None), AT, false);
    assert_eq!(unchanged.len(), 2, "{unchanged:#?}");
    assert!(unchanged
        .iter()
        .all(|c| !c.message.contains("estimated rule cost exceeds")));
    // stored definitions keep their rules: the limits apply to writes
    assert!(Rules::compile(&names_schema(rule, None, None), AT).is_ok());
}

#[test]
fn rules_under_unbounded_lists_count_as_often_as_they_can_run() {
    // cheap on its own, but on each of the items of an unbounded list of objects
    let item = json!({"type": "object", "properties": {"name": {"type": "string",
        "x-kubernetes-validations": [{"rule": "self.contains('x')"}]}}});
    let schema = spec(json!({"items": array(item.clone(), None)}), json!([]));
    let causes = Rules::check(&schema, AT, true);
    assert!(
        causes[0]
            .message
            .contains("estimated rule cost exceeds budget"),
        "{causes:#?}"
    );
    let bounded = spec(json!({"items": array(item, Some(10))}), json!([]));
    assert!(Rules::check(&bounded, AT, true).is_empty());
}

#[test]
fn the_total_of_a_schema_is_limited() {
    // each rule about 9 million, twelve of them
    let mut properties = serde_json::Map::new();
    for i in 0..12 {
        properties.insert(
            format!("f{i}"),
            json!({"type": "string", "maxLength": 2_250_000,
                "x-kubernetes-validations": [{"rule": "self.matches('^([a-z0-9]+-)*[a-z0-9]+[.]example[.]com$')"}]}),
        );
    }
    let causes = Rules::check(&spec(Json::Object(properties), json!([])), AT, true);
    assert_eq!(causes.len(), 5, "{causes:#?}");
    for cause in &causes[..4] {
        assert_eq!(
            cause.message,
            "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
        );
    }
    assert_eq!(causes[4].field, AT);
    assert!(
        causes[4].message.starts_with(
            "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1."
        ),
        "{}",
        causes[4].message
    );
}

#[test]
fn evaluations_are_charged_to_the_budget() {
    let regex = "^([a-z0-9]+-)*[a-z0-9]+[.]example[.]com$";
    let schema = spec(
        json!({"host": {"type": "string",
            "x-kubernetes-validations": [{"rule": format!("self.matches('{regex}')"), "message": "bad host"}]}}),
        json!([]),
    );
    assert!(Rules::check(&schema, AT, true).is_empty());
    let rules = compile(&schema);
    assert!(rules
        .validate(&object(json!({"host": "a.example.com"})), None)
        .is_empty());
    // one evaluation over a megabyte costs more than a call may
    let huge = "a".repeat(1_000_000);
    let cause = one(rules.validate(&object(json!({"host": huge})), None));
    assert_eq!(cause.field, "spec.host");
    assert_eq!(
        cause.message,
        "Invalid value: \"string\": 'operation cancelled: actual cost limit exceeded': no \
         further validation rules will be run due to call cost exceeds limit for rule: bad host"
    );
    // many evaluations under the per-call limit exhaust the validation's budget
    let rules = compile(&spec(
        json!({"hosts": {"type": "array", "items": {"type": "string", "maxLength": 200_000,
            "x-kubernetes-validations": [{"rule": format!("self.matches('{regex}')")}]}}}),
        json!([]),
    ));
    let big = "a".repeat(190_000);
    let hosts: Vec<&str> = std::iter::repeat_n(big.as_str(), 60).collect();
    let causes = rules.validate(&object(json!({"hosts": hosts})), None);
    let last = causes.last().expect("causes");
    assert_eq!(
        last.message,
        "Invalid value: \"string\": validation failed due to running out of cost budget, no further validation rules will be run"
    );
    assert!(causes.len() < 60, "{causes:#?}");
}

#[test]
fn message_expressions_are_charged_too() {
    let message = "self.matches('^([a-z0-9]+-)*[a-z0-9]+[.]example[.]com$') ? 'a host' : 'no host'";
    let rules = compile(&spec(
        json!({"host": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self.size() < 5", "messageExpression": message}]}}),
        json!([]),
    ));
    let cause = one(rules.validate(&object(json!({"host": "a.example.com"})), None));
    assert_eq!(cause.message, "Invalid value: \"string\": a host");
    let huge = "a".repeat(1_000_000);
    let cause = one(rules.validate(&object(json!({"host": huge})), None));
    assert_eq!(cause.field, "spec.host");
    assert_eq!(
        cause.message,
        format!(
            "Invalid value: \"string\": no further validation rules will be run due to call \
             cost exceeds limit for messageExpression: {message:?}"
        )
    );
}
