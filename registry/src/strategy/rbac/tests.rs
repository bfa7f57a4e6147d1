use serde_json::{json, Value};

use super::{BindingStrategy, RoleStrategy};
use crate::error::Cause;
use crate::strategy::Strategy;

/// Each cause as a Status detail prints it: `field: message`.
fn messages(causes: Vec<Cause>) -> Vec<String> {
    causes.iter().map(Cause::full_message).collect()
}

fn role(rules: Value) -> Value {
    json!({"metadata": {"name": "r", "namespace": "ns"}, "rules": rules})
}

fn role_causes(rules: Value) -> Vec<String> {
    messages(RoleStrategy::role().validate(&role(rules)))
}

fn cluster_role_causes(obj: Value) -> Vec<String> {
    messages(RoleStrategy::cluster_role().validate(&obj))
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name})
}

fn binding(role_ref: Value, subjects: Value) -> Value {
    json!({"metadata": {"name": "b"}, "roleRef": role_ref, "subjects": subjects})
}

fn cluster_role_ref(name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name})
}

fn role_binding_causes(obj: Value) -> Vec<String> {
    messages(BindingStrategy::role_binding().validate(&obj))
}

fn cluster_binding_causes(obj: Value) -> Vec<String> {
    messages(BindingStrategy::cluster_role_binding().validate(&obj))
}

#[test]
fn valid_rules_pass() {
    assert!(role_causes(json!([
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["*"]},
    ]))
    .is_empty());
    assert!(cluster_role_causes(json!({
        "metadata": {"name": "system:discovery"},
        "rules": [{"nonResourceURLs": ["/api", "/api/*"], "verbs": ["get"]}],
    }))
    .is_empty());
}

#[test]
fn rule_needs_verbs() {
    assert_eq!(
        role_causes(json!([{"apiGroups": [""], "resources": ["pods"]}])),
        ["rules[0].verbs: Required value: verbs must contain at least one value"]
    );
    assert_eq!(
        role_causes(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": []}])),
        ["rules[0].verbs: Required value: verbs must contain at least one value"]
    );
}

#[test]
fn resource_rule_needs_groups_and_resources() {
    assert_eq!(
        role_causes(json!([
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {"verbs": ["get"]},
        ])),
        [
            "rules[1].apiGroups: Required value: resource rules must supply at least one api group",
            "rules[1].resources: Required value: resource rules must supply at least one resource",
        ]
    );
}

#[test]
fn namespaced_rules_cannot_name_urls() {
    assert_eq!(
        role_causes(json!([{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}])),
        [
            r#"rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#
        ]
    );
}

#[test]
fn rules_cannot_mix_resources_and_urls() {
    let mixed = json!({
        "metadata": {"name": "mixed"},
        "rules": [{"resources": ["pods"], "nonResourceURLs": ["/a", "/b"], "verbs": ["get"]}],
    });
    assert_eq!(
        cluster_role_causes(mixed),
        [
            r#"rules[0].nonResourceURLs: Invalid value: []string{"/a", "/b"}: rules cannot apply to both regular resources and non-resource URLs"#
        ]
    );
    // Both problems of a namespaced rule, after the missing verbs.
    assert_eq!(
        role_causes(json!([{"resourceNames": ["x"], "nonResourceURLs": ["/a"]}])),
        [
            "rules[0].verbs: Required value: verbs must contain at least one value",
            r#"rules[0].nonResourceURLs: Invalid value: []string{"/a"}: namespaced rules cannot apply to non-resource URLs"#,
            r#"rules[0].nonResourceURLs: Invalid value: []string{"/a"}: rules cannot apply to both regular resources and non-resource URLs"#,
        ]
    );
}

#[test]
fn aggregation_rule_needs_selectors() {
    let role = |rule: Value| json!({"metadata": {"name": "agg"}, "aggregationRule": rule});
    assert_eq!(
        cluster_role_causes(role(json!({}))),
        ["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"]
    );
    assert!(cluster_role_causes(role(Value::Null)).is_empty());
    assert!(cluster_role_causes(role(json!({"clusterRoleSelectors": [
        {"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}},
        {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
    ]})))
    .is_empty());
}

#[test]
fn aggregation_selectors_are_valid_label_selectors() {
    let role = |selector: Value| json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [selector]}});
    let path = "aggregationRule.clusterRoleSelectors[0]";
    assert_eq!(
        cluster_role_causes(role(json!({"matchExpressions": [{"key": "a", "operator": "In"}]}))),
        [
            format!("{path}.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
            format!(r#"{path}: Invalid value: "null": invalid label selector."#),
        ]
    );
    assert_eq!(
        cluster_role_causes(role(json!({"matchExpressions": [
            {"key": "a", "operator": "Exists", "values": ["x"]},
        ]}))),
        [
            format!("{path}.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
            format!(r#"{path}: Invalid value: "null": invalid label selector."#),
        ]
    );
    assert_eq!(
        cluster_role_causes(role(
            json!({"matchExpressions": [{"key": "a", "operator": "Near"}]})
        )),
        [
            format!(
                r#"{path}.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator"#
            ),
            format!(r#"{path}: Invalid value: "null": invalid label selector."#),
        ]
    );
    let bad_value = cluster_role_causes(role(json!({"matchLabels": {"tier": "a b"}})));
    assert_eq!(bad_value.len(), 2, "{bad_value:?}");
    assert!(bad_value[0].starts_with(&format!(
        r#"{path}.matchLabels: Invalid value: "a b": a valid label must be"#
    )));
}

#[test]
fn update_keeps_bad_selector_values_an_old_cluster_role_had() {
    let with_value = |value: &str| {
        json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchExpressions": [{"key": "k", "operator": "In", "values": [value]}]},
        ]}})
    };
    let strategy = RoleStrategy::cluster_role();
    let value_cause = r#"aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]: Invalid value: "c d""#;
    let fresh = messages(strategy.validate_update(&with_value("c d"), &with_value("ok")));
    assert!(
        fresh.iter().any(|m| m.starts_with(value_cause)),
        "{fresh:?}"
    );
    let kept = messages(strategy.validate_update(&with_value("a b"), &with_value("c d")));
    assert!(!kept.iter().any(|m| m.contains(".values[0]")), "{kept:?}");
}

#[test]
fn updates_list_create_causes_twice() {
    let bad = role(json!([{"apiGroups": [""], "resources": ["pods"]}]));
    let good = role(json!([]));
    let verbs = "rules[0].verbs: Required value: verbs must contain at least one value";
    assert_eq!(
        messages(RoleStrategy::role().validate_update(&bad, &good)),
        [verbs, verbs]
    );
    assert!(RoleStrategy::role().validate_update(&good, &bad).is_empty());
}

#[test]
fn all_four_kinds_are_created_by_put() {
    assert!(RoleStrategy::role().allow_create_on_update());
    assert!(RoleStrategy::cluster_role().allow_create_on_update());
    assert!(BindingStrategy::role_binding().allow_create_on_update());
    assert!(BindingStrategy::cluster_role_binding().allow_create_on_update());
}

#[test]
fn valid_bindings_pass() {
    let subjects = json!([
        user("alice"),
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"},
        {"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"},
    ]);
    assert!(cluster_binding_causes(binding(
        cluster_role_ref("system:basic-user"),
        subjects.clone()
    ))
    .is_empty());
    let role_ref = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"});
    assert!(role_binding_causes(binding(role_ref, subjects)).is_empty());
    // A namespaced binding's service account defaults to the binding's namespace.
    let sa = json!([{"kind": "ServiceAccount", "name": "builder"}]);
    assert!(role_binding_causes(binding(cluster_role_ref("edit"), sa)).is_empty());
}

#[test]
fn role_ref_group_kind_and_name() {
    let role_ref = json!({"apiGroup": "example.com", "kind": "Policy", "name": "a/b"});
    assert_eq!(
        role_binding_causes(binding(role_ref.clone(), json!([]))),
        [
            r#"roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io""#,
            r#"roleRef.kind: Unsupported value: "Policy": supported values: "Role", "ClusterRole""#,
            r#"roleRef.name: Invalid value: "a/b": may not contain '/'"#,
        ]
    );
    assert_eq!(
        cluster_binding_causes(binding(role_ref, json!([])))[1],
        r#"roleRef.kind: Unsupported value: "Policy": supported values: "ClusterRole""#
    );
    let to_role = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ".."});
    assert_eq!(
        cluster_binding_causes(binding(to_role, json!([]))),
        [
            r#"roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#,
            r#"roleRef.name: Invalid value: "..": may not be '..'"#,
        ]
    );
    assert_eq!(
        role_binding_causes(binding(cluster_role_ref(""), json!([]))),
        ["roleRef.name: Required value"]
    );
}

