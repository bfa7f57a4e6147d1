//! Evaluating rules: paths, messages, transition rules, values typed by the schema.

use serde_json::json;

use super::*;

#[test]
fn a_schema_without_rules_is_empty_and_validates_nothing() {
    let schema = resource(
        json!({"type": "object", "properties": {"x": {"type": "string"}}}),
        json!(null),
    );
    let rules = compile(&schema);
    assert!(rules.is_empty());
    let causes = rules.validate(&object(json!({"x": "y"})), None);
    assert!(causes.is_empty());
    assert_eq!(causes.capacity(), 0, "nothing allocated");
}

#[test]
fn rules_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<Rules>();
}

#[test]
fn a_root_rule_passes_or_fails_with_upstreams_default_message() {
    let schema = resource(
        json!({"type": "object", "properties": {"replicas": {"type": "integer"}, "max": {"type": "integer"}}}),
        json!([{"rule": "self.spec.replicas <= self.spec.max"}]),
    );
    let rules = compile(&schema);
    assert!(!rules.is_empty());
    assert!(rules
        .validate(&object(json!({"replicas": 1, "max": 3})), None)
        .is_empty());
    let cause = one(rules.validate(&object(json!({"replicas": 5, "max": 3})), None));
    assert_eq!(cause.kind, "FieldValueInvalid");
    assert_eq!(cause.field, "<nil>", "upstream's nil path at the root");
    assert_eq!(
        cause.message,
        "Invalid value: \"object\": failed rule: self.spec.replicas <= self.spec.max"
    );
}

#[test]
fn nested_rules_report_the_path_of_their_node() {
    let schema = spec(
        json!({
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": "self.size < 10"}],
                },
            },
            "limits": {
                "type": "object",
                "additionalProperties": {
                    "type": "integer",
                    "x-kubernetes-validations": [{"rule": "self >= 0"}],
                },
            },
        }),
        json!([{"rule": "size(self.items) <= 2"}]),
    );
    let rules = compile(&schema);
    let good = object(json!({"items": [{"name": "a", "size": 1}], "limits": {"cpu": 1}}));
    assert!(rules.validate(&good, None).is_empty());
    let bad = object(json!({
        "items": [{"name": "a", "size": 1}, {"name": "b", "size": 11}, {"name": "c", "size": 1}],
        "limits": {"cpu": -1},
    }));
    let causes = rules.validate(&bad, None);
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, ["spec", "spec.items[1]", "spec.limits[cpu]"]);
    assert_eq!(
        causes[0].message,
        "Invalid value: \"object\": failed rule: size(self.items) <= 2"
    );
    assert_eq!(
        causes[2].message,
        "Invalid value: \"integer\": failed rule: self >= 0"
    );
}

#[test]
fn message_message_expression_reason_and_field_path() {
    let schema = replicas_schema(json!([
        {"rule": "self.replicas <= self.max", "message": "too many replicas"},
        {
            "rule": "self.replicas <= self.max",
            "messageExpression": "'replicas ' + string(self.replicas) + ' exceed ' + string(self.max)",
            "message": "unused",
            "reason": "FieldValueForbidden",
            "fieldPath": ".replicas",
        },
        {"rule": "self.name != ''", "reason": "FieldValueRequired", "fieldPath": ".name", "message": "name it"},
        {"rule": "self.name != 'dup'", "reason": "FieldValueDuplicate"},
    ]));
    let rules = compile(&schema);
    let causes = rules.validate(&object(json!({"replicas": 5, "max": 3, "name": ""})), None);
    assert_eq!(causes.len(), 3, "{causes:#?}");
    assert_eq!(
        causes[0],
        Cause {
            kind: "FieldValueInvalid".into(),
            message: "Invalid value: \"object\": too many replicas".into(),
            field: "spec".into(),
        }
    );
    assert_eq!(
        causes[1],
        Cause {
            kind: "FieldValueForbidden".into(),
            message: "Forbidden: replicas 5 exceed 3".into(),
            field: "spec.replicas".into(),
        }
    );
    assert_eq!(
        causes[2],
        Cause {
            kind: "FieldValueRequired".into(),
            message: "Required value: name it".into(),
            field: "spec.name".into(),
        }
    );
    let dup = one(rules.validate(
        &object(json!({"replicas": 1, "max": 3, "name": "dup"})),
        None,
    ));
    assert_eq!(dup.kind, "FieldValueDuplicate");
    assert_eq!(dup.message, "Duplicate value: \"object\"");
}

