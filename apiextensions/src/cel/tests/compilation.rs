//! Refusing rules when the definition is written: what this server lacks, syntax, types,
//! and the specification of each rule.

use serde_json::json;

use super::*;

fn refusal(rule: &str) -> String {
    let schema = replicas_schema(json!([{ "rule": rule }]));
    let cause = one(refused(&schema));
    assert_eq!(
        cause.field,
        format!("{AT}.properties[spec].x-kubernetes-validations[0].rule")
    );
    assert_eq!(cause.kind, "FieldValueInvalid");
    cause.message
}

#[test]
fn functions_this_server_lacks_are_refused_by_name() {
    for (rule, name) in [
        (
            "authorizer.path('/healthz').check('get').allowed()",
            "'authorizer'",
        ),
        ("{'a': 1}.all(k, v, v > 0)", "'all'"),
        ("[1].transformList(i, v, v + 1) == [2]", "'transformList'"),
        ("isImage(self.name)", "'isImage'"),
    ] {
        let message = refusal(rule);
        assert!(
            message.contains("compilation failed: ERROR: <input>:")
                && message.contains(name)
                && message.contains("is not supported by this server"),
            "{rule}: {message}"
        );
        assert!(
            message.starts_with("Invalid value: apiextensions.ValidationRule{Rule:"),
            "{message}"
        );
    }
}

#[test]
fn unknown_references_are_refused() {
    let message = refusal("self.name.reverse() == 'x'");
    assert!(
        message.contains("undeclared reference to 'reverse'"),
        "{message}"
    );
    let message = refusal("math.greatest(1, 2) == 2");
    assert!(
        message.contains("undeclared reference to 'math.greatest'"),
        "{message}"
    );
    let message = refusal("foo == 1");
    assert!(
        message.contains("undeclared reference to 'foo'"),
        "{message}"
    );
}

#[test]
fn a_syntax_error_is_refused_with_the_rules_path() {
    let message = refusal("self.replicas >");
    assert!(
        message.starts_with(
            "Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas >\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:"
        ),
        "{message}"
    );
}

#[test]
fn undefined_fields_non_bool_rules_and_bad_literals_are_refused() {
    let message = refusal("self.replics > 1");
    assert!(
        message.ends_with(
            "compilation failed: ERROR: <input>:1:5: undefined field 'replics'\n | self.replics > 1\n | ....^"
        ),
        "{message}"
    );
    assert!(refusal("self.replicas + 1").ends_with(": cel expression must evaluate to a bool"));
    assert!(refusal("self.name.matches('[')").contains("invalid regex"));
    assert!(refusal("duration('forever') > duration('1s')").contains("duration"));
    assert!(refusal("self.name.x == 1").contains("does not support field selection"));
}

#[test]
fn the_specification_of_each_rule_is_checked() {
    let schema = replicas_schema(json!([
        {"rule": "  "},
        {"rule": "self.replicas > 0", "reason": "FieldValueOdd"},
        {"rule": "self.replicas > 0", "fieldPath": ".nope"},
        {"rule": "self.replicas > 0", "message": "a\nb"},
        {"rule": "self.replicas > 0", "messageExpression": "  "},
    ]));
    let causes = refused(&schema);
    let at = format!("{AT}.properties[spec].x-kubernetes-validations");
    let summary: Vec<(String, String, String)> = causes
        .into_iter()
        .map(|c| (c.field, c.kind, c.message))
        .collect();
    assert_eq!(
        summary,
        [
            (
                format!("{at}[0].rule"),
                "FieldValueRequired".to_string(),
                "Required value: rule is not specified".to_string()
            ),
            (
                format!("{at}[1].reason"),
                "FieldValueNotSupported".to_string(),
                "Unsupported value: \"FieldValueOdd\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"".to_string()
            ),
            (
                format!("{at}[2].fieldPath"),
                "FieldValueInvalid".to_string(),
                "Invalid value: \".nope\": fieldPath must be a valid path".to_string()
            ),
            (
                format!("{at}[3].message"),
                "FieldValueInvalid".to_string(),
                "Invalid value: \"a\\nb\": message must not contain line breaks".to_string()
            ),
            (
                format!("{at}[4].messageExpression"),
                "FieldValueRequired".to_string(),
                "Required value: messageExpression must be non-empty if specified".to_string()
            ),
        ]
    );
}

#[test]
fn message_expressions_must_compile_to_a_string() {
    let schema = replicas_schema(json!([
        {"rule": "self.replicas > 0", "messageExpression": "'a' +"},
        {"rule": "self.replicas > 0", "messageExpression": "self.replicas"},
    ]));
    let causes = refused(&schema);
    assert_eq!(causes.len(), 2, "{causes:#?}");
    assert!(causes[0].field.ends_with("[0].messageExpression"));
    assert!(causes[0]
        .message
        .contains("messageExpression compilation failed: ERROR: <input>:"));
    assert!(causes[1]
        .message
        .ends_with(": messageExpression must evaluate to a string"));
}

