//! CRD-time checks of a version's schema.

use super::{crd_errors, spec_schema, ROOT};
use serde_json::json;

fn at(rest: &str) -> String {
    format!("{ROOT}{rest}")
}

#[test]
fn types_are_required_outside_value_validations() {
    assert_eq!(
        crd_errors(json!({"properties": {"spec": {"properties": {"a": {}, "b": {"items": {}}}}}})),
        [
            format!("FieldValueRequired {}: Required value: must not be empty for specified object fields", at(".properties[spec].properties[a].type")),
            format!("FieldValueRequired {}: Required value: must not be empty for specified array items", at(".properties[spec].properties[b].items.type")),
            format!("FieldValueRequired {}: Required value: must not be empty for specified object fields", at(".properties[spec].properties[b].type")),
            format!("FieldValueRequired {}: Required value: must not be empty for specified object fields", at(".properties[spec].type")),
            format!("FieldValueRequired {}: Required value: must not be empty at the root", at(".type")),
        ]
    );
    // int-or-string and preserve-unknown-fields make the type optional.
    assert!(crd_errors(spec_schema(json!({
        "port": {"x-kubernetes-int-or-string": true},
        "raw": {"x-kubernetes-preserve-unknown-fields": true},
    })))
    .is_empty());
}

#[test]
fn the_root_is_an_object() {
    assert_eq!(
        crd_errors(json!({"type": "string"})),
        [format!(
            "FieldValueInvalid {}: Invalid value: \"string\": must be object at the root",
            at(".type")
        )]
    );
    assert_eq!(
        crd_errors(json!({"type": "object", "nullable": true})),
        [format!(
            "FieldValueForbidden {}: Forbidden: nullable cannot be true at the root",
            at(".nullable")
        )]
    );
}

#[test]
fn refused_keywords() {
    assert_eq!(
        crd_errors(spec_schema(json!({
            "a": {"$ref": "#/definitions/a"},
            "b": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "c": {"type": "array", "items": [{"type": "string"}]},
            "d": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
            "e": {"type": "object", "x-kubernetes-preserve-unknown-fields": false},
            "f": {"type": "null"},
        }))),
        [
            format!("FieldValueForbidden {}: Forbidden: $ref is not supported", at(".properties[spec].properties[a].$ref")),
            format!("FieldValueForbidden {}: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic", at(".properties[spec].properties[b].uniqueItems")),
            format!("FieldValueForbidden {}: Forbidden: items must be a schema object and not an array", at(".properties[spec].properties[c].items")),
            format!("FieldValueForbidden {}: Forbidden: additionalProperties and properties are mutual exclusive", at(".properties[spec].properties[d].additionalProperties")),
            format!("FieldValueInvalid {}: Invalid value: false: must be true or undefined", at(".properties[spec].properties[e].x-kubernetes-preserve-unknown-fields")),
            format!("FieldValueNotSupported {}: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"", at(".properties[spec].properties[f].type")),
            format!("FieldValueForbidden {}: Forbidden: type cannot be set to null, use nullable as an alternative", at(".properties[spec].properties[f].type")),
        ]
    );
    assert_eq!(
        crd_errors(json!({"type": "object", "additionalProperties": {"type": "string"}})),
        [format!(
            "FieldValueForbidden {}: Forbidden: must not be used at the root",
            at(".additionalProperties")
        )]
    );
}

#[test]
fn metadata_may_restrict_only_name_and_generate_name() {
    let ok = json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20},
        "generateName": {"type": "string"},
    }}}});
    assert!(crd_errors(ok).is_empty());
    assert_eq!(
        crd_errors(json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
            "name": {"type": "string"},
            "labels": {"type": "object"},
        }}}})),
        [format!("FieldValueForbidden {}: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified", at(".properties[metadata]"))]
    );
    assert_eq!(
        crd_errors(
            json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {"name": "x"}}}})
        ),
        [format!(
            "FieldValueForbidden {}: Forbidden: must not be set in top-level metadata",
            at(".properties[metadata].default")
        )]
    );
}

