use super::*;
use registry::strategy::flowcontrol::configuration;
use serde_json::json;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    }
}

fn resource(verb: &str, group: &str, resource: &str, namespace: &str) -> Action {
    Action::Resource {
        verb: verb.into(),
        group: group.into(),
        resource: resource.into(),
        namespace: namespace.into(),
    }
}

/// Upstream's bootstrap configuration, in matching order.
fn bootstrap() -> Vec<Schema> {
    let mut schemas: Vec<Schema> = configuration::mandatory()
        .flow_schemas
        .iter()
        .chain(configuration::suggested().flow_schemas.iter())
        .map(Schema::from_object)
        .collect();
    sort(&mut schemas);
    schemas
}

fn first<'a>(schemas: &'a [Schema], u: &UserInfo, a: &Action) -> &'a str {
    schemas
        .iter()
        .find(|s| s.matches(u, a))
        .map(|s| s.name.as_str())
        .unwrap_or("<none>")
}

#[test]
fn the_bootstrap_schemas_classify_as_upstream() {
    let schemas = bootstrap();
    let authenticated = ["system:authenticated"];
    let alice = user("alice", &authenticated);
    assert_eq!(
        first(&schemas, &alice, &resource("list", "", "configmaps", "")),
        "global-default"
    );
    let admin = user("admin", &["system:masters", "system:authenticated"]);
    assert_eq!(
        first(
            &schemas,
            &admin,
            &resource("create", "apps", "deployments", "d")
        ),
        "exempt"
    );
    // Health probes are exempt for everyone, authenticated or not.
    let probe = Action::NonResource {
        verb: "get".into(),
        path: "/readyz".into(),
    };
    assert_eq!(
        first(
            &schemas,
            &user("system:anonymous", &["system:unauthenticated"]),
            &probe
        ),
        "probes"
    );
    let sa = user(
        "system:serviceaccount:default:builder",
        &["system:serviceaccounts", "system:authenticated"],
    );
    assert_eq!(
        first(&schemas, &sa, &resource("get", "", "pods", "default")),
        "service-accounts"
    );
    let node = user("system:node:n1", &["system:nodes", "system:authenticated"]);
    assert_eq!(
        first(&schemas, &node, &resource("get", "", "pods", "default")),
        "system-nodes"
    );
    let kcm = user("system:kube-controller-manager", &authenticated);
    assert_eq!(
        first(&schemas, &kcm, &resource("list", "", "pods", "default")),
        "kube-controller-manager"
    );
}

#[test]
fn subjects_rules_and_wildcards() {
    let schema = Schema::from_object(&json!({
        "metadata": {"name": "s", "uid": "u1"},
        "spec": {
            "priorityLevelConfiguration": {"name": "pl"},
            "matchingPrecedence": 500,
            "distinguisherMethod": {"type": "ByNamespace"},
            "rules": [{
                "subjects": [
                    {"kind": "User", "user": {"name": "bob"}},
                    {"kind": "ServiceAccount", "serviceAccount": {"namespace": "ci", "name": "*"}},
                ],
                "resourceRules": [{"verbs": ["list", "get"], "apiGroups": ["*"], "resources": ["pods", "pods/log"], "namespaces": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["/metrics", "/debug/*"]}],
            }],
        },
    }));
    assert_eq!(
        (
            schema.precedence,
            schema.level.as_str(),
            schema.uid.as_str()
        ),
        (500, "pl", "u1")
    );
    let bob = user("bob", &[]);
    assert!(schema.matches(&bob, &resource("list", "", "pods", "a")));
    assert!(schema.matches(&bob, &resource("get", "x.io", "pods/log", "a")));
    assert!(!schema.matches(&bob, &resource("delete", "", "pods", "a")));
    // Namespaces "*" does not cover cluster scope (clusterScope is unset).
    assert!(!schema.matches(&bob, &resource("list", "", "pods", "")));
    assert!(schema.matches(
        &bob,
        &Action::NonResource {
            verb: "get".into(),
            path: "/debug/pprof".into()
        }
    ));
    assert!(!schema.matches(
        &bob,
        &Action::NonResource {
            verb: "get".into(),
            path: "/debugger".into()
        }
    ));
    assert!(schema.matches(
        &bob,
        &Action::NonResource {
            verb: "get".into(),
            path: "/metrics".into()
        }
    ));
    let ci = user("system:serviceaccount:ci:runner", &[]);
    assert!(schema.matches(&ci, &resource("get", "", "pods", "x")));
    let other = user("system:serviceaccount:prod:runner", &[]);
    assert!(!schema.matches(&other, &resource("get", "", "pods", "x")));
    assert!(!schema.matches(&user("carol", &["bob"]), &resource("get", "", "pods", "x")));
    // ByNamespace flows.
    let (d1, h1) = schema.flow(&bob, &resource("get", "", "pods", "a"));
    let (_, h2) = schema.flow(&ci, &resource("get", "", "pods", "a"));
    let (d3, h3) = schema.flow(&bob, &resource("get", "", "pods", "b"));
    assert_eq!((d1.as_str(), d3.as_str()), ("a", "b"));
    assert_eq!(h1, h2);
    assert_ne!(h1, h3);
}

#[test]
fn precedence_then_name_orders_schemas() {
    let make = |name: &str, precedence: i64| {
        Schema::from_object(
            &json!({"metadata": {"name": name}, "spec": {"matchingPrecedence": precedence, "priorityLevelConfiguration": {"name": "x"}}}),
        )
    };
    let mut schemas = vec![make("b", 10), make("a", 10), make("z", 1), make("c", 1000)];
    sort(&mut schemas);
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["z", "a", "b", "c"]);
}

#[test]
fn flow_hashes_are_upstreams() {
    // SHA-256("global-default\0alice"), first 8 bytes little-endian.
    let schema = Schema::from_object(
        &json!({"metadata": {"name": "global-default"}, "spec": {"distinguisherMethod": {"type": "ByUser"}}}),
    );
    let (distinguisher, hash) = schema.flow(&user("alice", &[]), &resource("get", "", "pods", "a"));
    assert_eq!(distinguisher, "alice");
    let digest = Sha256::digest(b"global-default\0alice");
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    assert_eq!(hash, u64::from_le_bytes(first));
}
