use super::*;
use crate::schema::Node;
use serde_json::json;

fn v3() -> Value {
    json!({"components": {"schemas": {
        "test.Deployment": {"type": "object", "properties": {
            "metadata": {"allOf": [{"$ref": "#/components/schemas/test.ObjectMeta"}], "default": {}},
            "spec": {"$ref": "#/components/schemas/test.DeploymentSpec"}
        }},
        "test.ObjectMeta": {"type": "object", "properties": {
            "name": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-patch-strategy": "merge"}
        }},
        "test.DeploymentSpec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "format": "int32"},
            "selector": {"$ref": "#/components/schemas/test.LabelSelector",
                "x-kubernetes-map-type": "atomic"},
            "containers": {"type": "array",
                "items": {"$ref": "#/components/schemas/test.Container"},
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge"},
            "args": {"type": "array", "items": {"type": "string"}},
            "volumes": {"type": "array", "items": {"type": "object"},
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge,retainKeys"},
            "resources": {"type": "object",
                "additionalProperties": {"$ref": "#/components/schemas/test.Quantity"}}
        }},
        "test.LabelSelector": {"type": "object", "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}
        }},
        "test.Container": {"type": "object", "properties": {
            "name": {"type": "string"},
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "containerPort": {"type": "integer"},
                    "protocol": {"type": "string", "default": "TCP"}}},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["containerPort", "protocol"]},
            "port": {"$ref": "#/components/schemas/test.IntOrString"}
        }},
        "test.IntOrString": {"type": "string", "format": "int-or-string"},
        "test.Quantity": {"type": "string"},
        "test.Alias": {"$ref": "#/components/schemas/test.Container"},
        "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"}
    }}})
}

fn field<'a>(schema: &'a Schema, ty: &str, name: &str) -> Node<'a> {
    let Some(Atom::Struct(s)) = schema.get(ty) else {
        panic!("{ty} is not a struct");
    };
    schema.resolve(&s.fields[name]).unwrap()
}

#[test]
fn references_and_all_of_references_become_named_types() {
    let schema = from_document(&v3()).unwrap();
    let Some(Atom::Struct(d)) = schema.get("test.Deployment") else {
        panic!()
    };
    assert_eq!(d.fields["metadata"], TypeRef::named("test.ObjectMeta"));
    assert_eq!(d.fields["spec"], TypeRef::named("test.DeploymentSpec"));
    assert!(
        schema.get("test.Alias").is_none(),
        "top-level aliases are skipped"
    );
}

#[test]
fn map_type_on_a_reference_overrides_the_named_struct() {
    let schema = from_document(&v3()).unwrap();
    assert!(matches!(
        field(&schema, "test.DeploymentSpec", "selector"),
        Node::Struct { atomic: true, .. }
    ));
    let Some(Atom::Struct(sel)) = schema.get("test.LabelSelector") else {
        panic!()
    };
    assert_eq!(sel.relationship, Relationship::Separable);
    assert!(
        sel.rest.is_none(),
        "properties without additionalProperties are closed"
    );
}

#[test]
fn list_kinds_from_list_type_and_patch_strategy() {
    let schema = from_document(&v3()).unwrap();
    let kind = |ty: &str, name: &str| match field(&schema, ty, name) {
        Node::List { kind, .. } => kind.clone(),
        other => panic!("{name}: {other:?}"),
    };
    let name_key = ListKind::Map {
        keys: vec!["name".into()],
    };
    assert_eq!(kind("test.DeploymentSpec", "containers"), name_key);
    assert_eq!(kind("test.DeploymentSpec", "volumes"), name_key);
    assert_eq!(kind("test.DeploymentSpec", "args"), ListKind::Atomic);
    assert_eq!(kind("test.ObjectMeta", "finalizers"), ListKind::Set);
    assert_eq!(
        kind("test.Container", "ports"),
        ListKind::Map {
            keys: vec!["containerPort".into(), "protocol".into()]
        }
    );
}

