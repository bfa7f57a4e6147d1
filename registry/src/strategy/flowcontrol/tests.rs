//! Upstream's messages for FlowSchemas and PriorityLevelConfigurations, their defaults and
//! the fixed specs of the mandatory objects.

use serde_json::{json, Value};

use super::configuration::{mandatory, suggested};
use super::{FlowSchemaStrategy, PriorityLevelConfigurationStrategy};
use crate::strategy::Strategy;

fn messages(causes: Vec<crate::error::Cause>) -> Vec<String> {
    causes.iter().map(|c| c.full_message()).collect()
}

fn schema(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

fn rule() -> Value {
    json!({
        "subjects": [{"kind": "Group", "group": {"name": "devs"}}],
        "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["*"]}],
    })
}

#[test]
fn the_started_configuration_is_valid_and_defaults_change_nothing() {
    for config in [mandatory(), suggested()] {
        for mut level in config.priority_levels {
            let before = level.clone();
            PriorityLevelConfigurationStrategy.prepare_for_create(&mut level);
            assert_eq!(
                level, before,
                "defaults changed {}",
                before["metadata"]["name"]
            );
            assert!(messages(PriorityLevelConfigurationStrategy.validate(&level)).is_empty());
        }
        for mut fs in config.flow_schemas {
            let before = fs.clone();
            FlowSchemaStrategy.prepare_for_create(&mut fs);
            assert_eq!(fs, before);
            let problems = messages(FlowSchemaStrategy.validate(&fs));
            assert!(problems.is_empty(), "{problems:?}");
        }
    }
}

#[test]
fn flow_schema_precedence_level_and_distinguisher() {
    let mut fs = schema(
        "a",
        json!({"priorityLevelConfiguration": {"name": "x"}, "rules": [rule()]}),
    );
    FlowSchemaStrategy.prepare_for_create(&mut fs);
    assert_eq!(fs["spec"]["matchingPrecedence"], 1000);

    let check = |spec: Value| messages(FlowSchemaStrategy.validate(&schema("a", spec)));
    assert_eq!(
        check(json!({"priorityLevelConfiguration": {"name": "x"}, "matchingPrecedence": 1})),
        ["spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"]
    );
    assert_eq!(
        check(json!({"priorityLevelConfiguration": {"name": ""}, "matchingPrecedence": 10001,
            "distinguisherMethod": {"type": "ByGroup"}})),
        [
            "spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000",
            "spec.distinguisherMethod.type: Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:\"ByGroup\"}: supported values: \"ByNamespace\", \"ByUser\"",
            "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
        ]
    );
}

#[test]
fn flow_schema_rules_subjects_and_urls() {
    let check = |rules: Value| {
        messages(FlowSchemaStrategy.validate(&schema(
            "a",
            json!({"priorityLevelConfiguration": {"name": "x"}, "matchingPrecedence": 5, "rules": rules}),
        )))
    };
    assert!(check(json!([rule()])).is_empty());
    assert_eq!(
        check(json!([{"subjects": []}])),
        [
            "spec.rules[0].subjects: Required value: subjects must contain at least one value",
            "spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
        ]
    );
    assert_eq!(
        check(json!([{
            "subjects": [
                {"kind": "User", "group": {"name": "g"}},
                {"kind": "ServiceAccount", "serviceAccount": {"name": "*"}},
                {"kind": "Robot"},
            ],
            "resourceRules": [{"verbs": ["get", "fly"], "apiGroups": ["*", "apps"], "resources": [], "namespaces": ["Bad"]}],
            "nonResourceRules": [{"verbs": ["*", "get"], "nonResourceURLs": ["/a/*/b", "healthz"]}],
        }])),
        [
            "spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'",
            "spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is not 'Group'",
            "spec.rules[0].subjects[1].serviceAccount.namespace: Required value: must specify namespace for service account",
            "spec.rules[0].subjects[2].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"",
            "spec.rules[0].resourceRules[0].verbs: Unsupported value: []string{\"get\", \"fly\"}: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"",
            "spec.rules[0].resourceRules[0].apiGroups: Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other api groups",
            "spec.rules[0].resourceRules[0].resources: Required value: resource rules must supply at least one resource",
            "spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: \"Bad\": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.rules[0].nonResourceRules[0].verbs: Invalid value: []string{\"*\", \"get\"}: if '*' is present, must not specify other verbs",
            "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"/a/*/b\": wildcard can only do suffix matching",
            "spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: \"healthz\": must start with slash",
        ]
    );
}

fn level(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

#[test]
fn priority_levels_are_defaulted_as_v1_defaults_them() {
    let mut pl = level(
        "l",
        json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}),
    );
    PriorityLevelConfigurationStrategy.prepare_for_create(&mut pl);
    assert_eq!(
        pl["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
    );
}

#[test]
fn priority_level_types_queuing_and_shuffle_sharding() {
    let check = |name: &str, spec: Value| {
        messages(PriorityLevelConfigurationStrategy.validate(&level(name, spec)))
    };
    assert_eq!(
        check("l", json!({"type": "Limited"})),
        ["spec.limited: Required value: must not be empty when type is Limited"]
    );
    assert_eq!(
        check("l", json!({"type": "Exempt", "exempt": {}})),
        ["spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'"]
    );
    assert_eq!(
        check("l", json!({"type": "Limited", "exempt": {}, "limited": {"nominalConcurrencyShares": -1, "lendablePercent": 101,
            "limitResponse": {"type": "Reject", "queuing": {"queues": 1}}}})),
        [
            "spec.exempt: Forbidden: must be nil if the type is Limited",
            "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            "spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited",
            "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
        ]
    );
    let queuing = |queues: i64, hand: i64| {
        check(
            "l",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
            "limitResponse": {"type": "Queue", "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": 10}}}}),
        )
    };
    assert!(queuing(10_000_000, 2).is_empty());
    assert_eq!(
        queuing(512, 8),
        ["spec.limited.limitResponse.queuing.handSize: Invalid value: 8: required entropy bits of deckSize 512 and handSize 8 should not be greater than 60"]
    );
    assert_eq!(
        queuing(7, 8),
        ["spec.limited.limitResponse.queuing.handSize: Invalid value: 8: should not be greater than queues (7)"]
    );
    assert_eq!(
        queuing(i64::from(i32::MAX), 3),
        [
            "spec.limited.limitResponse.queuing.queues: Invalid value: 2147483647: must not be greater than 10000000",
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 3: required entropy bits of deckSize 2147483647 and handSize 3 should not be greater than 60",
        ]
    );
}

#[test]
fn mandatory_objects_keep_their_fixed_specs() {
    let catch_all = level(
        "catch-all",
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 6,
        "limitResponse": {"type": "Reject"}}}),
    );
    let problems = messages(PriorityLevelConfigurationStrategy.validate(&catch_all));
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].ends_with("spec of 'catch-all' must equal the fixed value"),
        "{problems:?}"
    );
    // The exempt level's own fields may change; nothing else may.
    let exempt =
        |spec: Value| messages(PriorityLevelConfigurationStrategy.validate(&level("exempt", spec)));
    assert!(exempt(
        json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 20}})
    )
    .is_empty());
    let problems = exempt(
        json!({"type": "Exempt", "exempt": {}, "limited": {"nominalConcurrencyShares": 1,
        "limitResponse": {"type": "Reject"}}}),
    );
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(
        problems[0],
        "spec.limited: Forbidden: must be nil if the type is not Limited"
    );
    assert!(problems[1]
        .ends_with("spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"));

    let mut fs = mandatory().flow_schemas[1].clone();
    fs["spec"]["matchingPrecedence"] = json!(9999);
    let problems = messages(FlowSchemaStrategy.validate(&fs));
    assert_eq!(problems.len(), 1);
    assert!(problems[0].ends_with("spec of 'catch-all' must equal the fixed value"));
}
