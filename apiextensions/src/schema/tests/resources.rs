//! Embedded resources and list types: what the walkers beside JSON Schema check.

use super::spec_errors;
use serde_json::json;

fn embedded() -> serde_json::Value {
    json!({"template": {
        "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
    }, "templates": {"type": "object", "additionalProperties": {
        "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
    }}})
}

#[test]
fn embedded_resources_need_api_version_and_kind() {
    assert_eq!(
        spec_errors(embedded(), json!({"template": {"metadata": {"name": "x"}}})),
        [
            "FieldValueRequired spec.template.apiVersion: Required value",
            "FieldValueRequired spec.template.kind: Required value",
        ]
    );
    assert!(spec_errors(
        embedded(),
        json!({"template": {"apiVersion": "apps/v1", "kind": "Deployment"}})
    )
    .is_empty());
}

#[test]
fn embedded_type_meta_and_metadata_are_validated() {
    assert_eq!(
        spec_errors(embedded(), json!({"templates": {"a": {
            "apiVersion": "a/b/c", "kind": "Not_A_Kind",
            "metadata": {"name": "x/y", "labels": {"bad key!": "v"}},
        }}})),
        [
            "FieldValueInvalid spec.templates[a].apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
            "FieldValueInvalid spec.templates[a].kind: Invalid value: \"Not_A_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "FieldValueInvalid spec.templates[a].metadata.name: Invalid value: \"x/y\": may not contain '/'",
            "FieldValueInvalid spec.templates[a].metadata.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ]
    );
    assert_eq!(
        spec_errors(
            embedded(),
            json!({"template": {"apiVersion": 1, "kind": ""}})
        ),
        [
            "FieldValueInvalid spec.template.apiVersion: Invalid value: 1: must be a string",
            "FieldValueInvalid spec.template.kind: Invalid value: \"\": must not be empty",
        ]
    );
}

#[test]
fn set_lists_refuse_duplicates() {
    let props = json!({
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "nums": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}},
    });
    assert_eq!(
        spec_errors(
            props.clone(),
            json!({"tags": ["a", "b", "a", "a", "b"], "nums": [1, 1.0]})
        ),
        [
            "FieldValueDuplicate spec.tags[2]: Duplicate value: \"a\"",
            "FieldValueDuplicate spec.tags[4]: Duplicate value: \"b\"",
        ]
    );
    assert!(spec_errors(props, json!({"tags": ["a", "b"]})).is_empty());
}

#[test]
fn map_lists_refuse_duplicate_keys() {
    let props = json!({
        "ports": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
            "items": {"type": "object", "required": ["port"], "properties": {
                "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}, "name": {"type": "string"},
            }},
        },
        "containers": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        },
    });
    assert_eq!(
        spec_errors(props.clone(), json!({
            "ports": [{"port": 80, "protocol": "TCP", "name": "a"}, {"port": 80, "protocol": "UDP"}, {"port": 80, "protocol": "TCP", "name": "b"}],
            "containers": [{"name": "app"}, {"name": "app"}],
        })),
        [
            "FieldValueDuplicate spec.containers[1]: Duplicate value: map[string]interface {}{\"name\":\"app\"}",
            "FieldValueDuplicate spec.ports[2]: Duplicate value: map[string]interface {}{\"port\":80, \"protocol\":\"TCP\"}",
        ]
    );
    assert!(spec_errors(
        props,
        json!({"containers": [{"name": "app"}, {"name": "sidecar"}]})
    )
    .is_empty());
}

#[test]
fn map_list_items_must_be_objects() {
    let props = json!({"ports": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "x-kubernetes-preserve-unknown-fields": true,
        "items": {"x-kubernetes-preserve-unknown-fields": true},
    }});
    assert_eq!(
        spec_errors(props, json!({"ports": [{"name": "a"}, "b"]})),
        ["FieldValueInvalid spec.ports[1]: Invalid value: \"b\": must be an object for an array of list-type map"]
    );
}

#[test]
fn long_lists_find_the_same_duplicates() {
    let props = json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"x-kubernetes-preserve-unknown-fields": true}}});
    let mut tags: Vec<serde_json::Value> = (0..100).map(|i| json!(format!("t{i}"))).collect();
    tags.push(json!("t7"));
    tags.push(json!({"b": 1, "a": [1.0]}));
    tags.push(json!({"a": [1.0], "b": 1}));
    tags.push(json!("t7"));
    tags.push(json!(1));
    tags.push(json!(1.0));
    assert_eq!(
        spec_errors(props, json!({"tags": tags})),
        [
            "FieldValueDuplicate spec.tags[100]: Duplicate value: \"t7\"",
            "FieldValueDuplicate spec.tags[102]: Duplicate value: map[string]interface {}{\"a\":[]interface {}{1}, \"b\":1}",
        ]
    );
}