#[test]
fn defaults_must_validate_and_be_pruned() {
    assert_eq!(
        crd_errors(spec_schema(json!({
            "replicas": {"type": "integer", "maximum": 10, "default": 20},
            "mode": {"type": "string", "enum": ["a"], "default": "b"},
            "obj": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}},
            "req": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}, "default": {}},
            "nullable": {"type": "string", "nullable": true, "default": null},
            "strict": {"type": "string", "default": null},
        }))),
        [
            format!("FieldValueNotSupported {}: Unsupported value: \"b\": supported values: \"a\"", at(".properties[spec].properties[mode].default")),
            format!("FieldValueInvalid {}: Invalid value: map[string]interface {{}}{{\"a\":\"x\", \"b\":1}}: must not have unknown fields", at(".properties[spec].properties[obj].default")),
            // kube-openapi names the default's root "", hence the doubled space.
            format!("FieldValueInvalid {}: Invalid value: 20:  in body should be less than or equal to 10", at(".properties[spec].properties[replicas].default")),
            format!("FieldValueRequired {}: Required value", at(".properties[spec].properties[req].default.a")),
            format!("FieldValueTypeInvalid {}: Invalid value: \"null\":  in body must be of type string: \"null\"", at(".properties[spec].properties[strict].default")),
        ]
    );
}

#[test]
fn list_types() {
    let list = |extra: serde_json::Value| {
        let mut schema = json!({"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "port": {"type": "integer"}, "sub": {"type": "object"},
        }}});
        if let (Some(s), Some(e)) = (schema.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        spec_schema(json!({"l": schema}))
    };
    assert!(crd_errors(list(
        json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})
    ))
    .is_empty());
    let keys = at(".properties[spec].properties[l].x-kubernetes-list-map-keys");
    assert_eq!(
        crd_errors(list(json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "missing", "name", "sub", "port"]}))),
        [
            format!("FieldValueInvalid {keys}: Invalid value: []string{{\"name\", \"missing\", \"name\", \"sub\", \"port\"}}: entries must all be names of item properties"),
            format!("FieldValueInvalid {keys}: Invalid value: []string{{\"name\", \"missing\", \"name\", \"sub\", \"port\"}}: must not contain duplicate entries"),
            format!("FieldValueInvalid {}: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map", at(".properties[spec].properties[l].items.properties[sub].type")),
            format!("FieldValueRequired {}: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property", at(".properties[spec].properties[l].items.properties[sub].default")),
            format!("FieldValueRequired {}: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property", at(".properties[spec].properties[l].items.properties[port].default")),
        ]
    );
    assert_eq!(
        crd_errors(list(json!({"x-kubernetes-list-type": "map"}))),
        [format!("FieldValueRequired {keys}: Required value: must not be empty if x-kubernetes-list-type is map")]
    );
    assert_eq!(
        crd_errors(list(json!({"x-kubernetes-list-type": "bag"}))),
        [format!("FieldValueNotSupported {}: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"", at(".properties[spec].properties[l].x-kubernetes-list-type"))]
    );
    // Set items must be atomic: scalars, atomic lists or atomic maps.
    assert_eq!(
        crd_errors(list(json!({"x-kubernetes-list-type": "set"}))),
        [format!("FieldValueInvalid {}: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set", at(".properties[spec].properties[l].items.x-kubernetes-map-type"))]
    );
    assert!(crd_errors(spec_schema(json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}))).is_empty());
    assert_eq!(
        crd_errors(spec_schema(json!({"tags": {"type": "string", "x-kubernetes-list-type": "set"}}))),
        [format!("FieldValueInvalid {}: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified", at(".properties[spec].properties[tags].type"))]
    );
}

