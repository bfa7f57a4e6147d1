//! Validation of custom resources: each kind of failure with upstream's path and wording.

use super::{compile, lines, spec_errors, spec_schema};
use serde_json::json;

#[test]
fn numeric_bounds() {
    let props = json!({
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "maximum": 1.5, "exclusiveMaximum": true, "minimum": 0, "exclusiveMinimum": true},
        "step": {"type": "integer", "multipleOf": 5},
        "share": {"type": "number", "multipleOf": 0.5},
    });
    assert_eq!(
        spec_errors(props.clone(), json!({"replicas": 20, "ratio": 1.5, "step": 7, "share": 0.7})),
        [
            "FieldValueInvalid spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5",
            "FieldValueInvalid spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10",
            "FieldValueInvalid spec.share: Invalid value: 0.7: spec.share in body should be a multiple of 0.5",
            "FieldValueInvalid spec.step: Invalid value: 7: spec.step in body should be a multiple of 5",
        ]
    );
    assert_eq!(
        spec_errors(props.clone(), json!({"replicas": 0, "ratio": 0})),
        [
            "FieldValueInvalid spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0",
            "FieldValueInvalid spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
        ]
    );
    assert!(spec_errors(
        props,
        json!({"replicas": 10, "ratio": 1.0, "step": 15, "share": 1.5})
    )
    .is_empty());
}

#[test]
fn bounds_print_as_go_prints_them() {
    // A float value shows the bound as a float64 (%v); an integer one as an int64.
    let props = json!({"big": {"type": "number", "maximum": 1000000}, "n": {"type": "integer", "maximum": 1000000}});
    assert_eq!(
        spec_errors(props, json!({"big": 2500000.5, "n": 2000000})),
        [
            "FieldValueInvalid spec.big: Invalid value: 2.5000005e+06: spec.big in body should be less than or equal to 1e+06",
            "FieldValueInvalid spec.n: Invalid value: 2000000: spec.n in body should be less than or equal to 1000000",
        ]
    );
}

