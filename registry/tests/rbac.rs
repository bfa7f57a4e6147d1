//! The RBAC authorizer over a real registry: its index follows roles and bindings as they are
//! created, changed and deleted; decisions, reasons and namespace scoping are upstream's; and
//! writes of roles and bindings cannot grant what their writer does not hold.

mod support;

use std::sync::Arc;
use std::time::Duration;

use registry::auth::{
    Attributes, Authorizer, Chain, Decision, PrivilegedGroups, UserInfo, Verdict,
};
use registry::options::WriteOptions;
use registry::patch::PatchType;
use registry::rbac::{install_escalation_checks, Kind, RbacAuthorizer};
use registry::{RegistryError, Subresource};
use serde_json::{json, Value};
use support::{dry_run, write, Harness};
use test_support::eventually;
use tokio_util::sync::CancellationToken;

test_support::both_backends!(crate::support::Harness; index_follows_roles_and_bindings);
test_support::embedded_only!(
    crate::support::Harness;
    reasons_and_namespace_scoping,
    rules_for_lists_cluster_and_namespace_rules,
    roles_cannot_grant_more_than_their_writer_holds,
    bindings_need_bind_or_the_roles_permissions,
    aggregation_rules_need_every_permission,
);

const RBAC: &str = "rbac.authorization.k8s.io";
const LIMIT: Duration = Duration::from_secs(10);

fn user(name: &str, groups: &[&str]) -> Arc<UserInfo> {
    Arc::new(UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    })
}

fn request(u: &Arc<UserInfo>, verb: &str, ns: &str, resource: &str, name: &str) -> Attributes {
    Attributes {
        user: u.clone(),
        verb: verb.into(),
        resource_request: true,
        namespace: ns.into(),
        api_version: "v1".into(),
        resource: resource.into(),
        name: name.into(),
        ..Default::default()
    }
}

fn rule(verbs: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": [""], "resources": resources})
}

fn role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name}, "rules": rules})
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
}

fn binding(kind: &str, name: &str, role_kind: &str, role: &str, subjects: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name},
           "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role}, "subjects": subjects})
}

fn user_subject(name: &str) -> Value {
    json!([{"kind": "User", "apiGroup": RBAC, "name": name}])
}

/// A synced authorizer over `h`'s registry, following it until the harness's test ends.
async fn rbac(h: &Harness) -> Arc<RbacAuthorizer> {
    let rbac = RbacAuthorizer::new(&h.registry).expect("rbac stores");
    tokio::spawn(rbac.clone().run(CancellationToken::new()));
    tokio::time::timeout(LIMIT, rbac.synced())
        .await
        .expect("synced");
    rbac
}

async fn create(h: &Harness, ns: Option<&str>, plural: &str, obj: Value) {
    h.store(RBAC, plural)
        .create(ns, obj, &write())
        .await
        .unwrap_or_else(|e| panic!("create {plural}: {e}"));
}

fn as_user(u: &Arc<UserInfo>) -> WriteOptions {
    WriteOptions {
        user: Some(u.clone()),
        ..Default::default()
    }
}