#[test]
fn field_paths_follow_properties_and_map_keys() {
    let schema = spec(
        json!({
            "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {"max": {"type": "integer"}}}},
        }),
        json!([{"rule": "self.limits.all(k, self.limits[k].max > 0)", "fieldPath": ".limits['cpu'].max"}]),
    );
    let rules = compile(&schema);
    let cause = one(rules.validate(&object(json!({"limits": {"cpu": {"max": 0}}})), None));
    assert_eq!(cause.field, "spec.limits[cpu].max");
}

#[test]
fn evaluation_errors_are_reported_not_panicked() {
    let schema = spec(
        json!({
            "replicas": {"type": "integer"},
            "max": {"type": "integer"},
            "name": {"type": "string"},
            "either": {"x-kubernetes-int-or-string": true},
        }),
        json!([
            {"rule": "self.name.startsWith('a')"},
            {"rule": "self.replicas / self.max > 0"},
            {"rule": "[1, 2][self.replicas] == 1"},
            {"rule": "self.either.startsWith('a')", "message": "either starts with a"},
            {"rule": "self.replicas * 9223372036854775807 > 0"},
        ]),
    );
    let rules = compile(&schema);
    let causes = rules.validate(&object(json!({"replicas": 3, "max": 0, "either": 5})), None);
    let messages: Vec<&str> = causes.iter().map(|c| c.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "Invalid value: \"object\": no such key: name evaluating rule: self.name.startsWith('a')",
            "Invalid value: \"object\": division by zero evaluating rule: self.replicas / self.max > 0",
            "Invalid value: \"object\": index out of bounds: 3 evaluating rule: [1, 2][self.replicas] == 1",
            "Invalid value: \"object\": 'no such overload: int.startsWith(string)': call arguments did not match a supported operator, function or macro signature for rule: either starts with a",
            "Invalid value: \"object\": integer overflow evaluating rule: self.replicas * 9223372036854775807 > 0",
        ]
    );
    assert!(causes
        .iter()
        .all(|c| c.field == "spec" && c.kind == "FieldValueInvalid"));
}

#[test]
fn operators_and_functions_on_known_types_are_checked() {
    for (rule, expected) in [
        (
            "self.replicas > 'a'",
            "found no matching overload for '_>_' applied to '(int, string)'",
        ),
        (
            "self.replicas + 1.5 > 2.0",
            "found no matching overload for '_+_' applied to '(int, double)'",
        ),
        (
            "self.replicas.size() > 0",
            "found no matching overload for 'size' applied to 'int.()'",
        ),
        (
            "self.name.startsWith(1)",
            "found no matching overload for 'startsWith' applied to 'string.(int)'",
        ),
        (
            "self.replicas ? true : false",
            "found no matching overload for '_?_:_' applied to '(int, bool, bool)'",
        ),
        (
            "self.name == 1",
            "found no matching overload for '_==_' applied to '(string, int)'",
        ),
    ] {
        let message = refusal(rule);
        assert!(message.contains(expected), "{rule}: {message}");
    }
    // Across numeric types, comparisons are fine; and dyn() opts out.
    let schema = replicas_schema(json!([
        {"rule": "self.replicas < 3.5 && self.replicas == 3 && dyn(self.replicas) != 'x'"},
    ]));
    assert!(compile(&schema)
        .validate(&object(json!({"replicas": 3})), None)
        .is_empty());
}

#[test]
fn rules_compile_under_an_empty_path() {
    let schema = resource(json!({"type": "object"}), json!([{"rule": "self.nope"}]));
    let cause = one(Rules::compile(&schema, "").err().unwrap());
    assert_eq!(cause.field, "x-kubernetes-validations[0].rule");
}

#[test]
fn validation_is_fast() {
    let schema = spec(
        json!({
            "replicas": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]},
            "name": {"type": "string"},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                          "x-kubernetes-validations": [{"rule": "self.port > 0 && self.port < 65536"}]},
            },
        }),
        json!([{"rule": "self.name.startsWith('w') && self.replicas <= 10"}]),
    );
    let rules = compile(&schema);
    let obj = object(
        json!({"replicas": 3, "name": "web", "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}),
    );
    let start = std::time::Instant::now();
    for _ in 0..1000 {
        assert!(rules.validate(&obj, Some(&obj)).is_empty());
    }
    // Generous, for unoptimized builds on a busy machine: a few microseconds each in release.
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}
