use super::*;
use serde_json::json;
use structured_merge::from_openapi::from_document;
use structured_merge::schema::TypeRef;
use structured_merge::CompareOptions;

fn typed() -> std::sync::Arc<TypedSchema> {
    let doc = json!({"definitions": {
        "Deployment": {"type": "object", "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "properties": {
                "name": {"type": "string"},
                "namespace": {"type": "string"},
                "uid": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                "managedFields": {"type": "array", "items": {"type": "object"}}
            }},
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "paused": {"type": "boolean"},
                "containers": {"type": "array",
                    "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "image": {"type": "string"}}},
                    "x-kubernetes-patch-merge-key": "name",
                    "x-kubernetes-patch-strategy": "merge"}
            }},
            "status": {"type": "object", "properties": {"ready": {"type": "integer"}}}
        }}
    }});
    std::sync::Arc::new(TypedSchema {
        schema: from_document(&doc).expect("schema"),
        root: TypeRef::named("Deployment"),
        options: CompareOptions::default(),
    })
}

fn manager(typed: &std::sync::Arc<TypedSchema>) -> FieldManager {
    FieldManager {
        typed: typed.clone(),
        api_version: "apps/v1".into(),
        subresource: "",
        ignored: Set::from_paths([vec![PathElement::field("status")]]),
    }
}

fn deployment(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": replicas, "containers": [{"name": "app", "image": image}]}
    })
}

fn managers(obj: &Value) -> Vec<(String, String, Value)> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or_default().to_string(),
                        e["operation"].as_str().unwrap_or_default().to_string(),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_create_records_an_update_entry_without_server_metadata() {
    let typed = typed();
    let mut obj = deployment(1, "nginx");
    object::meta_mut(&mut obj).insert("uid".into(), json!("u-1"));
    manager(&typed).update(None, &mut obj, None, "kubectl-create");
    let entries = managers(&obj);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].0, "kubectl-create");
    assert_eq!(entries[0].1, "Update");
    assert_eq!(
        entries[0].2["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"],
        json!({".": {}, "f:name": {}, "f:image": {}})
    );
    assert_eq!(entries[0].2["f:spec"]["f:replicas"], json!({}));
    assert!(
        entries[0].2.get("f:metadata").is_none(),
        "server metadata is nobody's"
    );
    let entry = &obj["metadata"]["managedFields"][0];
    assert_eq!(entry["apiVersion"], "apps/v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry["time"].as_str().is_some_and(|t| t.ends_with('Z')));
}

#[test]
fn an_update_takes_what_it_changed_from_the_creator() {
    let typed = typed();
    let fm = manager(&typed);
    let mut live = deployment(1, "nginx");
    fm.update(None, &mut live, None, "creator");
    let mut new = deployment(3, "nginx");
    fm.update(Some(&live), &mut new, None, "scaler");
    let entries = managers(&new);
    let scaler = entries.iter().find(|e| e.0 == "scaler").expect("scaler");
    assert_eq!(scaler.2, json!({"f:spec": {"f:replicas": {}}}));
    let creator = entries.iter().find(|e| e.0 == "creator").expect("creator");
    assert!(creator.2["f:spec"].get("f:replicas").is_none());
}

#[test]
fn updates_of_an_unmanaged_object_stay_unmanaged_and_a_reset_sticks() {
    let typed = typed();
    let fm = manager(&typed);
    let mut live = deployment(1, "nginx");
    fm.update(None, &mut live, None, "creator");
    let mut new = deployment(2, "nginx");
    fm.update(Some(&live), &mut new, Some(json!([{}])), "resetter");
    assert!(new.pointer("/metadata/managedFields").is_none());
    let mut later = deployment(3, "nginx");
    fm.update(Some(&new), &mut later, None, "someone");
    assert!(later.pointer("/metadata/managedFields").is_none());
}

