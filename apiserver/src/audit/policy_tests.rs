use std::sync::Arc;

use registry::auth::{Attributes, UserInfo};

use super::*;

/// The example policy of upstream's auditing documentation.
const DOCS_EXAMPLE: &str = r#"
apiVersion: audit.k8s.io/v1 # This is required.
kind: Policy
# Don't generate audit events for all requests in RequestReceived stage.
omitStages:
  - "RequestReceived"
rules:
  # Log pod changes at RequestResponse level
  - level: RequestResponse
    resources:
    - group: ""
      # Resource "pods" doesn't match requests to any subresource of pods,
      # which is consistent with the RBAC policy.
      resources: ["pods"]
  # Log "pods/log", "pods/status" at Metadata level
  - level: Metadata
    resources:
    - group: ""
      resources: ["pods/log", "pods/status"]

  # Don't log requests to a configmap called "controller-leader"
  - level: None
    resources:
    - group: ""
      resources: ["configmaps"]
      resourceNames: ["controller-leader"]

  # Don't log watch requests by the "system:kube-proxy" on endpoints or services
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
    resources:
    - group: "" # core API group
      resources: ["endpoints", "services"]

  # Don't log authenticated requests to certain non-resource URL paths.
  - level: None
    userGroups: ["system:authenticated"]
    nonResourceURLs:
    - "/api*" # Wildcard matching.
    - "/version"

  # Log the request body of configmap changes in kube-system.
  - level: Request
    resources:
    - group: "" # core API group
      resources: ["configmaps"]
    # This rule only applies to resources in the "kube-system" namespace.
    # The empty string "" can be used to select non-namespaced resources.
    namespaces: ["kube-system"]

  # Log configmap and secret changes in all other namespaces at the Metadata level.
  - level: Metadata
    resources:
    - group: "" # core API group
      resources: ["secrets", "configmaps"]

  # Log all other resources in core and extensions at the Request level.
  - level: Request
    resources:
    - group: "" # core API group
    - group: "extensions" # Version of group should NOT be included.

  # A catch-all rule to log all other requests at the Metadata level.
  - level: Metadata
    # Long-running requests like watches that fall under this rule will not
    # generate an audit event in RequestReceived.
    omitStages:
      - "RequestReceived"
"#;

fn user(name: &str, groups: &[&str]) -> Arc<UserInfo> {
    Arc::new(UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    })
}

fn admin() -> Arc<UserInfo> {
    user("system:admin", &["system:masters", "system:authenticated"])
}

/// `path` is `[group:]resource[/subresource]`.
fn resource(
    user: Arc<UserInfo>,
    verb: &str,
    namespace: &str,
    path: &str,
    name: &str,
) -> Attributes {
    let (group, rest) = path.split_once(':').unwrap_or(("", path));
    let (resource, subresource) = rest.split_once('/').unwrap_or((rest, ""));
    Attributes {
        user,
        verb: verb.into(),
        resource_request: true,
        namespace: namespace.into(),
        api_group: group.into(),
        api_version: "v1".into(),
        resource: resource.into(),
        subresource: subresource.into(),
        name: name.into(),
        path: format!("/api/v1/{path}"),
    }
}

fn non_resource(user: Arc<UserInfo>, verb: &str, path: &str) -> Attributes {
    Attributes {
        user,
        verb: verb.into(),
        path: path.into(),
        ..Default::default()
    }
}

fn level(policy: &Policy, a: &Attributes) -> Level {
    policy.evaluate(a).level
}