#[test]
fn int_or_string_and_junctors() {
    assert!(crd_errors(spec_schema(json!({
        "a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "b": {"x-kubernetes-int-or-string": true, "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^a"}]},
    })))
    .is_empty());
    let a = ".properties[spec].properties[a]";
    assert_eq!(
        crd_errors(spec_schema(json!({
            "a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "string"}, {"type": "integer"}]},
            "n": {"type": "string", "not": {"type": "string", "description": "d", "nullable": true, "properties": {"metadata": {}}}},
        }))),
        [
            format!(
                "FieldValueForbidden {}: Forbidden: must be empty to be structural",
                at(&format!("{a}.anyOf[0].type"))
            ),
            format!(
                "FieldValueForbidden {}: Forbidden: must be empty to be structural",
                at(&format!("{a}.anyOf[1].type"))
            ),
            format!(
                "FieldValueForbidden {}: Forbidden: must be empty to be structural",
                at(".properties[spec].properties[n].not.description")
            ),
            format!(
                "FieldValueForbidden {}: Forbidden: must be false to be structural",
                at(".properties[spec].properties[n].not.nullable")
            ),
            format!(
                "FieldValueForbidden {}: Forbidden: must not be specified in a nested context",
                at(".properties[spec].properties[n].not.properties[metadata]")
            ),
            format!(
                "FieldValueForbidden {}: Forbidden: must be empty to be structural",
                at(".properties[spec].properties[n].not.type")
            ),
        ]
    );
    assert_eq!(
        crd_errors(json!({"type": "object", "anyOf": [{"properties": {"x": {}}}]})),
        [format!(
            "FieldValueRequired {}: Required value: because it is defined in {}",
            at(".properties[x]"),
            at(".anyOf[0].properties[x]")
        )]
    );
}

#[test]
fn embedded_resources() {
    assert_eq!(
        crd_errors(spec_schema(json!({"t": {"type": "string", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}))),
        [format!("FieldValueInvalid {}: Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true", at(".properties[spec].properties[t].type"))]
    );
    assert_eq!(
        crd_errors(spec_schema(json!({"t": {"type": "object", "x-kubernetes-embedded-resource": true}}))),
        [format!("FieldValueRequired {}: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields", at(".properties[spec].properties[t].properties"))]
    );
    // A default for an embedded resource must itself be a resource.
    assert_eq!(
        crd_errors(spec_schema(
            json!({"t": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true, "default": {"kind": "Pod"}}})
        )),
        [format!(
            "FieldValueRequired {}: Required value",
            at(".properties[spec].properties[t].default.apiVersion")
        )]
    );
}

#[test]
fn invalid_patterns() {
    assert_eq!(
        crd_errors(spec_schema(json!({"p": {"type": "string", "pattern": "(unclosed"}}))),
        [format!("FieldValueInvalid {}: Invalid value: \"(unclosed\": must be a valid regular expression, but isn't: error parsing regexp: invalid or unsupported syntax: `(unclosed`", at(".properties[spec].properties[p].pattern"))]
    );
}

#[test]
fn a_schema_is_required_and_must_be_an_object() {
    assert_eq!(
        crd_errors(json!(null)),
        [format!(
            "FieldValueRequired {ROOT}: Required value: schemas are required"
        )]
    );
    assert_eq!(
        crd_errors(json!("object")),
        [format!(
            "FieldValueInvalid {ROOT}: Invalid value: \"object\": must be an object"
        )]
    );
    assert_eq!(
        crd_errors(json!({"type": "object", "properties": {"a": {"type": 5}}})),
        [format!(
            "FieldValueInvalid {}: Invalid value: 5: must be a string",
            at(".properties[a].type")
        )]
    );
}

#[test]
fn unreadable_keywords_are_named_once_nothing_else_is_wrong() {
    // Upstream's structural conversion refuses $schema though no keyword rule does.
    assert_eq!(
        crd_errors(json!({"type": "object", "properties": {"a": {"type": "string", "$schema": "http://json-schema.org/draft-04/schema#"}}})),
        [format!("FieldValueInvalid {ROOT}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported")]
    );
}

#[test]
fn property_schemas_must_be_objects() {
    assert_eq!(
        crd_errors(json!({"type": "object", "properties": {"a": true}})),
        [format!(
            "FieldValueInvalid {}: Invalid value: true: must be an object",
            at(".properties[a]")
        )]
    );
}
