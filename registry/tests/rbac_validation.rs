//! Roles and bindings are validated on write as upstream validates them: malformed ones are
//! refused with 422 Invalid and upstream's causes, a binding's roleRef never changes, a PUT
//! may create any of the four kinds, and names need only be path segments.

mod support;

use registry::options::ListOptions;
use registry::{RegistryError, Subresource};
use serde_json::{json, Value};
use support::{write, Harness};

test_support::both_backends!(
    crate::support::Harness;
    malformed_roles_are_refused,
    role_ref_cannot_change,
);
test_support::embedded_only!(
    crate::support::Harness;
    malformed_bindings_are_refused,
    put_creates_missing_roles_and_bindings,
    names_are_path_segments,
    updates_repeat_role_causes,
);

const RBAC: &str = "rbac.authorization.k8s.io";

fn rbac_object(kind: &str, name: &str, body: Value) -> Value {
    let mut obj = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name}});
    if let (Some(map), Value::Object(fields)) = (obj.as_object_mut(), body) {
        map.extend(fields);
    }
    obj
}

fn plural(kind: &str) -> String {
    format!("{}s", kind.to_lowercase())
}

fn cluster_role_ref(name: &str) -> Value {
    json!({"apiGroup": RBAC, "kind": "ClusterRole", "name": name})
}

fn users(names: &[&str]) -> Value {
    names
        .iter()
        .map(|n| json!({"kind": "User", "apiGroup": RBAC, "name": n}))
        .collect()
}

/// The 422 Status of a refused write: its message and its causes as `field: message`.
fn refusal(result: Result<impl std::fmt::Debug, RegistryError>) -> (String, Vec<String>) {
    let err = result.expect_err("the write should be refused");
    assert!(
        matches!(err, RegistryError::Invalid { .. }),
        "not Invalid: {err:?}"
    );
    let status = serde_json::to_value(err.status()).expect("status json");
    assert_eq!(status["code"], 422);
    assert_eq!(status["reason"], "Invalid");
    let causes = status["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            let field = c["field"].as_str().unwrap_or_default();
            let message = c["message"].as_str().unwrap_or_default();
            format!("{field}: {message}")
        })
        .collect();
    let message = status["message"].as_str().unwrap_or_default().to_string();
    (message, causes)
}

async fn create(h: &Harness, ns: Option<&str>, obj: Value) -> Result<Value, RegistryError> {
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    h.store(RBAC, &plural(&kind))
        .create(ns, obj, &write())
        .await
}

async fn malformed_roles_are_refused(h: &Harness) {
    h.namespace("team").await;
    let no_verbs = rbac_object(
        "Role",
        "reader",
        json!({"rules": [{"apiGroups": [""], "resources": ["pods"]}]}),
    );
    let (message, causes) = refusal(create(h, Some("team"), no_verbs).await);
    assert_eq!(
        message,
        r#"Role.rbac.authorization.k8s.io "reader" is invalid: rules[0].verbs: Required value: verbs must contain at least one value"#
    );
    assert_eq!(
        causes,
        ["rules[0].verbs: Required value: verbs must contain at least one value"]
    );

    let urls = rbac_object(
        "Role",
        "health",
        json!({"rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}),
    );
    let (_, causes) = refusal(create(h, Some("team"), urls).await);
    assert_eq!(
        causes,
        [
            r#"rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#
        ]
    );

    let mixed = rbac_object(
        "ClusterRole",
        "mixed",
        json!({"rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {"resources": ["pods"], "nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            {"verbs": ["list"]},
        ]}),
    );
    let (_, causes) = refusal(create(h, None, mixed).await);
    assert_eq!(
        causes,
        [
            r#"rules[1].nonResourceURLs: Invalid value: []string{"/metrics"}: rules cannot apply to both regular resources and non-resource URLs"#,
            "rules[2].apiGroups: Required value: resource rules must supply at least one api group",
            "rules[2].resources: Required value: resource rules must supply at least one resource",
        ]
    );

    let no_selectors = rbac_object("ClusterRole", "agg", json!({"aggregationRule": {}}));
    let (_, causes) = refusal(create(h, None, no_selectors).await);
    assert_eq!(
        causes,
        ["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"]
    );

    // None of them was stored; a valid ClusterRole with URLs and aggregation is.
    let stored = h
        .store(RBAC, "clusterroles")
        .list(None, &ListOptions::default())
        .await
        .expect("list");
    let names: Vec<&str> = stored["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|r| r["metadata"]["name"].as_str())
        .collect();
    assert!(
        !names.contains(&"mixed") && !names.contains(&"agg"),
        "{names:?}"
    );
    let valid = rbac_object(
        "ClusterRole",
        "monitoring",
        json!({
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}]},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        }),
    );
    create(h, None, valid).await.expect("a valid ClusterRole");
}