#[test]
fn required_fields() {
    let schema = spec_schema(json!({"size": {"type": "string"}, "items": {
        "type": "array", "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    }}));
    let mut schema = schema;
    schema["properties"]["spec"]["required"] = json!(["size"]);
    schema["required"] = json!(["spec"]);
    let compiled = compile(&schema);
    assert_eq!(
        lines(&compiled.validate(&json!({"spec": {"items": [{"name": "a"}, {}]}}))),
        [
            "FieldValueRequired spec.size: Required value",
            "FieldValueRequired spec.items[1].name: Required value",
        ]
    );
    assert_eq!(
        lines(&compiled.validate(&json!({}))),
        ["FieldValueRequired spec: Required value"]
    );
}

#[test]
fn enums() {
    let props = json!({"mode": {"type": "string", "enum": ["a", "b"]}, "level": {"type": "integer", "enum": [1, 2]}});
    assert_eq!(
        spec_errors(props.clone(), json!({"mode": "x", "level": 3})),
        [
            "FieldValueNotSupported spec.level: Unsupported value: 3: supported values: \"1\", \"2\"",
            "FieldValueNotSupported spec.mode: Unsupported value: \"x\": supported values: \"a\", \"b\"",
        ]
    );
    assert!(spec_errors(props, json!({"mode": "b", "level": 1})).is_empty());
}

#[test]
fn types() {
    let props = json!({
        "replicas": {"type": "integer"},
        "name": {"type": "string"},
        "on": {"type": "boolean"},
        "list": {"type": "array", "items": {"type": "string"}},
        "obj": {"type": "object"},
    });
    assert_eq!(
        spec_errors(props.clone(), json!({"replicas": "string", "name": 1.5, "on": "yes", "list": {}, "obj": [1]})),
        [
            "FieldValueTypeInvalid spec.list: Invalid value: \"object\": spec.list in body must be of type array: \"object\"",
            "FieldValueTypeInvalid spec.name: Invalid value: \"number\": spec.name in body must be of type string: \"number\"",
            "FieldValueTypeInvalid spec.obj: Invalid value: \"array\": spec.obj in body must be of type object: \"array\"",
            "FieldValueTypeInvalid spec.on: Invalid value: \"string\": spec.on in body must be of type boolean: \"string\"",
            "FieldValueTypeInvalid spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
        ]
    );
    // An integral float is an integer, as in kube-openapi.
    assert!(spec_errors(props, json!({"replicas": 2.0})).is_empty());
}

#[test]
fn nullable() {
    let props = json!({"opt": {"type": "string", "nullable": true}, "req": {"type": "string"}});
    assert!(spec_errors(props.clone(), json!({"opt": null})).is_empty());
    assert_eq!(
        spec_errors(props, json!({"req": null})),
        ["FieldValueTypeInvalid spec.req: Invalid value: \"null\": spec.req in body must be of type string: \"null\""]
    );
}

#[test]
fn strings() {
    let props = json!({"name": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"}, "one": {"type": "string", "maxLength": 1}});
    assert_eq!(
        spec_errors(props.clone(), json!({"name": "ABCDEF", "one": "ab"})),
        [
            "FieldValueTooLong spec.name: Too long: may not be more than 4 bytes",
            "FieldValueInvalid spec.name: Invalid value: \"ABCDEF\": spec.name in body should match '^[a-z]+$'",
            "FieldValueTooLong spec.one: Too long: may not be more than 1 byte",
        ]
    );
    assert_eq!(
        spec_errors(props, json!({"name": "a"})),
        ["FieldValueInvalid spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"]
    );
}

#[test]
fn arrays_and_maps() {
    let props = json!({
        "items": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "integer", "maximum": 5}},
        "labels": {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "string"}},
    });
    assert_eq!(
        spec_errors(props.clone(), json!({"items": [1, 9, 3], "labels": {"a": "x", "b": 2, "c": "z"}})),
        [
            "FieldValueTooMany spec.items: Too many: 3: must have at most 2 items",
            "FieldValueInvalid spec.items[1]: Invalid value: 9: spec.items[1] in body should be less than or equal to 5",
            "FieldValueTooMany spec.labels: Too many: 3: must have at most 2 items",
            // kube-openapi names map values with a dot.
            "FieldValueTypeInvalid spec.labels.b: Invalid value: \"integer\": spec.labels.b in body must be of type string: \"integer\"",
        ]
    );
    assert_eq!(
        spec_errors(props, json!({"items": [], "labels": {}})),
        [
            "FieldValueInvalid spec.items: Invalid value: 0: spec.items in body should have at least 1 items",
            "FieldValueInvalid spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties",
        ]
    );
}

#[test]
fn forbidden_additional_properties() {
    let props = json!({"closed": {"type": "object", "additionalProperties": false}});
    assert_eq!(
        spec_errors(props, json!({"closed": {"x": 1, "y": 2}})),
        [
            "FieldValueInvalid spec.closed: Invalid value: \"x\": spec.closed.x in body is a forbidden property",
            "FieldValueInvalid spec.closed: Invalid value: \"y\": spec.closed.y in body is a forbidden property",
        ]
    );
}

#[test]
fn int_or_string() {
    let props = json!({"port": {"x-kubernetes-int-or-string": true}, "anyOfPort": {
        "x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^[a-z]+$"
    }});
    assert!(spec_errors(props.clone(), json!({"port": 80, "anyOfPort": "http"})).is_empty());
    assert!(spec_errors(props.clone(), json!({"port": "http", "anyOfPort": 8080})).is_empty());
    assert_eq!(
        spec_errors(props.clone(), json!({"port": true})),
        ["FieldValueTypeInvalid spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""]
    );
    assert_eq!(
        spec_errors(props, json!({"port": 1.5, "anyOfPort": "HTTP"})),
        [
            "FieldValueInvalid spec.anyOfPort: Invalid value: \"HTTP\": spec.anyOfPort in body should match '^[a-z]+$'",
            "FieldValueTypeInvalid spec.port: Invalid value: \"number\": spec.port in body must be of type integer,string: \"number\"",
        ]
    );
}

#[test]
fn junctors() {
    let props = json!({
        "any": {"type": "string", "anyOf": [{"maxLength": 2}, {"pattern": "^x"}]},
        "one": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        "none": {"type": "string", "not": {"pattern": "^x"}},
        "all": {"type": "integer", "allOf": [{"minimum": 3}, {"maximum": 5}]},
    });
    assert_eq!(
        spec_errors(props.clone(), json!({"any": "long", "one": {}, "none": "xy", "all": 9})),
        [
            "FieldValueInvalid spec.all: Invalid value: 9: spec.all in body should be less than or equal to 5",
            "FieldValueInvalid spec.any: Invalid value: \"\": \"spec.any\" must validate at least one schema (anyOf)",
            "FieldValueTooLong spec.any: Too long: may not be more than 2 bytes",
            "FieldValueInvalid spec.none: Invalid value: \"\": \"spec.none\" must not validate the schema (not)",
            "FieldValueInvalid spec.one: Invalid value: \"\": \"spec.one\" must validate one and only one schema (oneOf). Found none valid",
            "FieldValueRequired spec.one.a: Required value",
        ]
    );
    assert_eq!(
        spec_errors(props.clone(), json!({"one": {"a": 1, "b": 2}})),
        ["FieldValueInvalid spec.one: Invalid value: \"\": \"spec.one\" must validate one and only one schema (oneOf). Found 2 valid alternatives"]
    );
    assert!(spec_errors(
        props,
        json!({"any": "xlong", "one": {"b": 1}, "none": "ab", "all": 4})
    )
    .is_empty());
}

#[test]
fn metadata_only_name_and_generate_name() {
    let schema = json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 5},
            "generateName": {"type": "string", "pattern": "^x"},
        }},
        "spec": {"type": "object"},
    }});
    let compiled = compile(&schema);
    let obj = json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {
        "name": "too-long", "generateName": "y-", "namespace": "default", "labels": {"a": "b"}, "uid": 5
    }});
    assert_eq!(
        lines(&compiled.validate(&obj)),
        [
            "FieldValueInvalid metadata.generateName: Invalid value: \"y-\": metadata.generateName in body should match '^x'",
            "FieldValueTooLong metadata.name: Too long: may not be more than 5 bytes",
        ]
    );
}

#[test]
fn valid_object_has_no_causes() {
    let props =
        json!({"replicas": {"type": "integer", "maximum": 10}, "image": {"type": "string"}});
    assert!(spec_errors(
        props,
        json!({"replicas": 3, "image": "nginx", "unknown": true})
    )
    .is_empty());
}
