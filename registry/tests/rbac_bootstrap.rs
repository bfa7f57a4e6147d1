//! Reconciling the bootstrap RBAC policy over a real registry: it creates the defaults, puts
//! back what a user trimmed from an auto-updated role or binding while keeping what they
//! added, leaves autoupdate="false" objects alone, and a second run writes nothing.

mod support;

use registry::rbac::bootstrap::{reconcile, Change, AUTOUPDATE_ANNOTATION};
use registry::Subresource;
use serde_json::{json, Value};
use support::{list, write, Harness};

test_support::both_backends!(crate::support::Harness; creates_then_changes_nothing);
test_support::embedded_only!(
    crate::support::Harness;
    puts_back_trimmed_rules_and_keeps_added_ones,
    leaves_protected_objects_alone,
    adds_missing_subjects_and_selectors,
    remakes_a_binding_of_another_role,
);

const GROUP: &str = "rbac.authorization.k8s.io";

async fn get(h: &Harness, plural: &str, ns: Option<&str>, name: &str) -> Value {
    h.store(GROUP, plural)
        .get(ns, name, &list())
        .await
        .unwrap_or_else(|e| panic!("get {plural} {name}: {e}"))
}

async fn put(h: &Harness, plural: &str, ns: Option<&str>, obj: Value) {
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    h.store(GROUP, plural)
        .update(ns, &name, obj, Subresource::Main, &write())
        .await
        .unwrap_or_else(|e| panic!("update {plural} {name}: {e}"));
}

fn rules(role: &Value) -> Vec<Value> {
    role["rules"].as_array().cloned().unwrap_or_default()
}

async fn creates_then_changes_nothing(h: &Harness) {
    let first = reconcile(&h.registry).await.expect("reconcile");
    assert!(first.failures.is_empty(), "{:?}", first.failures);
    let created = |plural: &str| {
        first
            .changes
            .iter()
            .filter(|c| matches!(c, Change::Created { resource, .. } if *resource == plural))
            .count()
    };
    let policy = registry::rbac::bootstrap::policy();
    assert_eq!(created("clusterroles"), policy.cluster_roles.len());
    assert_eq!(
        created("clusterrolebindings"),
        policy.cluster_role_bindings.len()
    );
    assert_eq!(created("roles"), policy.roles.len());
    assert_eq!(created("rolebindings"), policy.role_bindings.len());

    let admin = get(h, "clusterroles", None, "cluster-admin").await;
    assert_eq!(
        admin["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    assert_eq!(
        admin["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
        "true"
    );
    let binding = get(h, "clusterrolebindings", None, "cluster-admin").await;
    assert_eq!(binding["subjects"][0]["name"], "system:masters");
    let reader = get(
        h,
        "roles",
        Some("kube-system"),
        "extension-apiserver-authentication-reader",
    )
    .await;
    assert_eq!(
        reader["rules"][0]["resourceNames"][0],
        "extension-apiserver-authentication"
    );

    let second = reconcile(&h.registry).await.expect("reconcile again");
    assert!(second.changes.is_empty(), "{:?}", second.changes);
    assert!(second.failures.is_empty());
    // Nothing was rewritten either.
    let again = get(h, "clusterroles", None, "cluster-admin").await;
    assert_eq!(
        again["metadata"]["resourceVersion"],
        admin["metadata"]["resourceVersion"]
    );
}

async fn puts_back_trimmed_rules_and_keeps_added_ones(h: &Harness) {
    reconcile(&h.registry).await.expect("reconcile");
    let mut role = get(h, "clusterroles", None, "system:basic-user").await;
    let mine = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]});
    // The user drops selfsubjectrulesreviews from the first rule and adds a rule of their own.
    role["rules"] = json!([
        {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"]},
        {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]},
        mine,
    ]);
    put(h, "clusterroles", None, role).await;

    let report = reconcile(&h.registry).await.expect("reconcile");
    assert_eq!(report.changes.len(), 1, "{:?}", report.changes);
    assert!(
        matches!(&report.changes[0], Change::Updated { key, .. } if key == "system:basic-user")
    );
    let rules = rules(&get(h, "clusterroles", None, "system:basic-user").await);
    assert!(rules.contains(&mine), "the user's rule went: {rules:?}");
    assert!(rules.contains(&json!({
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectrulesreviews"],
    })));
    assert_eq!(rules.len(), 4);
    assert!(reconcile(&h.registry)
        .await
        .expect("reconcile")
        .changes
        .is_empty());
}

