use std::collections::HashSet;

use serde_json::Value;

use super::rule::{core, rules_of, READ};
use super::*;
use crate::object;
use crate::rbac::covers::covers;

fn key(obj: &Value) -> (String, String) {
    (
        object::namespace(obj).to_string(),
        object::name(obj).to_string(),
    )
}

fn find<'a>(objects: &'a [Value], name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| object::name(o) == name)
        .unwrap_or_else(|| panic!("no bootstrap object {name}"))
}

#[test]
fn names_are_unique_per_kind() {
    let p = policy();
    for (kind, objects) in [
        ("ClusterRole", &p.cluster_roles),
        ("ClusterRoleBinding", &p.cluster_role_bindings),
        ("Role", &p.roles),
        ("RoleBinding", &p.role_bindings),
    ] {
        let mut seen = HashSet::new();
        for o in objects {
            assert_eq!(o["kind"], kind);
            assert_eq!(o["apiVersion"], "rbac.authorization.k8s.io/v1");
            assert!(seen.insert(key(o)), "{kind} {:?} twice", key(o));
        }
    }
}

#[test]
fn every_binding_names_a_bootstrap_role() {
    let p = policy();
    let cluster_roles: HashSet<&str> = p.cluster_roles.iter().map(object::name).collect();
    for b in &p.cluster_role_bindings {
        assert_eq!(b["roleRef"]["kind"], "ClusterRole");
        assert_eq!(b["roleRef"]["apiGroup"], RBAC_GROUP);
        let role = b["roleRef"]["name"].as_str().unwrap_or_default();
        assert!(
            cluster_roles.contains(role),
            "{} binds missing {role}",
            object::name(b)
        );
    }
    let roles: HashSet<(String, String)> = p.roles.iter().map(key).collect();
    for b in &p.role_bindings {
        assert_eq!(b["roleRef"]["kind"], "Role");
        let role = b["roleRef"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let ns = object::namespace(b).to_string();
        assert!(
            roles.contains(&(ns, role.clone())),
            "{:?} binds missing {role}",
            key(b)
        );
    }
    for r in &p.roles {
        assert!(["kube-system", "kube-public"].contains(&object::namespace(r)));
    }
}

#[test]
fn every_object_is_labelled_and_auto_updated() {
    let p = policy();
    let all = [
        &p.cluster_roles,
        &p.cluster_role_bindings,
        &p.roles,
        &p.role_bindings,
    ];
    for o in all.into_iter().flatten() {
        assert_eq!(
            o["metadata"]["labels"][BOOTSTRAPPING_LABEL],
            BOOTSTRAPPING_VALUE,
            "{:?}",
            key(o)
        );
        assert_eq!(
            o["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
            "true",
            "{:?}",
            key(o)
        );
    }
}

#[test]
fn the_user_facing_roles_aggregate_along_the_chain() {
    let roles = policy().cluster_roles;
    for (role, gathers, label_of_role) in [
        ("admin", AGGREGATE_TO_ADMIN, None),
        ("edit", AGGREGATE_TO_EDIT, Some(AGGREGATE_TO_ADMIN)),
        ("view", AGGREGATE_TO_VIEW, Some(AGGREGATE_TO_EDIT)),
    ] {
        let r = find(&roles, role);
        assert!(r.get("rules").is_none(), "{role} has rules of its own");
        assert_eq!(
            r["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"][gathers],
            "true"
        );
        if let Some(label) = label_of_role {
            assert_eq!(r["metadata"]["labels"][label], "true");
        }
        let carrier = find(&roles, &format!("system:aggregate-to-{role}"));
        assert_eq!(carrier["metadata"]["labels"][gathers], "true");
        assert!(!rules_of(carrier.get("rules")).is_empty());
    }
    // view's carrier lets pods be read.
    let view = rules_of(find(&roles, "system:aggregate-to-view").get("rules"));
    assert!(covers(&view, &[core(READ, &["pods"])]).0);
}

#[test]
fn rules_are_well_formed() {
    let p = policy();
    for role in p.cluster_roles.iter().chain(&p.roles) {
        for rule in rules_of(role.get("rules")) {
            let name = object::name(role);
            assert!(!rule.verbs.is_empty(), "{name}: a rule without verbs");
            let resource = !rule.resources.is_empty() && !rule.api_groups.is_empty();
            let url = !rule.non_resource_urls.is_empty();
            assert!(resource ^ url, "{name}: {rule:?}");
            for list in [&rule.verbs, &rule.api_groups, &rule.resources] {
                assert!(
                    list.windows(2).all(|w| w[0] < w[1]),
                    "{name}: unsorted {list:?}"
                );
            }
        }
    }
}

#[test]
fn the_well_known_bindings_are_upstreams() {
    let bindings = policy().cluster_role_bindings;
    let subjects = |name: &str| find(&bindings, name)["subjects"].clone();
    assert_eq!(
        subjects("cluster-admin"),
        serde_json::json!([{"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:masters"}])
    );
    assert_eq!(
        subjects("system:public-info-viewer")
            .as_array()
            .map(|s| s.iter().map(|s| s["name"].clone()).collect::<Vec<_>>()),
        Some(vec![
            "system:authenticated".into(),
            "system:unauthenticated".into()
        ])
    );
    assert_eq!(
        subjects("system:kube-scheduler")[0]["name"],
        "system:kube-scheduler"
    );
    assert!(find(&bindings, "system:node").get("subjects").is_none());
    // Each controller role is bound to its own account in kube-system.
    let sa = subjects("system:controller:clusterrole-aggregation-controller");
    assert_eq!(sa[0]["kind"], "ServiceAccount");
    assert_eq!(sa[0]["namespace"], "kube-system");
    assert_eq!(sa[0]["name"], "clusterrole-aggregation-controller");
}
