use super::*;
use crate::api::create_only;
use crate::authz::Mode;
use crate::reviews::creaters;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, Method};
use axum::response::Response;
use axum::Extension;
use registry::auth::{AlwaysAllow, Attributes, Authorizer, Rules, UserInfo, Verdict};

// Each review as the API's create-only path serves it.

async fn subject(
    State(authorization): State<Authorization>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let creater = SubjectAccess(authorization);
    create_only::serve(&creater, &method, None, &headers, body, None).await
}

async fn local(
    State(authorization): State<Authorization>,
    Path(namespace): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let creater = LocalSubjectAccess(authorization);
    create_only::serve(&creater, &method, Some(&namespace), &headers, body, None).await
}

async fn self_access(
    State(authorization): State<Authorization>,
    user: Option<Extension<UserInfo>>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let creater = SelfSubjectAccess(authorization);
    let user = user.map(|Extension(user)| user);
    create_only::serve(&creater, &method, None, &headers, body, user.as_ref()).await
}

async fn self_rules(
    State(authorization): State<Authorization>,
    user: Option<Extension<UserInfo>>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let creater = SelfSubjectRules(authorization);
    let user = user.map(|Extension(user)| user);
    create_only::serve(&creater, &method, None, &headers, body, user.as_ref()).await
}

/// Allows `get` of pods in namespace `a` to `jane` and to group `devs`; lists that rule.
struct PodsInA;

impl Authorizer for PodsInA {
    fn authorize(&self, a: &Attributes) -> Verdict {
        let who = a.user.name == "jane" || a.user.in_group("devs");
        if who
            && a.resource_request
            && a.verb == "get"
            && a.resource == "pods"
            && a.namespace == "a"
        {
            Verdict::allow("RBAC: allowed by RoleBinding \"r/a\"")
        } else {
            Verdict::no_opinion()
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let mut rules = Rules::default();
        if user.name == "jane" && namespace == "a" {
            rules.resource_rules.push(registry::auth::ResourceRule {
                verbs: vec!["get".into()],
                api_groups: vec!["".into()],
                resources: vec!["pods".into()],
                resource_names: Vec::new(),
            });
        }
        rules
    }
}

fn authorization() -> Authorization {
    Authorization::new(&[Mode::Rbac], Some(Arc::new(PodsInA)))
}

fn json_headers() -> HeaderMap {
    HeaderMap::from_iter([(
        header::CONTENT_TYPE,
        "application/json".parse().expect("value"),
    )])
}

fn jane() -> Option<Extension<UserInfo>> {
    Some(Extension(UserInfo {
        name: "jane".into(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    }))
}

async fn body_of(response: Response) -> (u16, Value) {
    let code = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (code, serde_json::from_slice(&bytes).expect("json"))
}

async fn post_subject(body: Value) -> (u16, Value) {
    body_of(
        subject(
            State(authorization()),
            Method::POST,
            json_headers(),
            Body::from(body.to_string()),
        )
        .await,
    )
    .await
}

#[tokio::test]
async fn a_subject_access_review_judges_its_subject() {
    let (code, review) = post_subject(json!({
        "kind": "SubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "spec": {
            "user": "jane",
            "resourceAttributes": {"namespace": "a", "verb": "get", "resource": "pods"},
        },
    }))
    .await;
    assert_eq!(code, 201, "{review}");
    assert_eq!(
        review["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"r/a\""})
    );
    assert_eq!(review["kind"], "SubjectAccessReview");
    assert_eq!(review["spec"]["user"], "jane");
    assert_eq!(review["metadata"], json!({"creationTimestamp": null}));
    // By group; elsewhere not allowed (and not denied: no authorizer said no).
    let (_, by_group) = post_subject(json!({"spec": {
        "groups": ["devs"],
        "resourceAttributes": {"namespace": "a", "verb": "get", "resource": "pods"},
    }}))
    .await;
    assert_eq!(by_group["status"]["allowed"], true);
    let (_, elsewhere) = post_subject(json!({"spec": {
        "user": "jane",
        "resourceAttributes": {"namespace": "b", "verb": "get", "resource": "pods"},
    }}))
    .await;
    assert_eq!(elsewhere["status"], json!({"allowed": false}));
}

