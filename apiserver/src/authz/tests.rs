use super::*;
use registry::auth::{Decision, Verdict};

fn jane() -> Arc<UserInfo> {
    Arc::new(UserInfo {
        name: "jane".into(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    })
}

fn resource(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
    Attributes {
        user: jane(),
        verb: verb.into(),
        resource_request: true,
        namespace: ns.into(),
        api_group: group.into(),
        api_version: "v1".into(),
        resource: resource.into(),
        name: name.into(),
        ..Default::default()
    }
}

fn message(attributes: &Attributes, reason: &str) -> String {
    forbidden_status(attributes, reason).message
}

#[test]
fn messages_are_upstreams() {
    assert_eq!(
        message(&resource("list", "", "configmaps", "default", ""), ""),
        r#"configmaps is forbidden: User "jane" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    assert_eq!(
        message(&resource("get", "apps", "deployments", "a", "web"), ""),
        r#"deployments.apps "web" is forbidden: User "jane" cannot get resource "deployments" in API group "apps" in the namespace "a""#
    );
    let mut scale = resource("update", "apps", "deployments", "", "web");
    scale.subresource = "scale".into();
    assert_eq!(
        message(
            &scale,
            "RBAC: role.rbac.authorization.k8s.io \"x\" not found"
        ),
        r#"deployments.apps "web" is forbidden: User "jane" cannot update resource "deployments/scale" in API group "apps" at the cluster scope: RBAC: role.rbac.authorization.k8s.io "x" not found"#
    );
    let path = Attributes {
        user: jane(),
        verb: "get".into(),
        path: "/metrics".into(),
        ..Default::default()
    };
    assert_eq!(
        message(&path, ""),
        r#"forbidden: User "jane" cannot get path "/metrics""#
    );
    // Nothing that looks like HTML in the part the request controls.
    let html = Attributes {
        path: "/<script>&".into(),
        ..path
    };
    assert_eq!(
        message(&html, ""),
        r#"forbidden: User "jane" cannot get path "/&lt;script&gt;&amp;""#
    );
}

#[test]
fn the_status_is_upstreams() {
    let status = forbidden_status(&resource("get", "apps", "deployments", "a", "web"), "");
    let json = serde_json::to_value(&status).expect("json");
    assert_eq!(json["code"], 403);
    assert_eq!(json["reason"], "Forbidden");
    assert_eq!(
        json["details"],
        serde_json::json!({"name": "web", "group": "apps", "kind": "deployments"})
    );
    // Empty details are left out, as Go's omitempty leaves them.
    let core = serde_json::to_value(forbidden_status(&resource("list", "", "pods", "a", ""), ""))
        .expect("json");
    assert_eq!(core["details"], serde_json::json!({"kind": "pods"}));
}

#[test]
fn modes_parse_as_upstream_validates_them() {
    let list = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        Mode::parse_list(&list("RBAC,AlwaysDeny")),
        Ok(vec![Mode::Rbac, Mode::AlwaysDeny])
    );
    assert_eq!(
        Mode::parse_list(&list("Foo")),
        Err(ModeError::Unknown("Foo".into()))
    );
    assert_eq!(
        Mode::parse_list(&list("RBAC,Node")),
        Err(ModeError::Unsupported("Node".into()))
    );
    assert!(matches!(
        Mode::parse_list(&list("RBAC,RBAC")),
        Err(ModeError::Repeated(_))
    ));
    assert_eq!(Mode::parse_list(&[]), Err(ModeError::Empty));
    assert!(ModeError::Unknown("Foo".into())
        .to_string()
        .contains("\"Foo\" is not a valid mode"));
}

#[test]
fn the_privileged_groups_come_first_and_rules_leave_them_out() {
    let deny = Authorization::new(&[Mode::AlwaysDeny], None);
    let mut admin = resource("get", "", "pods", "a", "");
    admin.user = Arc::new(UserInfo::loopback());
    assert!(deny.authorizer.authorize(&admin).allowed());
    assert_eq!(
        deny.authorizer
            .authorize(&resource("get", "", "pods", "a", "")),
        Verdict {
            decision: Decision::NoOpinion,
            reason: "Everything is forbidden.".into()
        }
    );
    // The loopback user's rules come from the modes alone: AlwaysDeny lists none.
    let rules = deny.rules.rules_for(&UserInfo::loopback(), "a");
    assert!(rules.resource_rules.is_empty() && !rules.incomplete);
    let allow = Authorization::always_allow();
    assert_eq!(
        allow
            .authorizer
            .authorize(&resource("delete", "", "secrets", "a", "s"))
            .decision,
        Decision::Allow
    );
}