#[test]
fn upstream_documentation_example() {
    let p = Policy::parse(DOCS_EXAMPLE.as_bytes()).expect("the documented policy loads");
    assert_eq!(p.rules.len(), 9);
    let a = admin;
    let cases = [
        (
            resource(a(), "create", "default", "pods", "web"),
            Level::RequestResponse,
        ),
        // "pods" does not match pods' subresources.
        (
            resource(a(), "get", "default", "pods/log", "web"),
            Level::Metadata,
        ),
        (
            resource(a(), "update", "default", "pods/status", "web"),
            Level::Metadata,
        ),
        (
            resource(a(), "create", "default", "pods/binding", "web"),
            Level::Request,
        ),
        (
            resource(
                a(),
                "update",
                "kube-system",
                "configmaps",
                "controller-leader",
            ),
            Level::None,
        ),
        (
            resource(a(), "update", "kube-system", "configmaps", "other"),
            Level::Request,
        ),
        (
            resource(a(), "update", "default", "configmaps", "other"),
            Level::Metadata,
        ),
        (
            resource(a(), "get", "default", "secrets", "s"),
            Level::Metadata,
        ),
        (
            resource(user("system:kube-proxy", &[]), "watch", "", "services", ""),
            Level::None,
        ),
        (
            resource(user("system:kube-proxy", &[]), "list", "", "services", ""),
            Level::Request,
        ),
        (resource(a(), "watch", "", "services", ""), Level::Request),
        (non_resource(a(), "get", "/apis/apps"), Level::None),
        (non_resource(a(), "get", "/api"), Level::None),
        (non_resource(a(), "get", "/version"), Level::None),
        (non_resource(a(), "get", "/version/x"), Level::Metadata),
        (
            non_resource(
                user("system:anonymous", &["system:unauthenticated"]),
                "get",
                "/api",
            ),
            Level::Metadata,
        ),
        (
            resource(a(), "get", "default", "apps:deployments", "d"),
            Level::Metadata,
        ),
        (
            resource(a(), "get", "default", "extensions:ingresses", "i"),
            Level::Request,
        ),
    ];
    for (attributes, want) in cases {
        assert_eq!(level(&p, &attributes), want, "{attributes:?}");
    }
    // The policy's omitStages add to every rule's.
    let pods = p.evaluate(&resource(a(), "create", "default", "pods", "web"));
    assert!(pods.omit_stages.contains(Stage::RequestReceived));
    assert!(!pods.omit_stages.contains(Stage::ResponseComplete));
}

#[test]
fn resource_wildcards_names_and_namespaces() {
    let p = Policy::parse(
        br#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  resources: [{group: apps, resources: ["*/scale"]}]
- level: Request
  resources: [{resources: ["pods/*"]}]
- level: Metadata
  namespaces: [""]
- level: None
  resources: [{resources: ["secrets"], resourceNames: [hidden]}]
- level: Request
  resources: [{group: "", resources: ["*"]}]
"#,
    )
    .expect("policy");
    let a = admin;
    let cases = [
        (
            resource(a(), "update", "default", "apps:deployments/scale", "d"),
            Level::RequestResponse,
        ),
        (
            resource(a(), "update", "default", "apps:deployments", "d"),
            Level::None,
        ),
        (
            resource(a(), "get", "default", "pods/log", "p"),
            Level::Request,
        ),
        (resource(a(), "get", "default", "pods", "p"), Level::Request),
        (resource(a(), "get", "", "nodes", "n"), Level::Metadata),
        (
            resource(a(), "get", "default", "secrets", "hidden"),
            Level::None,
        ),
        (
            resource(a(), "get", "default", "secrets", "shown"),
            Level::Request,
        ),
        // A rule naming resources matches no non-resource request.
        (non_resource(a(), "get", "/healthz"), Level::None),
    ];
    for (attributes, want) in cases {
        assert_eq!(level(&p, &attributes), want, "{attributes:?}");
    }
}

#[test]
fn first_matching_rule_wins_and_no_rule_is_none() {
    let p = Policy::parse(
        br#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","omitStages":["Panic"],
             "rules":[
               {"level":"None","users":["noisy"]},
               {"level":"Metadata","userGroups":["devs"],"verbs":["create","delete"],
                "omitStages":["RequestReceived"],"omitManagedFields":false},
               {"level":"RequestResponse","nonResourceURLs":["/healthz*","/metrics"]}
             ],"omitManagedFields":true}"#,
    )
    .expect("JSON policy");
    let dev = || user("jane", &["devs"]);
    assert_eq!(
        level(
            &p,
            &resource(user("noisy", &["devs"]), "create", "d", "pods", "")
        ),
        Level::None
    );
    let created = p.evaluate(&resource(dev(), "create", "d", "pods", ""));
    assert_eq!(created.level, Level::Metadata);
    assert!(created.omit_stages.contains(Stage::RequestReceived));
    assert!(created.omit_stages.contains(Stage::Panic));
    assert!(!created.omit_managed_fields, "the rule's setting wins");
    assert_eq!(
        level(&p, &resource(dev(), "get", "d", "pods", "")),
        Level::None
    );
    let health = p.evaluate(&non_resource(dev(), "get", "/healthz/etcd"));
    assert_eq!(health.level, Level::RequestResponse);
    assert!(health.omit_managed_fields, "the policy's default");
    assert_eq!(
        level(&p, &non_resource(dev(), "get", "/metrics")),
        Level::RequestResponse
    );
    assert_eq!(
        level(&p, &non_resource(dev(), "get", "/metricsx")),
        Level::None
    );
    let unmatched = p.evaluate(&non_resource(dev(), "get", "/version"));
    assert_eq!(unmatched.level, Level::None);
    assert!(unmatched.omit_stages.contains(Stage::Panic));
}

