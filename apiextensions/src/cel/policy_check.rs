//! Type checking of admission policies' expressions against the schema of a kind they match
//! (upstream's validating.TypeChecker, whose findings a policy's `status.typeChecking`
//! reports): `object` and `oldObject` are typed by the kind's schema, `params` by its
//! paramKind's, `authorizer` by the authorizer library, `request` and `namespaceObject` by
//! upstream's hand-made AdmissionRequest and Namespace types; `variables` is `dyn`. An
//! expression that selects a field the kind does not declare, or calls a function on values
//! it does not take, is reported in cel-go's words; nothing about it stops the policy from
//! acting.

use std::sync::LazyLock;

use serde_json::{json, Map, Value as Json};

use super::check_lib::{authorizer_ty, resource_check_ty};
use super::schema::{self, Node};
use super::types::Ty;
use super::{check, env, Build};

/// How deep a schema is followed: below, values are untyped. Built-in schemas are inlined
/// with their recursion cut, but may still nest deeply (a CRD's JSONSchemaProps).
const MAX_DEPTH: usize = 32;

/// upstream's AdmissionRequest type of `request` (BuildRequestType): no uid, no objects.
static REQUEST: LazyLock<ObjectType> = LazyLock::new(|| {
    let string = json!({"type": "string"});
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let gvk = json!({"type": "object", "properties": {
        "group": string, "version": string, "kind": string}});
    let gvr = json!({"type": "object", "properties": {
        "group": string, "version": string, "resource": string}});
    ObjectType::new(&json!({"type": "object", "properties": {
        "kind": gvk, "resource": gvr, "subResource": string,
        "requestKind": gvk, "requestResource": gvr, "requestSubResource": string,
        "name": string, "namespace": string, "operation": string,
        "userInfo": {"type": "object", "properties": {
            "username": string, "uid": string, "groups": strings,
            "extra": {"type": "object", "additionalProperties": strings}}},
        "dryRun": {"type": "boolean"},
        "options": {}}}))
});

/// upstream's Namespace type of `namespaceObject` (BuildNamespaceType).
static NAMESPACE: LazyLock<ObjectType> = LazyLock::new(|| {
    let string = json!({"type": "string"});
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let time = json!({"type": "string", "format": "date-time"});
    let labels = json!({"type": "object", "additionalProperties": {"type": "string"}});
    ObjectType::new(&json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {
            "name": string, "generateName": string, "namespace": string,
            "labels": labels, "annotations": labels, "UID": string,
            "creationTimestamp": time, "deletionGracePeriodSeconds": {"type": "integer"},
            "deletionTimestamp": time, "generation": {"type": "integer"},
            "resourceVersion": string, "finalizers": strings}},
        "spec": {"type": "object", "properties": {"finalizers": strings}},
        "status": {"type": "object", "properties": {
            "conditions": {"type": "array", "items": {"type": "object", "properties": {
                "status": string, "type": string, "lastTransitionTime": time,
                "message": string, "reason": string}}},
            "phase": string}}}}))
});

/// The type `object` has for a kind: its schema.
pub struct ObjectType {
    node: Node,
}

impl ObjectType {
    /// The type of objects of `schema`, a kind's schema with its references inlined.
    pub fn new(schema: &Json) -> Self {
        let prepared = prepare(schema, 0);
        let mut build = Build {
            causes: Vec::new(),
            schema_errors: 0,
        };
        Self {
            node: schema::build(&prepared, "", false, None, &mut build),
        }
    }
}

/// Type-checks a policy's expression with `object` and `params` typed as they say (`None`:
/// `dyn`). Err holds the issues as cel-go renders them (`ERROR: <input>:1:8: undefined field
/// 'x'` with the line and a caret), or why the expression does not compile.
pub fn check_policy_expression(
    source: &str,
    object: Option<&ObjectType>,
    params: Option<&ObjectType>,
) -> Result<(), String> {
    let program = env::env()
        .compile(source)
        .map_err(|errors| errors.to_string())?;
    let object = object.map_or(Ty::Dyn, |o| Ty::of(&o.node));
    let params = params.map_or(Ty::Dyn, |p| Ty::of(&p.node));
    let roots = [
        ("object", object),
        ("oldObject", object),
        ("request", Ty::of(&REQUEST.node)),
        ("params", params),
        ("namespaceObject", Ty::of(&NAMESPACE.node)),
        ("variables", Ty::Dyn),
        ("authorizer", authorizer_ty()),
        ("authorizer.requestResource", resource_check_ty()),
    ];
    check::check_with(&program, source, &roots, true).map(|_| ())
}