#[test]
fn a_failing_message_expression_falls_back_to_the_message() {
    let schema = replicas_schema(json!([{
        "rule": "self.replicas <= self.max",
        "messageExpression": "'missing ' + self.name",
        "message": "fallback",
    }]));
    let rules = compile(&schema);
    let cause = one(rules.validate(&object(json!({"replicas": 5, "max": 3})), None));
    assert_eq!(cause.message, "Invalid value: \"object\": fallback");
    // An empty message is no message either: the default then.
    let schema = replicas_schema(json!([{
        "rule": "self.replicas <= self.max",
        "messageExpression": "'  '",
    }]));
    let cause = one(compile(&schema).validate(&object(json!({"replicas": 5, "max": 3})), None));
    assert_eq!(
        cause.message,
        "Invalid value: \"object\": failed rule: self.replicas <= self.max"
    );
}

#[test]
fn an_immutability_rule_runs_on_update_only() {
    let schema = spec(
        json!({"name": {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}],
        }}),
        json!([]),
    );
    let rules = compile(&schema);
    let first = object(json!({"name": "a"}));
    assert!(rules.validate(&first, None).is_empty(), "create");
    assert!(rules.validate(&first, Some(&first)).is_empty(), "unchanged");
    let second = object(json!({"name": "b"}));
    let cause = one(rules.validate(&second, Some(&first)));
    assert_eq!(cause.field, "spec.name");
    assert_eq!(
        cause.message,
        "Invalid value: \"string\": Value is immutable"
    );
    // Added where there was no old value, or a null one: nothing to compare with.
    let without = object(json!({}));
    assert!(rules.validate(&second, Some(&without)).is_empty());
    let null = object(json!({"name": null}));
    assert!(rules.validate(&second, Some(&null)).is_empty());
}

#[test]
fn optional_old_self_runs_on_create_with_no_value() {
    let schema = replicas_schema(json!([{
        "rule": "!oldSelf.hasValue() ? self.replicas == 1 : self.replicas >= oldSelf.value().replicas",
        "optionalOldSelf": true,
        "message": "may only grow, from 1",
    }]));
    let rules = compile(&schema);
    assert!(rules
        .validate(&object(json!({"replicas": 1})), None)
        .is_empty());
    assert_eq!(
        one(rules.validate(&object(json!({"replicas": 2})), None)).message,
        "Invalid value: \"object\": may only grow, from 1"
    );
    let old = object(json!({"replicas": 3}));
    assert!(rules
        .validate(&object(json!({"replicas": 4})), Some(&old))
        .is_empty());
    assert_eq!(
        one(rules.validate(&object(json!({"replicas": 2})), Some(&old))).field,
        "spec"
    );
}

#[test]
fn optional_old_self_is_refused_without_old_self() {
    let schema = replicas_schema(json!([{"rule": "self.replicas > 0", "optionalOldSelf": true}]));
    let cause = one(refused(&schema));
    assert_eq!(
        cause.field,
        format!("{AT}.properties[spec].x-kubernetes-validations[0].optionalOldSelf")
    );
    assert_eq!(
        cause.message,
        "Invalid value: true: may not be set if oldSelf is not used in rule"
    );
}

fn ports_schema(list_type: Json) -> Json {
    let mut list = json!({
        "type": "array",
        "items": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.port >= oldSelf.port", "message": "ports only grow"}],
        },
    });
    if let Json::Object(fields) = list_type {
        list.as_object_mut().unwrap().extend(fields);
    }
    spec(json!({ "ports": list }), json!([]))
}