#[test]
fn invalid_policies_are_refused_with_upstream_messages() {
    let refused = |doc: &str| Policy::parse(doc.as_bytes()).expect_err(doc).to_string();
    let head = "apiVersion: audit.k8s.io/v1\nkind: Policy\n";
    assert_eq!(refused(head), "loaded illegal policy with 0 rules");
    assert_eq!(refused(""), "failed decoding: Object 'Kind' is missing");
    assert_eq!(
        refused("kind: Policy\nrules: [{level: None}]"),
        "failed decoding: Object 'apiVersion' is missing"
    );
    assert_eq!(
        refused("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]"),
        r#"failed decoding: no kind "Policy" is registered for version "audit.k8s.io/v1beta1""#
    );
    assert!(refused(&format!("{head}rules: 3")).starts_with("failed decoding: "));
    assert_eq!(
        refused(&format!("{head}rules: [{{level: Everything}}]")),
        r#"rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse""#
    );
    assert_eq!(
        refused(&format!("{head}rules: [{{verbs: [get]}}]")),
        "rules[0].level: Required value"
    );
    assert_eq!(
        refused(&format!(
            "{head}rules: [{{level: None, omitStages: [Done]}}]"
        )),
        r#"rules[0].omitStages[0]: Invalid value: "Done": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"#
    );
    assert_eq!(
        refused(&format!(
            "{head}omitStages: [Later]\nrules: [{{level: None}}]"
        )),
        r#"omitStages[0]: Invalid value: "Later": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"#
    );
    assert_eq!(
        refused(&format!(
            "{head}rules: [{{level: None, nonResourceURLs: [healthz]}}]"
        )),
        r#"rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must begin with a '/' character"#
    );
    assert_eq!(
        refused(&format!(
            "{head}rules: [{{level: None, nonResourceURLs: ['/a*/b']}}]"
        )),
        r#"rules[0].nonResourceURLs[0]: Invalid value: "/a*/b": non-resource URL wildcards '*' must be the final character of the rule"#
    );
    // Found by fuzzing: a URL ending in a multi-byte character was sliced inside it.
    assert_eq!(
        refused(&format!(
            "{head}rules: [{{level: None, nonResourceURLs: ['/њ', 'њ']}}]"
        )),
        r#"rules[0].nonResourceURLs[1]: Invalid value: "њ": non-resource URL rules must begin with a '/' character"#
    );
    assert!(refused(&format!(
        "{head}rules: [{{level: None, nonResourceURLs: ['/*њ']}}]"
    ))
    .ends_with("non-resource URL wildcards '*' must be the final character of the rule"));
    let both = refused(&format!(
        "{head}rules: [{{level: None, nonResourceURLs: ['/x'], namespaces: [a]}}]"
    ));
    assert!(
        both.ends_with("rules cannot apply to both regular resources and non-resource URLs"),
        "{both}"
    );
    let names = refused(&format!(
        "{head}rules: [{{level: None, resources: [{{resourceNames: [a]}}]}}]"
    ));
    assert!(
        names.ends_with("using resourceNames requires at least one resource"),
        "{names}"
    );
    let group = refused(&format!(
        "{head}rules: [{{level: None, resources: [{{group: apps/v1}}]}}]"
    ));
    assert!(
        group.starts_with(r#"rules[0].resources.group: Invalid value: "apps/v1""#),
        "{group}"
    );
    // Several errors are listed together.
    let several = refused(&format!("{head}rules: [{{level: A}}, {{level: B}}]"));
    assert!(
        several.starts_with("[rules[0].level") && several.contains(", rules[1].level"),
        "{several}"
    );
}

#[test]
fn nulls_read_as_empty_and_unknown_fields_are_ignored() {
    let p = Policy::parse(
        b"apiVersion: audit.k8s.io/v1\nkind: Policy\nmetadata: {name: x}\nomitStages:\nrules:\n- level: Metadata\n  users:\n  future: 1\n",
    )
    .expect("policy");
    assert_eq!(
        level(&p, &non_resource(admin(), "get", "/")),
        Level::Metadata
    );
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, "apiVersion: audit.k8s.io/v1\nkind: Policy\n").expect("write");
    let err = Policy::load(&path).expect_err("no rules").to_string();
    assert_eq!(
        err,
        format!(
            "loaded illegal policy with 0 rules: from file {}",
            path.display()
        )
    );
    let missing = Policy::load(&dir.path().join("none.yaml"))
        .expect_err("missing")
        .to_string();
    assert!(missing.starts_with("failed to read file path"), "{missing}");
}
