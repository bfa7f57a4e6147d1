//! Defaulting, and pruning as the decoder does it.

use super::{compile, spec_schema};
use serde_json::json;

#[test]
fn absent_fields_get_defaults_present_ones_keep_their_values() {
    let schema = compile(&spec_schema(json!({
        "replicas": {"type": "integer", "default": 1},
        "image": {"type": "string", "default": "nginx"},
        "paused": {"type": "boolean", "default": false},
    })));
    let mut obj = json!({"spec": {"image": "redis"}});
    schema.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"image": "redis", "replicas": 1, "paused": false}})
    );
}

#[test]
fn defaults_nest_and_defaulted_objects_are_defaulted_in_turn() {
    let schema = compile(&spec_schema(json!({
        "strategy": {"type": "object", "default": {}, "properties": {
            "type": {"type": "string", "default": "Rolling"},
            "rolling": {"type": "object", "properties": {"maxSurge": {"type": "integer", "default": 25}}},
        }},
    })));
    let mut obj = json!({"spec": {}});
    schema.apply_defaults(&mut obj);
    assert_eq!(obj, json!({"spec": {"strategy": {"type": "Rolling"}}}));

    let mut obj = json!({"spec": {"strategy": {"rolling": {}}}});
    schema.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"strategy": {"type": "Rolling", "rolling": {"maxSurge": 25}}}})
    );
}

#[test]
fn array_items_and_map_values_are_defaulted() {
    let schema = compile(&spec_schema(json!({
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "protocol": {"type": "string", "default": "TCP"},
            "port": {"type": "integer"},
        }}},
        "volumes": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "readOnly": {"type": "boolean", "default": true},
        }}},
    })));
    let mut obj = json!({"spec": {
        "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}],
        "volumes": {"data": {}, "logs": {"readOnly": false}},
    }});
    schema.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {
            "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
            "volumes": {"data": {"readOnly": true}, "logs": {"readOnly": false}},
        }})
    );
}

#[test]
fn null_is_defaulted_only_where_null_is_not_allowed() {
    let schema = compile(&spec_schema(json!({
        "strict": {"type": "string", "default": "x"},
        "loose": {"type": "string", "nullable": true, "default": "y"},
        "tags": {"type": "array", "items": {"type": "string", "default": "none"}},
        "env": {"type": "object", "additionalProperties": {"type": "string", "default": "unset"}},
    })));
    let mut obj =
        json!({"spec": {"strict": null, "loose": null, "tags": ["a", null], "env": {"A": null}}});
    schema.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"strict": "x", "loose": null, "tags": ["a", "none"], "env": {"A": "unset"}}})
    );
}

#[test]
fn nothing_is_defaulted_under_schemaless_preserved_fields() {
    let schema = compile(&spec_schema(json!({
        "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "known": {"type": "object", "properties": {"a": {"type": "integer", "default": 1}}},
        }},
    })));
    let mut obj = json!({"spec": {"raw": {"known": {}, "other": {"a": null}}}});
    schema.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"raw": {"known": {"a": 1}, "other": {"a": null}}}})
    );
}

#[test]
fn defaults_are_copies() {
    let schema = compile(&spec_schema(json!({
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "meta": {"type": "object", "default": {"k": "v"}, "x-kubernetes-preserve-unknown-fields": true},
        }}},
    })));
    let mut obj = json!({"spec": {"items": [{}, {}]}});
    schema.apply_defaults(&mut obj);
    obj["spec"]["items"][0]["meta"]["k"] = json!("changed");
    assert_eq!(obj["spec"]["items"][1]["meta"], json!({"k": "v"}));
}

#[test]
fn pruning_drops_unknown_fields_and_unwanted_nulls() {
    let schema = compile(&spec_schema(json!({
        "replicas": {"type": "integer"},
        "opt": {"type": "string", "nullable": true},
        "withDefault": {"type": "string", "default": "d"},
        "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}},
    })));
    let mut obj = json!({
        "apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "a"}, "status": {"x": 1},
        "spec": {
            "replicas": null, "opt": null, "withDefault": null, "extra": 1, "raw": {"anything": [1]},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "junk": 1},
        },
    });
    schema.prune(&mut obj);
    assert_eq!(
        obj,
        json!({
            "apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "a"},
            "spec": {
                "opt": null, "withDefault": null, "raw": {"anything": [1]},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
            },
        })
    );
}