#[test]
fn map_lists_correlate_items_by_their_keys() {
    let schema = ports_schema(json!({
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
    }));
    let rules = compile(&schema);
    let old =
        object(json!({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}));
    // Reordered, one grown, one new (nothing to compare it with): fine.
    let new = object(json!({"ports": [
        {"name": "https", "port": 443},
        {"name": "metrics", "port": 1},
        {"name": "http", "port": 8080},
    ]}));
    assert!(rules.validate(&new, Some(&old)).is_empty());
    // `https` shrank: reported at its new index.
    let new =
        object(json!({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 400}]}));
    let cause = one(rules.validate(&new, Some(&old)));
    assert_eq!(cause.field, "spec.ports[1]");
    assert_eq!(cause.message, "Invalid value: \"object\": ports only grow");
}

#[test]
fn old_self_below_other_lists_is_refused() {
    let schema = ports_schema(json!({}));
    let cause = one(refused(&schema));
    assert_eq!(
        cause.field,
        format!("{AT}.properties[spec].properties[ports].items.x-kubernetes-validations[0].rule")
    );
    assert_eq!(
        cause.message,
        format!(
            "Invalid value: \"self.port >= oldSelf.port\": oldSelf cannot be used on the uncorrelatable portion of the schema within {AT}.properties[spec].properties[ports]"
        )
    );
}

#[test]
fn unchanged_values_ratchet() {
    let schema = spec(
        json!({"name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() <= 3"}]}, "other": {"type": "string"}}),
        json!([]),
    );
    let rules = compile(&schema);
    let old = object(json!({"name": "toolong", "other": "a"}));
    let unchanged = object(json!({"name": "toolong", "other": "b"}));
    assert!(rules.validate(&unchanged, Some(&old)).is_empty());
    let changed = object(json!({"name": "toolonger", "other": "a"}));
    assert_eq!(one(rules.validate(&changed, Some(&old))).field, "spec.name");
    assert_eq!(one(rules.validate(&unchanged, None)).field, "spec.name");
}

#[test]
fn has_tests_for_absent_fields() {
    let schema = spec(
        json!({"a": {"type": "string"}, "b": {"type": "string"}}),
        json!([{"rule": "has(self.a) != has(self.b)", "message": "exactly one of a and b"}]),
    );
    let rules = compile(&schema);
    assert!(rules.validate(&object(json!({"a": "x"})), None).is_empty());
    assert!(rules.validate(&object(json!({"b": "x"})), None).is_empty());
    assert_eq!(one(rules.validate(&object(json!({})), None)).field, "spec");
    assert_eq!(
        one(rules.validate(&object(json!({"a": "x", "b": "y"})), None)).field,
        "spec"
    );
}

#[test]
fn string_functions() {
    let passing = [
        "self.s.startsWith('Hello')",
        "self.s.endsWith('World ')",
        "self.s.contains('lo, W')",
        "self.s.matches('^H[a-z]+,')",
        "self.s.lowerAscii() == ' hello, world '.trim() + ' '",
        "self.s.upperAscii().startsWith('HELLO')",
        "self.s.trim() == 'Hello, World'",
        "self.s.split(', ') == ['Hello', 'World ']",
        "self.s.replace('World', 'There') == 'Hello, There '",
        "['a', 'b'].join('-') == 'a-b'",
        "self.s.size() == 13 && size(self.s) == 13",
        "self.s.charAt(1) == 'e'",
        "self.s.indexOf('o') == 4 && self.s.lastIndexOf('o') == 8",
        "self.s.substring(0, 5) == 'Hello'",
        "'%s has %d'.format(['x', 2]) == 'x has 2'",
        "strings.quote('a') == '\"a\"'",
        "self.s.matches('W') && !self.s.matches('^W')",
    ];
    for rule in passing {
        let schema = spec(json!({"s": {"type": "string"}}), json!([{ "rule": rule }]));
        let rules = compile(&schema);
        let causes = rules.validate(&object(json!({"s": "Hello, World "})), None);
        assert!(causes.is_empty(), "{rule}: {causes:#?}");
    }
}