#[test]
fn property_defaults_are_kept() {
    let schema = from_document(&v3()).unwrap();
    let Node::List { element, .. } = field(&schema, "test.Container", "ports") else {
        panic!()
    };
    let Ok(Node::Struct { defaults, .. }) = schema.resolve(element) else {
        panic!()
    };
    assert_eq!(defaults.get("protocol"), Some(&json!("TCP")));
    assert!(!defaults.contains_key("containerPort"));
}

#[test]
fn additional_properties_make_a_granular_map() {
    let schema = from_document(&v3()).unwrap();
    let Node::Map { value, atomic } = field(&schema, "test.ObjectMeta", "labels") else {
        panic!()
    };
    assert!(!atomic);
    assert!(matches!(schema.resolve(value), Ok(Node::Scalar)));
}

#[test]
fn int_or_string_and_quantity_are_atomic_untyped() {
    let schema = from_document(&v3()).unwrap();
    assert!(matches!(
        field(&schema, "test.Container", "port"),
        Node::AtomicUntyped
    ));
    assert_eq!(
        schema.get("io.k8s.apimachinery.pkg.api.resource.Quantity"),
        Some(&Atom::Untyped(Untyped::Atomic))
    );
}

#[test]
fn swagger_v2_definitions_are_read() {
    let doc = json!({"definitions": {"T": {"type": "object", "properties": {
        "items": {"type": "array", "items": {"$ref": "#/definitions/U"}}}},
        "U": {"type": "object", "properties": {"a": {"type": "string"}}}}});
    let schema = from_document(&doc).unwrap();
    let Node::List { element, kind } = field(&schema, "T", "items") else {
        panic!()
    };
    assert_eq!(
        *kind,
        ListKind::Atomic,
        "a list of objects without a strategy is atomic"
    );
    assert_eq!(*element, TypeRef::named("U"));
}

#[test]
fn crd_root_with_preserve_unknown_fields_and_int_or_string() {
    let root = json!({"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "nested": {"type": "object", "properties": {"a": {"type": "string"}}}}},
        "port": {"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "anything": {},
        "strict": {"type": "object", "additionalProperties": false}
    }});
    let schema = from_root_schema(&root, "Widget").unwrap();
    let Node::Struct { fields, rest, .. } = field(&schema, "Widget", "spec") else {
        panic!()
    };
    assert!(matches!(schema.resolve(rest.unwrap()), Ok(Node::Deduced)));
    let nested = schema.resolve(&fields["nested"]).unwrap();
    assert!(
        matches!(nested, Node::Struct { rest: Some(_), .. }),
        "preserve-unknown-fields is inherited by descendants"
    );
    assert!(matches!(
        field(&schema, "Widget", "port"),
        Node::AtomicUntyped
    ));
    assert!(matches!(
        field(&schema, "Widget", "anything"),
        Node::Deduced
    ));
    assert!(matches!(
        field(&schema, "Widget", "strict"),
        Node::Struct { rest: None, .. }
    ));
    let Some(Atom::Struct(w)) = schema.get("Widget") else {
        panic!()
    };
    assert!(
        w.rest.is_none(),
        "the root does not preserve unknown fields"
    );
}

#[test]
fn bad_extensions_are_errors() {
    let cases = [
        json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"}),
        json!({"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map"}),
        json!({"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": [1]}),
        json!({"type": "object", "x-kubernetes-map-type": "sometimes"}),
        json!({"type": "array", "items": [{"type": "string"}]}),
        json!({"type": "object", "additionalProperties": "yes"}),
        json!({"type": "tuple"}),
        json!({"type": "object", "properties": {"a": {"$ref": 3}}}),
        json!({"type": "object", "properties": {"a": "string"}}),
    ];
    for case in cases {
        match from_root_schema(&case, "T") {
            Err(Error::Schema(msg)) => assert!(!msg.is_empty()),
            other => panic!("{case} gave {other:?}"),
        }
    }
    assert!(from_document(&json!({"openapi": "3.0.0"})).is_err());
}