/// The parts of a kind's schema that type its values, followed to `MAX_DEPTH`: an int-or-
/// string is either, an object that keeps unknown fields and declares none is untyped, and
/// rules of the schema (not the policy's) are left out.
fn prepare(schema: &Json, depth: usize) -> Json {
    let mut out = Map::new();
    let Json::Object(map) = schema else {
        return Json::Object(out);
    };
    if depth > MAX_DEPTH {
        return Json::Object(out);
    }
    let int_or_string = map.get("format").and_then(Json::as_str) == Some("int-or-string")
        || map.get("x-kubernetes-int-or-string") == Some(&Json::Bool(true));
    if int_or_string {
        out.insert("x-kubernetes-int-or-string".into(), Json::Bool(true));
        return Json::Object(out);
    }
    let open = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Json::Bool(true))
        && !map.contains_key("properties")
        && !map.contains_key("additionalProperties");
    for (key, value) in map {
        match key.as_str() {
            "type" if open => {}
            "type"
            | "format"
            | "enum"
            | "required"
            | "maxLength"
            | "maxItems"
            | "maxProperties"
            | "x-kubernetes-list-type"
            | "x-kubernetes-list-map-keys" => {
                out.insert(key.clone(), value.clone());
            }
            "properties" => {
                let properties = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, property)| (name.clone(), prepare(property, depth + 1)))
                    .collect();
                out.insert(key.clone(), Json::Object(properties));
            }
            "items" | "additionalProperties" if value.is_object() => {
                out.insert(key.clone(), prepare(value, depth + 1));
            }
            _ => {}
        }
    }
    Json::Object(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment() -> ObjectType {
        ObjectType::new(&json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {
                "name": {"type": "string"}, "namespace": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "strategy": {"type": "object", "properties": {
                    "rollingUpdate": {"type": "object", "properties": {
                        "maxSurge": {"type": "string", "format": "int-or-string"}}}}},
                "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}))
    }

    #[test]
    fn fields_the_kind_lacks_are_reported_as_cel_go_does() {
        let d = deployment();
        let ok = [
            "object.spec.replicas <= 5",
            "object.metadata.namespace == 'x' && object.metadata.labels['a'] == 'b'",
            "object.spec.strategy.rollingUpdate.maxSurge == 1",
            "object.spec.template.anything.goes",
            "has(oldObject.spec) && variables.anything && params.x == request.name",
            "request.userInfo.username == 'a' && 'g' in request.userInfo.groups && request.operation == 'CREATE'",
            "namespaceObject.metadata.labels['env'] == 'prod' && request.kind.group == ''",
            "authorizer.group('').resource('secrets').namespace(request.namespace).check('list').allowed()",
            "authorizer.requestResource.check('get').reason() == ''",
            "authorizer.serviceAccount('a', 'b').path('/x').check('get').errored()",
        ];
        for source in ok {
            assert_eq!(
                check_policy_expression(source, Some(&d), None),
                Ok(()),
                "{source}"
            );
        }
        assert_eq!(
            check_policy_expression("object.spec.replicas.foo == 1", None, None),
            Ok(())
        );
        let issue = check_policy_expression("object.spec.replicaz > 1", Some(&d), None)
            .expect_err("no replicaz");
        assert_eq!(
            issue,
            "ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz > 1\n | ...........^"
        );
        let issue = check_policy_expression("object.spec.replicas == 'x'", Some(&d), None)
            .expect_err("int and string");
        assert!(
            issue.contains("found no matching overload for '_==_' applied to '(int, string)'"),
            "{issue}"
        );
        let issue =
            check_policy_expression("authorizer.group(1)", Some(&d), None).expect_err("an int");
        assert!(
            issue.contains("found no matching overload for 'group'"),
            "{issue}"
        );
        assert!(check_policy_expression("object.(", Some(&d), None).is_err());
        let issue = check_policy_expression("request.user == 'a'", Some(&d), None)
            .expect_err("no such request field");
        assert!(issue.contains("undefined field 'user'"), "{issue}");
        // params typed by the paramKind's schema
        let config = ObjectType::new(&json!({"type": "object", "properties": {
            "data": {"type": "object", "additionalProperties": {"type": "string"}}}}));
        let max = "object.spec.replicas <= int(params.data.max)";
        assert_eq!(
            check_policy_expression(max, Some(&d), Some(&config)),
            Ok(())
        );
        let issue = check_policy_expression("params.spec.max == 1", Some(&d), Some(&config))
            .expect_err("a ConfigMap has no spec");
        assert!(issue.contains("undefined field 'spec'"), "{issue}");
    }

    #[test]
    fn deep_schemas_are_cut() {
        let mut schema = json!({"type": "string"});
        for _ in 0..100 {
            schema = json!({"type": "object", "properties": {"a": schema}});
        }
        let deep = ObjectType::new(&schema);
        let path = format!("object{}", ".a".repeat(90));
        assert_eq!(
            check_policy_expression(&format!("{path}.b"), Some(&deep), None),
            Ok(())
        );
        assert!(check_policy_expression("object.b", Some(&deep), None).is_err());
    }
}