#[test]
fn values_are_typed_by_the_schema() {
    let schema = spec(
        json!({
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "either": {"x-kubernetes-int-or-string": true},
            "other": {"x-kubernetes-int-or-string": true},
            "timeout": {"type": "string", "format": "duration"},
            "at": {"type": "string", "format": "date-time"},
            "data": {"type": "string", "format": "byte"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "absent": {"type": "string"},
        }),
        json!([
            {"rule": "type(self.count) == int && self.count == 3"},
            {"rule": "type(self.ratio) == double && self.ratio == 1.0"},
            {"rule": "self.count < 3.5 && self.ratio < 2"},
            {"rule": "self.flag"},
            {"rule": "type(self.either) == int && type(self.other) == string"},
            {"rule": "self.other.endsWith('%')"},
            {"rule": "self.timeout > duration('1m') && self.timeout < duration('2h')"},
            {"rule": "self.at < timestamp('2030-01-01T00:00:00Z') && self.at.getFullYear() == 2024"},
            {"rule": "self.data == b'hello'"},
            {"rule": "'b' in self.tags && self.tags.all(t, t.size() == 1) && self.tags.exists_one(t, t == 'a')"},
            {"rule": "self.tags.map(t, t + t) == ['aa', 'bb'] && self.tags.filter(t, t != 'a') == ['b']"},
            {"rule": "'app' in self.labels && self.labels['app'] == 'web' && self.labels.all(k, k.size() > 2)"},
            {"rule": "sets.contains(self.tags, ['a']) && sets.intersects(self.tags, ['b', 'c']) && !sets.equivalent(self.tags, ['a'])"},
            {"rule": "int('3') == self.count && uint(self.count) == 3u && double(self.count) == 3.0 && string(self.flag) == 'true' && bool('true')"},
            {"rule": "self.?absent.orValue('none') == 'none' && self.?count.hasValue()"},
        ]),
    );
    let rules = compile(&schema);
    let obj = object(json!({
        "count": 3,
        "ratio": 1,
        "flag": true,
        "either": 5,
        "other": "50%",
        "timeout": "1h30m",
        "at": "2024-05-01T10:00:00Z",
        "data": "aGVsbG8=",
        "tags": ["a", "b"],
        "labels": {"app": "web"},
    }));
    let causes = rules.validate(&obj, None);
    assert!(causes.is_empty(), "{causes:#?}");
}

#[test]
fn the_root_sees_type_meta_and_the_name_only() {
    let schema = resource(
        json!({"type": "object"}),
        json!([{"rule": "self.metadata.name.startsWith('w') && !has(self.metadata.generateName) && self.kind == 'Widget' && self.apiVersion.startsWith('example.com/')"}]),
    );
    assert!(compile(&schema)
        .validate(&object(json!({})), None)
        .is_empty());
    let schema = resource(
        json!({"type": "object"}),
        json!([{"rule": "self.metadata.namespace == 'default'"}]),
    );
    let cause = one(refused(&schema));
    assert!(
        cause.message.contains("undefined field 'namespace'"),
        "{}",
        cause.message
    );
}

#[test]
fn property_names_are_escaped() {
    let schema = spec(
        json!({
            "x-y": {"type": "string"},
            "namespace": {"type": "string"},
            "a.b": {"type": "string"},
        }),
        json!([{"rule": "self.x__dash__y == '1' && self.__namespace__ == '2' && self.a__dot__b == '3'"}]),
    );
    let rules = compile(&schema);
    let causes = rules.validate(
        &object(json!({"x-y": "1", "namespace": "2", "a.b": "3"})),
        None,
    );
    assert!(causes.is_empty(), "{causes:#?}");
}

#[test]
fn embedded_resources_see_their_type_meta() {
    let schema = spec(
        json!({"template": {
            "type": "object",
            "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-validations": [{"rule": "self.kind == 'Pod' && self.metadata.name == 'p'"}],
        }}),
        json!([]),
    );
    let rules = compile(&schema);
    let obj =
        object(json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}));
    assert!(rules.validate(&obj, None).is_empty());
    let obj = object(
        json!({"template": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p"}}}),
    );
    assert_eq!(one(rules.validate(&obj, None)).field, "spec.template");
}

#[test]
fn null_values_are_not_validated() {
    let schema = spec(
        json!({"name": {"type": "string", "nullable": true, "x-kubernetes-validations": [{"rule": "self.size() > 3"}]}}),
        json!([]),
    );
    let rules = compile(&schema);
    assert!(rules
        .validate(&object(json!({"name": null})), None)
        .is_empty());
    assert_eq!(
        one(rules.validate(&object(json!({"name": "ab"})), None)).field,
        "spec.name"
    );
}