async fn index_follows_roles_and_bindings(h: &Harness) {
    h.namespace("team").await;
    let rbac = rbac(h).await;
    let jane = user("jane", &["system:authenticated"]);
    let get_pods = request(&jane, "get", "team", "pods", "web");
    assert_eq!(rbac.authorize(&get_pods), Verdict::no_opinion());

    // A binding before its role: reported, granting nothing.
    create(
        h,
        Some("team"),
        "rolebindings",
        binding(
            "RoleBinding",
            "readers",
            "Role",
            "reader",
            user_subject("jane"),
        ),
    )
    .await;
    eventually("binding indexed", LIMIT, || {
        rbac.count(Kind::RoleBinding) == 1
    })
    .await;
    assert_eq!(
        rbac.authorize(&get_pods),
        Verdict {
            decision: Decision::NoOpinion,
            reason: r#"RBAC: role.rbac.authorization.k8s.io "reader" not found"#.into()
        }
    );
    create(
        h,
        Some("team"),
        "roles",
        role("reader", json!([rule(&["get"], &["pods"])])),
    )
    .await;
    eventually("role grants", LIMIT, || rbac.authorize(&get_pods).allowed()).await;

    // Modified: the binding moves from jane to a group she is not in.
    let bindings = h.store(RBAC, "rolebindings");
    bindings
        .update(
            Some("team"),
            "readers",
            binding(
                "RoleBinding",
                "readers",
                "Role",
                "reader",
                json!([{"kind": "Group", "apiGroup": RBAC, "name": "auditors"}]),
            ),
            Subresource::Main,
            &write(),
        )
        .await
        .expect("update binding");
    eventually("binding moved", LIMIT, || {
        !rbac.authorize(&get_pods).allowed()
    })
    .await;
    let auditor = user("sam", &["auditors"]);
    assert!(rbac
        .authorize(&request(&auditor, "get", "team", "pods", "web"))
        .allowed());

    // Modified role: its new rules count for every binding of it.
    h.store(RBAC, "roles")
        .patch(
            Some("team"),
            "reader",
            PatchType::Merge,
            br#"{"rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]}"#,
            Subresource::Main,
            &write(),
        )
        .await
        .expect("patch role");
    eventually("role changed", LIMIT, || {
        rbac.authorize(&request(&auditor, "list", "team", "pods", ""))
            .allowed()
    })
    .await;
    assert!(!rbac
        .authorize(&request(&auditor, "get", "team", "pods", "web"))
        .allowed());

    // Deleted role, then deleted binding.
    h.store(RBAC, "roles")
        .delete(Some("team"), "reader", support::delete())
        .await
        .expect("delete role");
    eventually("role gone", LIMIT, || rbac.count(Kind::Role) == 0).await;
    let verdict = rbac.authorize(&request(&auditor, "list", "team", "pods", ""));
    assert_eq!(verdict.decision, Decision::NoOpinion);
    assert_eq!(
        verdict.reason,
        r#"RBAC: role.rbac.authorization.k8s.io "reader" not found"#
    );
    bindings
        .delete(Some("team"), "readers", support::delete())
        .await
        .expect("delete binding");
    eventually("binding gone", LIMIT, || rbac.count(Kind::RoleBinding) == 0).await;
    assert_eq!(
        rbac.authorize(&request(&auditor, "list", "team", "pods", "")),
        Verdict::no_opinion()
    );
}