#[tokio::test]
async fn bad_reviews_are_refused_as_upstream_refuses_them() {
    let (code, status) =
        post_subject(json!({"spec": {"resourceAttributes": {"verb": "get"}}})).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified"
    );
    let (code, status) = post_subject(json!({"spec": {"user": "jane"}})).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["details"]["causes"][0]["field"],
        "spec.resourceAttributes"
    );
    let (code, status) = post_subject(json!({"spec": {
        "user": "jane",
        "resourceAttributes": {"verb": "get"},
        "nonResourceAttributes": {"path": "/x", "verb": "get"},
    }}))
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Invalid value: authorization.NonResourceAttributes{Path:\"/x\", Verb:\"get\"}: cannot be specified in combination with resourceAttributes"
    );
    let (code, status) = post_subject(json!({"metadata": {"name": "x"}, "spec": {
        "user": "jane", "resourceAttributes": {"verb": "get"}}}))
    .await;
    assert_eq!(
        (code, status["details"]["causes"][0]["field"].clone()),
        (422, json!("metadata"))
    );
    // Undecodable bodies and wrong kinds: 400.
    let (code, status) = post_subject(json!({"spec": {"user": 3}})).await;
    assert_eq!(
        (code, status["reason"].clone()),
        (400, json!("BadRequest")),
        "{status}"
    );
    let (code, _) = post_subject(json!({"kind": "Pod", "spec": {}})).await;
    assert_eq!(code, 400);
    let raw = subject(
        State(authorization()),
        Method::POST,
        json_headers(),
        Body::from("{not json"),
    )
    .await;
    assert_eq!(raw.status().as_u16(), 400);
    let get = subject(
        State(authorization()),
        Method::GET,
        json_headers(),
        Body::empty(),
    )
    .await;
    assert_eq!(get.status().as_u16(), 405);
}

#[tokio::test]
async fn a_local_review_stays_in_its_namespace() {
    let post = |ns: &str, body: Value| {
        local(
            State(authorization()),
            Path(ns.to_string()),
            Method::POST,
            json_headers(),
            Body::from(body.to_string()),
        )
    };
    let spec = json!({"user": "jane", "resourceAttributes": {"namespace": "a", "verb": "get", "resource": "pods"}});
    let (code, review) = body_of(post("a", json!({"spec": spec})).await).await;
    assert_eq!(code, 201, "{review}");
    assert_eq!(review["status"]["allowed"], true);
    assert_eq!(review["metadata"]["namespace"], "a");
    let (code, status) = body_of(post("b", json!({"spec": spec})).await).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Invalid value: \"a\": must match metadata.namespace"
    );
    let (code, _) =
        body_of(post("b", json!({"metadata": {"namespace": "a"}, "spec": spec})).await).await;
    assert_eq!(code, 400);
}

#[tokio::test]
async fn self_reviews_judge_the_requester() {
    let (code, review) = body_of(
        self_access(
            State(authorization()),
            jane(),
            Method::POST,
            json_headers(),
            Body::from(
                json!({"spec": {"user": "root", "resourceAttributes": {"namespace": "a", "verb": "get", "resource": "pods"}}})
                    .to_string(),
            ),
        )
        .await,
    )
    .await;
    assert_eq!(code, 201, "{review}");
    assert_eq!(review["status"]["allowed"], true);
    // A self review has no subject of its own to echo.
    assert!(review["spec"].get("user").is_none());
    let (code, review) = body_of(
        self_rules(
            State(authorization()),
            jane(),
            Method::POST,
            json_headers(),
            Body::from(json!({"spec": {"namespace": "a"}}).to_string()),
        )
        .await,
    )
    .await;
    assert_eq!(code, 201, "{review}");
    assert_eq!(
        review["status"],
        json!({
            "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
            "nonResourceRules": [],
            "incomplete": false,
        })
    );
    assert_eq!(review["spec"], json!({}));
    let (code, status) = body_of(
        self_rules(
            State(authorization()),
            jane(),
            Method::POST,
            json_headers(),
            Body::from("{}"),
        )
        .await,
    )
    .await;
    assert_eq!(
        (code, status["message"].clone()),
        (400, json!("no namespace on request"))
    );
}

#[test]
fn rules_leave_the_privileged_groups_out_but_access_has_them() {
    let allow = Authorization::new(&[Mode::AlwaysAllow], None);
    let rules = allow.rules.rules_for(&UserInfo::anonymous(), "a");
    assert_eq!(rules, AlwaysAllow.rules_for(&UserInfo::anonymous(), "a"));
}

#[test]
fn discovery_lists_the_reviews() {
    let resources = registry::Catalogue::builtin().all();
    let list = crate::discovery::resource_list(&resources, GROUP, VERSION).expect("listed");
    let names: Vec<(&str, bool)> = list["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default(),
                r["namespaced"] == true,
            )
        })
        .collect();
    for expected in [
        ("localsubjectaccessreviews", true),
        ("selfsubjectaccessreviews", false),
        ("selfsubjectrulesreviews", false),
        ("subjectaccessreviews", false),
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    assert!(list["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .all(|r| r["verbs"] == json!(["create"])));
}

#[test]
fn every_create_only_resource_has_a_creater() {
    let creaters = creaters(&Authorization::always_allow(), &Default::default());
    let catalogue = registry::Catalogue::builtin();
    let all = catalogue.all();
    // Bindings are pods' binding subresource by another path (see api::request_info).
    let create_only: Vec<_> = all
        .iter()
        .filter(|r| r.create_only && r.plural != "bindings")
        .collect();
    assert_eq!(create_only.len(), 6);
    for info in create_only {
        assert!(
            creaters.get(&info.group, &info.kind).is_some(),
            "{}",
            info.kind
        );
    }
}