#[test]
fn apply_creates_conflicts_and_forces() {
    let typed = typed();
    let fm = manager(&typed);
    let created = fm
        .apply(None, &deployment(1, "nginx"), "kubectl", false)
        .expect("apply creates");
    assert_eq!(created["spec"]["replicas"], 1);
    let entries = managers(&created);
    assert_eq!(
        (entries[0].0.as_str(), entries[0].1.as_str()),
        ("kubectl", "Apply")
    );

    let mut scaled = deployment(5, "nginx");
    object::meta_mut(&mut scaled).insert(
        "managedFields".into(),
        created["metadata"]["managedFields"].clone(),
    );
    fm.update(Some(&created), &mut scaled, None, "kubectl-scale");

    let err = fm
        .apply(Some(&scaled), &deployment(2, "nginx"), "kubectl", false)
        .expect_err("conflict");
    let status = err.status();
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-scale\" using apps/v1: .spec.replicas"
    );
    let causes = status.details.expect("details").causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].kind, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".spec.replicas");
    assert_eq!(
        causes[0].message,
        "conflict with \"kubectl-scale\" using apps/v1"
    );

    let forced = fm
        .apply(Some(&scaled), &deployment(2, "nginx"), "kubectl", true)
        .expect("force");
    assert_eq!(forced["spec"]["replicas"], 2);
    assert!(
        managers(&forced).iter().all(|e| e.0 != "kubectl-scale"),
        "the scaler lost its only field: {:?}",
        managers(&forced)
    );
}

#[test]
fn apply_checks_its_configuration() {
    let typed = typed();
    let mut config = deployment(1, "nginx");
    object::meta_mut(&mut config).insert("managedFields".into(), json!([]));
    let err = manager(&typed)
        .apply(None, &config, "m", false)
        .expect_err("managedFields");
    assert_eq!(err.code(), 400);
    assert_eq!(err.to_string(), "metadata.managedFields must be nil");
}

#[test]
fn client_side_apply_upgrades_without_conflicts_for_kubectl_only() {
    let typed = typed();
    let fm = manager(&typed);
    let mut csa = deployment(2, "nginx");
    let last = serde_json::to_string(&deployment(2, "nginx")).expect("json");
    object::meta_mut(&mut csa).insert(
        "annotations".into(),
        json!({ last_applied::ANNOTATION: format!("{last}\n") }),
    );
    fm.update(None, &mut csa, None, "kubectl-client-side-apply");

    let mut config = deployment(3, "nginx");
    object::meta_mut(&mut config).insert("annotations".into(), json!({}));
    let other = fm.apply(Some(&csa), &config, "helm", false);
    assert_eq!(other.map(|_| ()).map_err(|e| e.code()), Err(409));

    let upgraded = fm
        .apply(Some(&csa), &config, KUBECTL, false)
        .expect("kubectl upgrades");
    assert_eq!(upgraded["spec"]["replicas"], 3);
    let annotation = upgraded["metadata"]["annotations"][last_applied::ANNOTATION]
        .as_str()
        .expect("kept");
    let synced: Value = serde_json::from_str(annotation).expect("json");
    assert_eq!(synced["spec"]["replicas"], 3);
}

#[test]
fn many_one_off_updaters_are_capped() {
    let typed = typed();
    let fm = manager(&typed);
    let mut obj = deployment(0, "nginx");
    fm.update(None, &mut obj, None, "creator");
    for i in 1..=14 {
        let mut next = obj.clone();
        let meta = object::meta_mut(&mut next);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        labels[format!("l{i}")] = json!("x");
        fm.update(Some(&obj), &mut next, None, &format!("m{i}"));
        obj = next;
    }
    let entries = managers(&obj);
    assert!(entries.len() <= 10, "{}", entries.len());
    assert!(
        entries.iter().any(|e| e.0 == "ancient-changes"),
        "{entries:?}"
    );
}

#[test]
fn conflicts_with_several_managers_are_listed_by_manager() {
    let conflicts = structured_merge::Conflicts(vec![
        structured_merge::Conflict {
            manager: r#"{"manager":"a","operation":"Apply"}"#.into(),
            path: Path(vec![PathElement::field("spec"), PathElement::field("x")]),
        },
        structured_merge::Conflict {
            manager:
                r#"{"manager":"b","operation":"Update","apiVersion":"v1","subresource":"status"}"#
                    .into(),
            path: Path(vec![PathElement::field("status")]),
        },
    ]);
    let err = conflict_error(&conflicts);
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.x\nconflicts with \"b\" with subresource \"status\" using v1:\n- .status"
    );
}
