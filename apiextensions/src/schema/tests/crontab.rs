//! A realistic CronTab-like schema of some twenty fields, end to end.

use super::{compile, crd_errors, lines};
use serde_json::{json, Value};

pub(super) fn crontab_schema() -> Value {
    // Built in parts: one json! of it all exceeds the macro recursion limit.
    let mut spec = json!({
        "schedule": {"type": "string", "pattern": "^(\\S+\\s+){4}\\S+$"},
        "image": {"type": "string", "minLength": 1},
        "replicas": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 10, "default": 1},
        "suspend": {"type": "boolean", "default": false},
        "concurrencyPolicy": {"type": "string", "enum": ["Allow", "Forbid", "Replace"], "default": "Allow"},
        "startingDeadlineSeconds": {"type": "integer", "format": "int64", "nullable": true},
        "timeZone": {"type": "string"},
        "command": {"type": "array", "items": {"type": "string"}},
        "args": {"type": "array", "maxItems": 16, "items": {"type": "string"}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "granular"},
        "backoffLimit": {"type": "integer", "minimum": 0, "default": 6},
        "ttlSecondsAfterFinished": {"type": "integer", "minimum": 0},
        "notifyEmail": {"type": "string", "format": "email"},
        "owner": {"type": "string", "format": "uuid"},
        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    });
    let more = json!({
        "env": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"},
                "value": {"type": "string"},
            }},
        },
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
            "items": {"type": "object", "required": ["containerPort"], "properties": {
                "containerPort": {"type": "integer", "minimum": 1, "maximum": 65535},
                "protocol": {"type": "string", "enum": ["TCP", "UDP", "SCTP"], "default": "TCP"},
            }},
        },
        "resources": {"type": "object", "additionalProperties": {
            "x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}],
        }},
        "retry": {"type": "object", "default": {}, "properties": {
            "limit": {"type": "integer", "default": 3},
            "delay": {"type": "string", "format": "duration", "default": "10s"},
        }},
    });
    if let (Some(spec), Some(more)) = (spec.as_object_mut(), more.as_object()) {
        spec.extend(more.clone());
    }
    json!({
        "type": "object",
        "description": "CronTab runs a command on a schedule.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 63}}},
            "spec": {"type": "object", "required": ["schedule", "image"], "properties": spec},
            "status": {"type": "object", "properties": {
                "lastScheduleTime": {"type": "string", "format": "date-time"},
                "active": {"type": "integer"},
            }},
        },
    })
}

pub(super) fn crontab() -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "my-cron", "namespace": "default", "labels": {"app": "cron"}},
        "spec": {
            "schedule": "*/5 * * * *",
            "image": "busybox:1.36",
            "command": ["sh", "-c"],
            "args": ["date"],
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "ports": [{"containerPort": 8080}, {"containerPort": 8080, "protocol": "UDP"}],
            "tags": ["nightly", "backup"],
            "resources": {"cpu": "500m", "memory": 1024},
            "labels": {"team": "infra"},
            "ttlSecondsAfterFinished": 100,
            "notifyEmail": "ops@example.com",
            "owner": "123e4567-e89b-12d3-a456-426614174000",
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
            "extra": {"anything": {"goes": [1, 2]}},
            "startingDeadlineSeconds": null,
        },
        "status": {"lastScheduleTime": "2024-05-01T10:00:00Z", "active": 1},
    })
}

#[test]
fn the_schema_is_accepted() {
    assert_eq!(crd_errors(crontab_schema()), Vec::<String>::new());
}

#[test]
fn a_valid_crontab_is_defaulted_and_accepted() {
    let schema = compile(&crontab_schema());
    let mut obj = crontab();
    schema.apply_defaults(&mut obj);
    let spec = &obj["spec"];
    assert_eq!(spec["replicas"], json!(1));
    assert_eq!(spec["suspend"], json!(false));
    assert_eq!(spec["concurrencyPolicy"], json!("Allow"));
    assert_eq!(spec["backoffLimit"], json!(6));
    assert_eq!(spec["retry"], json!({"limit": 3, "delay": "10s"}));
    assert_eq!(
        spec["ports"][0],
        json!({"containerPort": 8080, "protocol": "TCP"})
    );
    assert_eq!(lines(&schema.validate(&obj)), Vec::<String>::new());
}

#[test]
fn an_invalid_crontab_gets_every_cause() {
    let schema = compile(&crontab_schema());
    let mut obj = crontab();
    obj["spec"]["replicas"] = json!(20);
    obj["spec"]["schedule"] = json!("often");
    obj["spec"]["concurrencyPolicy"] = json!("Sometimes");
    obj["spec"]["env"] = json!([{"name": "A"}, {"name": "A"}]);
    obj["spec"]["tags"] = json!(["x", "x"]);
    obj["spec"]["template"] = json!({"kind": "Pod"});
    obj["spec"]["resources"] = json!({"cpu": true});
    obj["spec"].as_object_mut().map(|s| s.remove("image"));
    assert_eq!(
        lines(&schema.validate(&obj)),
        [
            "FieldValueRequired spec.image: Required value",
            "FieldValueNotSupported spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
            "FieldValueInvalid spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10",
            "FieldValueTypeInvalid spec.resources.cpu: Invalid value: \"boolean\": spec.resources.cpu in body must be of type integer,string: \"boolean\"",
            "FieldValueInvalid spec.resources.cpu: Invalid value: \"\": \"spec.resources.cpu\" must validate at least one schema (anyOf)",
            "FieldValueTypeInvalid spec.resources.cpu: Invalid value: \"boolean\": spec.resources.cpu in body must be of type integer: \"boolean\"",
            "FieldValueInvalid spec.schedule: Invalid value: \"often\": spec.schedule in body should match '^(\\S+\\s+){4}\\S+$'",
            "FieldValueRequired spec.template.apiVersion: Required value",
            "FieldValueDuplicate spec.env[1]: Duplicate value: map[string]interface {}{\"name\":\"A\"}",
            "FieldValueDuplicate spec.tags[1]: Duplicate value: \"x\"",
        ]
    );
}