async fn malformed_bindings_are_refused(h: &Harness) {
    h.namespace("team").await;
    let bad = rbac_object(
        "RoleBinding",
        "b",
        json!({
            "roleRef": {"apiGroup": "example.com", "kind": "Policy", "name": ""},
            "subjects": [{"kind": "Robot", "name": "r2"}, {"kind": "ServiceAccount", "name": "Bad_Name"}],
        }),
    );
    let (message, causes) = refusal(create(h, Some("team"), bad).await);
    assert!(
        message.starts_with(r#"RoleBinding.rbac.authorization.k8s.io "b" is invalid: [roleRef.apiGroup: Unsupported value: "example.com""#),
        "{message}"
    );
    assert_eq!(causes.len(), 5, "{causes:?}");
    assert_eq!(
        causes[..4],
        [
            r#"roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io""#,
            r#"roleRef.kind: Unsupported value: "Policy": supported values: "Role", "ClusterRole""#,
            "roleRef.name: Required value",
            r#"subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group""#,
        ]
    );
    assert!(causes[4].starts_with(
        r#"subjects[1].name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain"#
    ));

    let to_role = rbac_object(
        "ClusterRoleBinding",
        "cb",
        json!({
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "default"}, {"kind": "Group", "apiGroup": "", "name": "devs"}],
        }),
    );
    let (_, causes) = refusal(create(h, None, to_role).await);
    assert_eq!(
        causes,
        [
            r#"roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#,
            "subjects[0].namespace: Required value",
        ]
    );

    // Upstream's v1 defaults fill in the groups a client left out.
    let defaulted = rbac_object(
        "ClusterRoleBinding",
        "viewers",
        json!({
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "jane"}, {"kind": "ServiceAccount", "name": "default", "namespace": "team"}],
        }),
    );
    let stored = create(h, None, defaulted).await.expect("defaulted binding");
    assert_eq!(stored["roleRef"]["apiGroup"], RBAC);
    assert_eq!(stored["subjects"][0]["apiGroup"], RBAC);
    assert!(stored["subjects"][1].get("apiGroup").is_none());
}