#[test]
fn subjects() {
    let subjects = json!([
        {"kind": "Robot", "name": "r2"},
        {"kind": "User", "apiGroup": "", "name": ""},
        {"kind": "Group", "apiGroup": "example.com", "name": "g"},
        {"kind": "ServiceAccount", "apiGroup": "v1", "name": "Bad_Name"},
    ]);
    assert_eq!(
        cluster_binding_causes(binding(cluster_role_ref("view"), subjects)),
        [
            r#"subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group""#,
            "subjects[1].name: Required value",
            r#"subjects[1].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io""#,
            r#"subjects[2].apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io""#,
            r#"subjects[3].name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
            r#"subjects[3].apiGroup: Unsupported value: "v1": supported values: """#,
            "subjects[3].namespace: Required value",
        ]
    );
}

#[test]
fn role_ref_cannot_change() {
    let strategy = BindingStrategy::cluster_role_binding();
    let old = binding(cluster_role_ref("view"), json!([user("alice")]));
    let more_subjects = binding(
        cluster_role_ref("view"),
        json!([user("alice"), user("bob")]),
    );
    assert!(strategy.validate_update(&more_subjects, &old).is_empty());
    let other_role = binding(cluster_role_ref("edit"), json!([user("alice")]));
    let causes = strategy.validate_update(&other_role, &old);
    assert_eq!(
        messages(causes.clone()),
        [
            r#"roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef"#
        ]
    );
    assert_eq!(causes[0].kind, "FieldValueInvalid");
}

#[test]
fn bindings_get_v1_defaults() {
    let mut obj = json!({
        "metadata": {"name": "b"},
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "Group", "apiGroup": "", "name": "devs"},
            {"kind": "ServiceAccount", "name": "default", "namespace": "ns"},
            {"kind": "User", "apiGroup": "example.com", "name": "bob"},
        ],
    });
    let strategy = BindingStrategy::cluster_role_binding();
    strategy.prepare_for_create(&mut obj);
    assert_eq!(obj["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(obj["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(obj["subjects"][1]["apiGroup"], "rbac.authorization.k8s.io");
    assert!(obj["subjects"][2].get("apiGroup").is_none());
    assert_eq!(obj["subjects"][3]["apiGroup"], "example.com");
    // A binding without a roleRef is refused for its kind and name, not for its group.
    let mut bare = json!({"metadata": {"name": "b"}});
    strategy.prepare_for_update(&mut bare, &Value::Null);
    assert_eq!(
        messages(strategy.validate(&bare)),
        [
            r#"roleRef.kind: Unsupported value: "": supported values: "ClusterRole""#,
            "roleRef.name: Required value",
        ]
    );
}