async fn leaves_protected_objects_alone(h: &Harness) {
    reconcile(&h.registry).await.expect("reconcile");
    let mut role = get(h, "clusterroles", None, "system:discovery").await;
    role["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!("false");
    role["rules"] = json!([{"verbs": ["get"], "nonResourceURLs": ["/version"]}]);
    put(h, "clusterroles", None, role).await;
    let mut binding = get(h, "clusterrolebindings", None, "system:basic-user").await;
    binding["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!("false");
    binding["subjects"] = json!([]);
    put(h, "clusterrolebindings", None, binding).await;
    // Deleted defaults come back, protected or not.
    h.store(GROUP, "clusterroles")
        .delete(None, "system:heapster", Default::default())
        .await
        .expect("delete");

    let report = reconcile(&h.registry).await.expect("reconcile");
    assert!(report.failures.is_empty());
    let protected: Vec<&str> = report
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::Protected { key, .. } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(protected, ["system:discovery", "system:basic-user"]);
    assert!(report
        .changes
        .iter()
        .any(|c| matches!(c, Change::Created { key, .. } if key == "system:heapster")));
    let role = get(h, "clusterroles", None, "system:discovery").await;
    assert_eq!(
        rules(&role),
        [json!({"verbs": ["get"], "nonResourceURLs": ["/version"]})]
    );
    let binding = get(h, "clusterrolebindings", None, "system:basic-user").await;
    assert_eq!(binding["subjects"], json!([]));
}

async fn adds_missing_subjects_and_selectors(h: &Harness) {
    reconcile(&h.registry).await.expect("reconcile");
    let mut binding = get(h, "clusterrolebindings", None, "cluster-admin").await;
    let extra = json!({"kind": "User", "apiGroup": GROUP, "name": "alice"});
    binding["subjects"] = json!([extra]);
    put(h, "clusterrolebindings", None, binding).await;
    let mut view = get(h, "clusterroles", None, "view").await;
    let mine = json!({"matchLabels": {"example.com/view": "true"}});
    view["aggregationRule"]["clusterRoleSelectors"] = json!([mine]);
    put(h, "clusterroles", None, view).await;
    // A namespaced default.
    let mut lock = get(
        h,
        "rolebindings",
        Some("kube-system"),
        "system::leader-locking-kube-scheduler",
    )
    .await;
    lock["subjects"] = json!([]);
    put(h, "rolebindings", Some("kube-system"), lock).await;

    let report = reconcile(&h.registry).await.expect("reconcile");
    assert_eq!(report.changes.len(), 3, "{:?}", report.changes);
    let binding = get(h, "clusterrolebindings", None, "cluster-admin").await;
    assert_eq!(
        binding["subjects"],
        json!([extra, {"kind": "Group", "apiGroup": GROUP, "name": "system:masters"}])
    );
    let view = get(h, "clusterroles", None, "view").await;
    assert_eq!(
        view["aggregationRule"]["clusterRoleSelectors"],
        json!([mine, {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}])
    );
    let lock = get(
        h,
        "rolebindings",
        Some("kube-system"),
        "system::leader-locking-kube-scheduler",
    )
    .await;
    assert_eq!(lock["subjects"].as_array().map(Vec::len), Some(2));
}

async fn remakes_a_binding_of_another_role(h: &Harness) {
    reconcile(&h.registry).await.expect("reconcile");
    let bindings = h.store(GROUP, "clusterrolebindings");
    bindings
        .delete(None, "system:basic-user", Default::default())
        .await
        .expect("delete");
    bindings
        .create(
            None,
            json!({
                "metadata": {"name": "system:basic-user"},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "Group", "apiGroup": GROUP, "name": "system:authenticated"}],
            }),
            &write(),
        )
        .await
        .expect("create");

    let report = reconcile(&h.registry).await.expect("reconcile");
    assert!(
        matches!(&report.changes[..], [Change::Recreated { key, .. }] if key == "system:basic-user"),
        "{:?}",
        report.changes
    );
    let binding = get(h, "clusterrolebindings", None, "system:basic-user").await;
    assert_eq!(binding["roleRef"]["name"], "system:basic-user");
    assert_eq!(
        binding["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
        "true"
    );
}