async fn role_ref_cannot_change(h: &Harness) {
    let store = h.store(RBAC, "clusterrolebindings");
    let binding = rbac_object(
        "ClusterRoleBinding",
        "readers",
        json!({"roleRef": cluster_role_ref("view"), "subjects": users(&["jane"])}),
    );
    create(h, None, binding).await.expect("create binding");

    let mut more = store
        .get(None, "readers", &ListOptions::default())
        .await
        .expect("get");
    more["subjects"] = users(&["jane", "joe"]);
    let (updated, _) = store
        .update(None, "readers", more, Subresource::Main, &write())
        .await
        .expect("subjects may change");
    assert_eq!(updated["subjects"][1]["name"], "joe");

    let mut other = updated.clone();
    other["roleRef"] = cluster_role_ref("edit");
    let (message, causes) = refusal(
        store
            .update(None, "readers", other, Subresource::Main, &write())
            .await,
    );
    let cause = r#"roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef"#;
    assert_eq!(
        message,
        format!(r#"ClusterRoleBinding.rbac.authorization.k8s.io "readers" is invalid: {cause}"#)
    );
    assert_eq!(causes, [cause]);
    let kept = store
        .get(None, "readers", &ListOptions::default())
        .await
        .expect("get");
    assert_eq!(kept["roleRef"]["name"], "view");
}

async fn put_creates_missing_roles_and_bindings(h: &Harness) {
    h.namespace("team").await;
    let role = rbac_object(
        "ClusterRole",
        "aggregate-to-ops",
        json!({"rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}]}),
    );
    let (created, _) = h
        .store(RBAC, "clusterroles")
        .update(None, "aggregate-to-ops", role, Subresource::Main, &write())
        .await
        .expect("PUT creates the ClusterRole");
    assert!(!created["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .is_empty());
    h.store(RBAC, "clusterroles")
        .get(None, "aggregate-to-ops", &ListOptions::default())
        .await
        .expect("stored");

    let binding = rbac_object(
        "RoleBinding",
        "ops",
        json!({"roleRef": cluster_role_ref("aggregate-to-ops"), "subjects": users(&["ann"])}),
    );
    h.store(RBAC, "rolebindings")
        .update(Some("team"), "ops", binding, Subresource::Main, &write())
        .await
        .expect("PUT creates the RoleBinding");

    // A PUT that would create a malformed Role is refused like a POST, and stores nothing.
    let bad = rbac_object(
        "Role",
        "empty",
        json!({"rules": [{"apiGroups": [""], "verbs": ["get"]}]}),
    );
    let (_, causes) = refusal(
        h.store(RBAC, "roles")
            .update(Some("team"), "empty", bad, Subresource::Main, &write())
            .await,
    );
    assert_eq!(
        causes,
        ["rules[0].resources: Required value: resource rules must supply at least one resource"]
    );
    let missing = h
        .store(RBAC, "roles")
        .get(Some("team"), "empty", &ListOptions::default())
        .await;
    assert!(
        matches!(missing, Err(RegistryError::NotFound { .. })),
        "{missing:?}"
    );
}

async fn names_are_path_segments(h: &Harness) {
    let rule = json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    create(
        h,
        None,
        rbac_object("ClusterRole", "system:controller:foo", rule.clone()),
    )
    .await
    .expect("a name with colons");
    create(
        h,
        Some("kube-system"),
        rbac_object("Role", "Upper_Case:ok", rule.clone()),
    )
    .await
    .expect("any path segment");
    let binding = json!({"roleRef": cluster_role_ref("system:controller:foo"), "subjects": users(&["system:kube-controller-manager"])});
    create(
        h,
        None,
        rbac_object(
            "ClusterRoleBinding",
            "system:controller:foo",
            binding.clone(),
        ),
    )
    .await
    .expect("a binding name with colons");

    let (_, causes) =
        refusal(create(h, None, rbac_object("ClusterRole", "a/b", rule.clone())).await);
    assert_eq!(
        causes,
        [r#"metadata.name: Invalid value: "a/b": may not contain '/'"#]
    );
    let (_, causes) =
        refusal(create(h, None, rbac_object("ClusterRoleBinding", "..", binding)).await);
    assert_eq!(
        causes,
        [r#"metadata.name: Invalid value: "..": may not be '..'"#]
    );
    let bad_ref = json!({"roleRef": cluster_role_ref("x%y"), "subjects": []});
    let (_, causes) = refusal(
        create(
            h,
            Some("kube-system"),
            rbac_object("RoleBinding", "b", bad_ref),
        )
        .await,
    );
    assert_eq!(
        causes,
        [r#"roleRef.name: Invalid value: "x%y": may not contain '%'"#]
    );
}

/// Upstream's update validation runs the create checks twice: the details list a cause twice,
/// the message once.
async fn updates_repeat_role_causes(h: &Harness) {
    h.namespace("team").await;
    let good = rbac_object(
        "Role",
        "reader",
        json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
    );
    let mut stored = create(h, Some("team"), good).await.expect("create role");
    stored["rules"][0]["verbs"] = json!([]);
    let (message, causes) = refusal(
        h.store(RBAC, "roles")
            .update(Some("team"), "reader", stored, Subresource::Main, &write())
            .await,
    );
    let verbs = "rules[0].verbs: Required value: verbs must contain at least one value";
    assert_eq!(
        message,
        format!(r#"Role.rbac.authorization.k8s.io "reader" is invalid: {verbs}"#)
    );
    assert_eq!(causes, [verbs, verbs]);
}