async fn reasons_and_namespace_scoping(h: &Harness) {
    h.namespace("a").await;
    h.namespace("b").await;
    create(
        h,
        None,
        "clusterroles",
        cluster_role("pod-reader", json!([rule(&["get", "list"], &["pods"])])),
    )
    .await;
    create(
        h,
        None,
        "clusterroles",
        cluster_role(
            "health",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/healthz/*"]}]),
        ),
    )
    .await;
    create(h, Some("a"), "roles", role("deployer", json!([{"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments", "deployments/scale"]}]))).await;
    create(
        h,
        None,
        "clusterrolebindings",
        binding(
            "ClusterRoleBinding",
            "health-all",
            "ClusterRole",
            "health",
            json!([{"kind": "Group", "apiGroup": RBAC, "name": "system:authenticated"}]),
        ),
    )
    .await;
    // A RoleBinding of a ClusterRole grants it in its namespace only.
    create(
        h,
        Some("a"),
        "rolebindings",
        binding(
            "RoleBinding",
            "read-pods",
            "ClusterRole",
            "pod-reader",
            user_subject("jane"),
        ),
    )
    .await;
    create(
        h,
        Some("a"),
        "rolebindings",
        binding(
            "RoleBinding",
            "ci",
            "Role",
            "deployer",
            json!([{"kind": "ServiceAccount", "name": "builder"}]),
        ),
    )
    .await;
    let rbac = rbac(h).await;

    let jane = user("jane", &["system:authenticated"]);
    assert_eq!(
        rbac.authorize(&request(&jane, "list", "a", "pods", "")),
        Verdict::allow(
            r#"RBAC: allowed by RoleBinding "read-pods/a" of ClusterRole "pod-reader" to User "jane""#
        )
    );
    assert_eq!(
        rbac.authorize(&request(&jane, "list", "b", "pods", "")),
        Verdict::no_opinion()
    );
    assert_eq!(
        rbac.authorize(&request(&jane, "list", "", "pods", "")),
        Verdict::no_opinion()
    );
    assert_eq!(
        rbac.authorize(&request(&jane, "delete", "a", "pods", "web")),
        Verdict::no_opinion()
    );
    let healthz = Attributes {
        user: jane.clone(),
        verb: "get".into(),
        path: "/healthz/etcd".into(),
        ..Default::default()
    };
    assert_eq!(
        rbac.authorize(&healthz),
        Verdict::allow(
            r#"RBAC: allowed by ClusterRoleBinding "health-all" of ClusterRole "health" to Group "system:authenticated""#
        )
    );

    // The service account of the binding's namespace, by its user name.
    let builder = user(
        "system:serviceaccount:a:builder",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:a",
            "system:authenticated",
        ],
    );
    let scale = Attributes {
        api_group: "apps".into(),
        subresource: "scale".into(),
        ..request(&builder, "update", "a", "deployments", "web")
    };
    assert_eq!(
        rbac.authorize(&scale),
        Verdict::allow(
            r#"RBAC: allowed by RoleBinding "ci/a" of Role "deployer" to ServiceAccount "builder/a""#
        )
    );
    assert!(!rbac
        .authorize(&Attributes {
            namespace: "b".into(),
            ..scale.clone()
        })
        .allowed());
    let other = user(
        "system:serviceaccount:b:builder",
        &["system:serviceaccounts", "system:serviceaccounts:b"],
    );
    assert!(!rbac
        .authorize(&Attributes {
            user: other,
            ..scale.clone()
        })
        .allowed());
    assert!(!rbac
        .authorize(&Attributes {
            subresource: "status".into(),
            ..scale
        })
        .allowed());
}

async fn rules_for_lists_cluster_and_namespace_rules(h: &Harness) {
    h.namespace("a").await;
    create(
        h,
        None,
        "clusterroles",
        cluster_role(
            "health",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]),
        ),
    )
    .await;
    create(
        h,
        Some("a"),
        "roles",
        role("reader", json!([rule(&["get"], &["pods"])])),
    )
    .await;
    create(
        h,
        None,
        "clusterrolebindings",
        binding(
            "ClusterRoleBinding",
            "health",
            "ClusterRole",
            "health",
            user_subject("jane"),
        ),
    )
    .await;
    create(
        h,
        Some("a"),
        "rolebindings",
        binding(
            "RoleBinding",
            "reader",
            "Role",
            "reader",
            user_subject("jane"),
        ),
    )
    .await;
    create(
        h,
        Some("a"),
        "rolebindings",
        binding(
            "RoleBinding",
            "broken",
            "ClusterRole",
            "missing",
            user_subject("jane"),
        ),
    )
    .await;
    let rbac = rbac(h).await;
    let jane = user("jane", &[]);

    let cluster = rbac.rules_for(&jane, "");
    assert!(cluster.resource_rules.is_empty());
    assert_eq!(cluster.non_resource_rules.len(), 1);
    assert_eq!(
        cluster.non_resource_rules[0].non_resource_urls,
        ["/healthz"]
    );
    assert_eq!(cluster.evaluation_error, "");

    let in_a = rbac.rules_for(&jane, "a");
    assert_eq!(in_a.non_resource_rules.len(), 1);
    assert_eq!(in_a.resource_rules.len(), 1);
    assert_eq!(in_a.resource_rules[0].resources, ["pods"]);
    assert_eq!(in_a.resource_rules[0].verbs, ["get"]);
    assert!(!in_a.incomplete);
    assert_eq!(
        in_a.evaluation_error,
        r#"clusterrole.rbac.authorization.k8s.io "missing" not found"#
    );
}

/// jane may get and list pods in `a`, and edit roles and rolebindings there.
async fn jane_in_a(h: &Harness) -> (Arc<RbacAuthorizer>, Arc<UserInfo>) {
    h.namespace("a").await;
    create(h, Some("a"), "roles", role("jane", json!([
        rule(&["get", "list"], &["pods"]),
        {"verbs": ["create", "update", "patch"], "apiGroups": [RBAC], "resources": ["roles", "rolebindings", "clusterroles", "clusterrolebindings"]}
    ]))).await;
    create(
        h,
        Some("a"),
        "rolebindings",
        binding("RoleBinding", "jane", "Role", "jane", user_subject("jane")),
    )
    .await;
    let rbac = rbac(h).await;
    let chain: Arc<dyn Authorizer> =
        Arc::new(Chain::new(vec![Arc::new(PrivilegedGroups), rbac.clone()]));
    install_escalation_checks(&h.registry, rbac.clone(), chain);
    (rbac, user("jane", &["devs", "system:authenticated"]))
}

fn forbidden_message(err: &RegistryError) -> String {
    assert_eq!(err.code(), 403, "{err:?}");
    assert_eq!(err.reason(), "Forbidden");
    err.to_string()
}

async fn roles_cannot_grant_more_than_their_writer_holds(h: &Harness) {
    let (rbac, jane) = jane_in_a(h).await;
    let roles = h.store(RBAC, "roles");
    // What she holds she may grant.
    roles
        .create(
            Some("a"),
            role("pod-getter", json!([rule(&["get"], &["pods"])])),
            &as_user(&jane),
        )
        .await
        .expect("non-escalating role");
    // More is refused with upstream's message, missing rules compacted and sorted.
    let err = roles
        .create(
            Some("a"),
            role(
                "pod-admin",
                json!([rule(
                    &["get", "delete", "deletecollection"],
                    &["pods", "pods/log"]
                )]),
            ),
            &as_user(&jane),
        )
        .await
        .expect_err("escalating role");
    assert_eq!(
        forbidden_message(&err),
        "roles.rbac.authorization.k8s.io \"pod-admin\" is forbidden: user \"jane\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"deletecollection\"]}\n\
         {APIGroups:[\"\"], Resources:[\"pods/log\"], Verbs:[\"get\" \"delete\" \"deletecollection\"]}"
    );
    let status = err.status();
    let details = serde_json::to_value(&status).expect("status");
    assert_eq!(
        details["details"],
        json!({"name": "pod-admin", "group": RBAC, "kind": "roles"})
    );
    // Her rules in another namespace are not hers.
    h.namespace("b").await;
    let err = roles
        .create(
            Some("b"),
            role("pod-getter", json!([rule(&["get"], &["pods"])])),
            &as_user(&jane),
        )
        .await
        .expect_err("another namespace");
    assert_eq!(err.code(), 403);
    // Dry runs, updates and patches are judged the same; in-process writers and
    // system:masters are not.
    let err = roles
        .create(
            Some("a"),
            role("dry", json!([rule(&["delete"], &["pods"])])),
            &WriteOptions {
                user: Some(jane.clone()),
                ..dry_run()
            },
        )
        .await
        .expect_err("dry run");
    assert_eq!(err.code(), 403);
    let err = roles
        .update(
            Some("a"),
            "pod-getter",
            role("pod-getter", json!([rule(&["delete"], &["pods"])])),
            Subresource::Main,
            &as_user(&jane),
        )
        .await
        .expect_err("escalating update");
    assert_eq!(err.code(), 403);
    let err = roles
        .patch(
            Some("a"),
            "pod-getter",
            PatchType::Merge,
            br#"{"rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}"#,
            Subresource::Main,
            &as_user(&jane),
        )
        .await
        .expect_err("escalating patch");
    assert_eq!(err.code(), 403);
    // Adding a finalizer only (the garbage collector's kind of change) is no grant.
    roles
        .patch(
            Some("a"),
            "pod-getter",
            PatchType::Merge,
            br#"{"metadata": {"finalizers": ["example.com/keep"]}}"#,
            Subresource::Main,
            &as_user(&jane),
        )
        .await
        .expect("finalizer patch");
    roles
        .patch(
            Some("a"),
            "pod-getter",
            PatchType::Merge,
            br#"{"rules": [{"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"]}]}"#,
            Subresource::Main,
            &write(),
        )
        .await
        .expect("in-process writer");
    let admin = user("admin", &["system:masters"]);
    roles
        .create(
            Some("a"),
            role(
                "anything",
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
            ),
            &as_user(&admin),
        )
        .await
        .expect("system:masters");
    // The escalate verb on roles lets her grant what she lacks.
    create(
        h,
        Some("a"),
        "roles",
        role(
            "escalator",
            json!([{"verbs": ["escalate"], "apiGroups": [RBAC], "resources": ["roles"]}]),
        ),
    )
    .await;
    create(
        h,
        Some("a"),
        "rolebindings",
        binding(
            "RoleBinding",
            "escalator",
            "Role",
            "escalator",
            user_subject("jane"),
        ),
    )
    .await;
    eventually("escalate granted", LIMIT, || {
        rbac.authorize(&Attributes {
            api_group: RBAC.into(),
            ..request(&jane, "escalate", "a", "roles", "")
        })
        .allowed()
    })
    .await;
    roles
        .create(
            Some("a"),
            role("pod-admin", json!([rule(&["*"], &["pods"])])),
            &as_user(&jane),
        )
        .await
        .expect("escalate allows");
}

async fn bindings_need_bind_or_the_roles_permissions(h: &Harness) {
    let (rbac, jane) = jane_in_a(h).await;
    create(
        h,
        Some("a"),
        "roles",
        role("pod-getter", json!([rule(&["get"], &["pods"])])),
    )
    .await;
    create(
        h,
        None,
        "clusterroles",
        cluster_role("pod-deleter", json!([rule(&["delete"], &["pods"])])),
    )
    .await;
    eventually("roles indexed", LIMIT, || {
        rbac.count(Kind::Role) == 2 && rbac.count(Kind::ClusterRole) == 1
    })
    .await;
    let bindings = h.store(RBAC, "rolebindings");
    bindings
        .create(
            Some("a"),
            binding(
                "RoleBinding",
                "bob-gets",
                "Role",
                "pod-getter",
                user_subject("bob"),
            ),
            &as_user(&jane),
        )
        .await
        .expect("she holds the role's permissions");
    let err = bindings
        .create(
            Some("a"),
            binding(
                "RoleBinding",
                "bob-deletes",
                "ClusterRole",
                "pod-deleter",
                user_subject("bob"),
            ),
            &as_user(&jane),
        )
        .await
        .expect_err("she does not");
    assert_eq!(
        forbidden_message(&err),
        "rolebindings.rbac.authorization.k8s.io \"bob-deletes\" is forbidden: user \"jane\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}"
    );
    // A missing role is NotFound, as the registry words it.
    let err = bindings
        .create(
            Some("a"),
            binding("RoleBinding", "ghost", "Role", "ghost", user_subject("bob")),
            &as_user(&jane),
        )
        .await
        .expect_err("missing role");
    assert_eq!(err.code(), 404);
    assert_eq!(
        err.to_string(),
        r#"roles.rbac.authorization.k8s.io "ghost" not found"#
    );
    // Cluster-wide she holds nothing: a ClusterRoleBinding of even a role she holds in `a` is
    // refused.
    let err = h
        .store(RBAC, "clusterrolebindings")
        .create(
            None,
            binding(
                "ClusterRoleBinding",
                "bob-deletes",
                "ClusterRole",
                "pod-deleter",
                user_subject("bob"),
            ),
            &as_user(&jane),
        )
        .await
        .expect_err("cluster binding");
    assert!(forbidden_message(&err)
        .starts_with("clusterrolebindings.rbac.authorization.k8s.io \"bob-deletes\" is forbidden"));
    // Updates are judged too: she may not add subjects to a binding of a role she lacks...
    create(
        h,
        Some("a"),
        "rolebindings",
        binding(
            "RoleBinding",
            "carl-deletes",
            "ClusterRole",
            "pod-deleter",
            user_subject("carl"),
        ),
    )
    .await;
    let add_bob = br#"{"subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]}"#;
    let err = bindings
        .patch(
            Some("a"),
            "carl-deletes",
            PatchType::Merge,
            add_bob,
            Subresource::Main,
            &as_user(&jane),
        )
        .await
        .expect_err("escalating patch");
    assert_eq!(err.code(), 403, "{err}");
    // ...but may to one of a role she holds.
    bindings
        .patch(
            Some("a"),
            "bob-gets",
            PatchType::Merge,
            add_bob,
            Subresource::Main,
            &as_user(&jane),
        )
        .await
        .expect("non-escalating patch");
    // `bind` on that one ClusterRole, in her namespace, lets her grant it there.
    create(h, Some("a"), "roles", role("binder", json!([{"verbs": ["bind"], "apiGroups": [RBAC], "resources": ["clusterroles"], "resourceNames": ["pod-deleter"]}]))).await;
    create(
        h,
        Some("a"),
        "rolebindings",
        binding(
            "RoleBinding",
            "binder",
            "Role",
            "binder",
            user_subject("jane"),
        ),
    )
    .await;
    eventually("bind granted", LIMIT, || {
        rbac.authorize(&Attributes {
            api_group: RBAC.into(),
            ..request(&jane, "bind", "a", "clusterroles", "pod-deleter")
        })
        .allowed()
    })
    .await;
    bindings
        .create(
            Some("a"),
            binding(
                "RoleBinding",
                "bob-deletes",
                "ClusterRole",
                "pod-deleter",
                user_subject("bob"),
            ),
            &as_user(&jane),
        )
        .await
        .expect("bind allows");
    bindings
        .patch(
            Some("a"),
            "carl-deletes",
            PatchType::Merge,
            add_bob,
            Subresource::Main,
            &as_user(&jane),
        )
        .await
        .expect("bind allows updates");
}

async fn aggregation_rules_need_every_permission(h: &Harness) {
    let (rbac, _) = jane_in_a(h).await;
    create(h, None, "clusterroles", cluster_role("cr-writer", json!([
        rule(&["get"], &["pods"]),
        {"verbs": ["create", "update", "patch"], "apiGroups": [RBAC], "resources": ["clusterroles"]}
    ]))).await;
    create(
        h,
        None,
        "clusterrolebindings",
        binding(
            "ClusterRoleBinding",
            "ann",
            "ClusterRole",
            "cr-writer",
            user_subject("ann"),
        ),
    )
    .await;
    eventually("ann bound", LIMIT, || {
        rbac.count(Kind::ClusterRoleBinding) == 1
    })
    .await;
    let ann = user("ann", &[]);
    let cluster_roles = h.store(RBAC, "clusterroles");
    cluster_roles
        .create(
            None,
            cluster_role("getter", json!([rule(&["get"], &["pods"])])),
            &as_user(&ann),
        )
        .await
        .expect("covered");
    let mut aggregated = cluster_role("gatherer", json!([]));
    aggregated["aggregationRule"] =
        json!({"clusterRoleSelectors": [{"matchLabels": {"x": "true"}}]});
    let err = cluster_roles
        .create(None, aggregated, &as_user(&ann))
        .await
        .expect_err("aggregation");
    assert_eq!(
        forbidden_message(&err),
        r#"clusterroles.rbac.authorization.k8s.io "gatherer" is forbidden: must have cluster-admin privileges to use the aggregationRule"#
    );
}
