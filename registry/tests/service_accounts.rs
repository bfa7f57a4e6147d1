//! Service account tokens through the registry: the `token` subresource (TokenRequest) issues
//! bound JWTs that authenticate as the account while it, and the pod or secret they are
//! bound to, exist; and the ServiceAccount admission of pod creates.

mod support;

use std::time::Instant;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use rcgen::PublicKeyData;
use registry::auth::CREDENTIAL_ID;
use registry::options::WriteOptions;
use registry::serviceaccount::{SigningKey, TokenConfig, Verifier, VerifyingKey};
use registry::RegistryError;
use serde_json::{json, Value};
use support::{delete, dry_run, list, write, Harness};

test_support::both_backends!(
    crate::support::Harness;
    token_requests_issue_tokens_that_authenticate,
    token_request_errors_are_upstreams,
    bound_tokens_die_with_their_object,
    admission_defaults_the_account_and_mounts_its_token,
    admission_refuses_missing_accounts_and_mirror_pods,
);

const NS: &str = "team";
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

fn config(max_expiration_seconds: i64) -> TokenConfig {
    let pair = rcgen::KeyPair::generate().expect("generate key");
    let der = pair.subject_public_key_info();
    TokenConfig {
        signer: SigningKey::new(
            EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).expect("signing key"),
            Algorithm::ES256,
            &der,
        ),
        verifier: Verifier {
            keys: vec![VerifyingKey::new(
                DecodingKey::from_ec_pem(pair.public_key_pem().as_bytes()).expect("key"),
                Algorithm::ES256,
                &der,
            )],
            issuers: vec![ISSUER.into()],
            audiences: vec![ISSUER.into()],
        },
        max_expiration_seconds,
        extend_expiration: true,
    }
}

async fn setup(h: &Harness, max_expiration_seconds: i64) {
    h.registry
        .set_service_account_tokens(config(max_expiration_seconds));
    h.namespace(NS).await;
}

async fn create(h: &Harness, plural: &str, obj: Value) -> Value {
    h.store("", plural)
        .create(Some(NS), obj, &write())
        .await
        .unwrap_or_else(|e| panic!("create {plural}: {e}"))
}

async fn account(h: &Harness, name: &str) -> Value {
    create(h, "serviceaccounts", json!({"metadata": {"name": name}})).await
}

async fn token(h: &Harness, account: &str, request: Value) -> Result<Value, RegistryError> {
    h.registry
        .create_token(Some(NS), account, &request, &WriteOptions::default())
        .await
}

fn token_of(response: &Value) -> &str {
    response["status"]["token"].as_str().expect("status.token")
}

async fn token_requests_issue_tokens_that_authenticate(h: &Harness) {
    setup(h, 0).await;
    let sa = account(h, "builder").await;
    let before = chrono::Utc::now();
    let issued = token(
        h,
        "builder",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
    )
    .await
    .expect("token");
    assert_eq!(issued["kind"], "TokenRequest");
    assert_eq!(issued["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(issued["metadata"]["name"], "builder");
    assert_eq!(issued["metadata"]["namespace"], NS);
    assert_eq!(issued["spec"]["audiences"], json!([ISSUER]));
    assert_eq!(issued["spec"]["expirationSeconds"], 3600);
    let expires = issued["status"]["expirationTimestamp"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .expect("expirationTimestamp");
    let lifetime = expires.timestamp() - before.timestamp();
    assert!((3599..=3601).contains(&lifetime), "{lifetime}");

    let user = h
        .registry
        .authenticate_service_account_token(token_of(&issued))
        .await
        .expect("valid")
        .expect("ours");
    assert_eq!(user.name, "system:serviceaccount:team:builder");
    assert_eq!(user.uid, sa["metadata"]["uid"].as_str().expect("uid"));
    assert_eq!(
        user.groups,
        ["system:serviceaccounts", "system:serviceaccounts:team"]
    );
    let credential = &user.extra[CREDENTIAL_ID][0];
    assert!(
        credential.starts_with("JTI=") && credential.len() == 40,
        "{credential}"
    );

    // Another audience: issued, but not for this API.
    let vault = token(
        h,
        "builder",
        json!({"spec": {"audiences": ["vault"], "expirationSeconds": 1200}}),
    )
    .await
    .expect("token");
    assert_eq!(vault["spec"]["audiences"], json!(["vault"]));
    assert_eq!(vault["spec"]["expirationSeconds"], 1200);
    assert!(h
        .registry
        .authenticate_service_account_token(token_of(&vault))
        .await
        .is_err());
    // Not our issuer at all: someone else's token, not an error.
    assert_eq!(
        h.registry
            .authenticate_service_account_token("not.a.jwt")
            .await,
        Ok(None)
    );
}

async fn token_request_errors_are_upstreams(h: &Harness) {
    setup(h, 7200).await;
    account(h, "builder").await;
    let err = token(h, "ghost", json!({})).await.expect_err("no account");
    assert_eq!(err.code(), 404);
    assert_eq!(err.to_string(), "serviceaccounts \"ghost\" not found");

    let err = token(h, "builder", json!({"spec": {"expirationSeconds": 599}}))
        .await
        .expect_err("too short");
    assert_eq!(err.code(), 422);
    assert_eq!(
        err.to_string(),
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
    );
    let err = token(h, "builder", json!({"metadata": {"name": "other"}}))
        .await
        .expect_err("name mismatch");
    assert_eq!(err.code(), 422);

    // Capped by --service-account-max-token-expiration.
    let (capped, warnings) = registry::warning::collect(token(
        h,
        "builder",
        json!({"spec": {"expirationSeconds": 100000}}),
    ))
    .await;
    assert_eq!(capped.expect("token")["spec"]["expirationSeconds"], 7200);
    assert_eq!(
        warnings,
        ["requested expiration of 100000 seconds shortened to 7200 seconds"]
    );

    let bound = |kind: &str, name: &str| json!({"spec": {"boundObjectRef": {"kind": kind, "apiVersion": "v1", "name": name}}});
    let err = token(h, "builder", bound("ConfigMap", "x"))
        .await
        .expect_err("configmap");
    assert_eq!(err.code(), 400);
    assert_eq!(
        err.to_string(),
        "cannot bind token to object of type /v1, Kind=ConfigMap"
    );
    let err = token(h, "builder", bound("Pod", "missing"))
        .await
        .expect_err("missing pod");
    assert_eq!(err.code(), 404);
    create(
        h,
        "pods",
        json!({"metadata": {"name": "other-sa"},
               "spec": {"serviceAccountName": "someone", "containers": [{"name": "c", "image": "nginx"}]}}),
    )
    .await;
    let err = token(h, "builder", bound("Pod", "other-sa"))
        .await
        .expect_err("pod of another account");
    assert_eq!(err.code(), 400);
    let mut wrong_uid = bound("Pod", "other-sa");
    wrong_uid["spec"]["boundObjectRef"]["uid"] = json!("not-the-uid");
    let err = token(h, "someone", wrong_uid).await;
    // `someone` has no account: that is found first.
    assert_eq!(err.expect_err("no account").code(), 404);
    account(h, "someone").await;
    let mut wrong_uid = bound("Pod", "other-sa");
    wrong_uid["spec"]["boundObjectRef"]["uid"] = json!("not-the-uid");
    let err = token(h, "someone", wrong_uid).await.expect_err("uid");
    assert_eq!(err.code(), 409);
    assert!(
        err.to_string().starts_with("Operation cannot be fulfilled on Pod \"other-sa\": the UID in the bound object reference (not-the-uid) does not match"),
        "{err}"
    );
}

async fn bound_tokens_die_with_their_object(h: &Harness) {
    setup(h, 0).await;
    account(h, "builder").await;
    let pod = create(
        h,
        "pods",
        json!({"metadata": {"name": "p"},
               "spec": {"serviceAccountName": "builder", "containers": [{"name": "c", "image": "nginx"}]}}),
    )
    .await;
    let pod_uid = pod["metadata"]["uid"].as_str().expect("uid").to_string();
    let issued = token(
        h,
        "builder",
        json!({"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": pod_uid}}}),
    )
    .await
    .expect("token");
    let user = h
        .registry
        .authenticate_service_account_token(token_of(&issued))
        .await
        .expect("valid")
        .expect("ours");
    assert_eq!(
        user.extra["authentication.kubernetes.io/pod-name"],
        ["p".to_string()]
    );
    assert_eq!(
        user.extra["authentication.kubernetes.io/pod-uid"],
        [pod_uid]
    );

    let secret = create(h, "secrets", json!({"metadata": {"name": "s"}})).await;
    let by_secret = token(
        h,
        "builder",
        json!({"spec": {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s",
                                           "uid": secret["metadata"]["uid"]}}}),
    )
    .await
    .expect("token");
    let plain = token(h, "builder", json!({})).await.expect("token");
    for t in [&by_secret, &plain] {
        assert!(h
            .registry
            .authenticate_service_account_token(token_of(t))
            .await
            .is_ok_and(|u| u.is_some()));
    }

    // The pod is unscheduled: it goes at once, and so does its token.
    h.store("", "pods")
        .delete(Some(NS), "p", delete())
        .await
        .expect("delete pod");
    h.store("", "secrets")
        .delete(Some(NS), "s", delete())
        .await
        .expect("delete secret");
    for t in [&issued, &by_secret] {
        refused_soon(h, token_of(t)).await;
    }
    // A pod of the same name again is another pod.
    create(
        h,
        "pods",
        json!({"metadata": {"name": "p"},
               "spec": {"serviceAccountName": "builder", "containers": [{"name": "c", "image": "nginx"}]}}),
    )
    .await;
    assert!(h
        .registry
        .authenticate_service_account_token(token_of(&issued))
        .await
        .is_err());
    // The account made again is another account: its old tokens are refused.
    h.store("", "serviceaccounts")
        .delete(Some(NS), "builder", delete())
        .await
        .expect("delete account");
    account(h, "builder").await;
    let refused = h
        .registry
        .authenticate_service_account_token(token_of(&plain))
        .await;
    assert!(
        matches!(&refused, Err(e) if e.to_string().starts_with("service account UID")),
        "{refused:?}"
    );
}

/// The token is refused once the watch cache has seen the deletion (at once, or nearly).
async fn refused_soon(h: &Harness, token: &str) {
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let outcome = h.registry.authenticate_service_account_token(token).await;
        if outcome.is_err() {
            return;
        }
        assert!(Instant::now() < deadline, "still accepted: {outcome:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The plugins kube-apiserver runs by default (ServiceAccount among them), as the server sets them.
fn server_admission(h: &Harness) {
    let defaults = registry::admission::resolve(&[], &[]).expect("the defaults resolve");
    h.registry.set_admission_plugins(&defaults.enabled);
    assert!(h.registry.admission_plugins().contains(&"ServiceAccount"));
}

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "image": "nginx"}]);
    json!({"metadata": {"name": name}, "spec": spec})
}

async fn admission_defaults_the_account_and_mounts_its_token(h: &Harness) {
    server_admission(h);
    setup(h, 0).await;
    account(h, "default").await;
    let pods = h.store("", "pods");
    let created = pods
        .create(Some(NS), pod("web", json!({})), &write())
        .await
        .expect("create");
    assert_eq!(created["spec"]["serviceAccountName"], "default");
    assert_eq!(created["spec"]["serviceAccount"], "default");
    let volume = &created["spec"]["volumes"][0];
    let name = volume["name"].as_str().expect("volume");
    assert!(name.starts_with("kube-api-access-"), "{name}");
    assert_eq!(
        created["spec"]["containers"][0]["volumeMounts"],
        json!([{"name": name, "readOnly": true,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}])
    );
    // Stored as admitted; updates are not admitted again.
    let stored = pods.get(Some(NS), "web", &list()).await.expect("get");
    assert_eq!(stored["spec"]["volumes"], created["spec"]["volumes"]);
    let patched = pods
        .patch(
            Some(NS),
            "web",
            registry::patch::PatchType::Merge,
            br#"{"metadata": {"labels": {"tier": "front"}}}"#,
            registry::Subresource::Main,
            &write(),
        )
        .await
        .expect("patch");
    assert_eq!(patched["metadata"]["labels"]["tier"], "front");
    assert_eq!(patched["spec"]["volumes"], created["spec"]["volumes"]);

    // A dry run is admitted the same way.
    let dry = pods
        .create(Some(NS), pod("dry", json!({})), &dry_run())
        .await
        .expect("dry run");
    assert_eq!(dry["spec"]["serviceAccountName"], "default");

    // An account that does not automount, unless the pod asks; its pull secrets are lent.
    create(
        h,
        "serviceaccounts",
        json!({"metadata": {"name": "quiet"}, "automountServiceAccountToken": false,
               "imagePullSecrets": [{"name": "registry-key"}]}),
    )
    .await;
    let quiet = pods
        .create(
            Some(NS),
            pod("quiet", json!({"serviceAccountName": "quiet"})),
            &write(),
        )
        .await
        .expect("create");
    assert!(quiet["spec"]["volumes"].is_null(), "{quiet}");
    assert_eq!(
        quiet["spec"]["imagePullSecrets"],
        json!([{"name": "registry-key"}])
    );
    let asks = pods
        .create(
            Some(NS),
            pod(
                "asks",
                json!({"serviceAccountName": "quiet", "automountServiceAccountToken": true}),
            ),
            &write(),
        )
        .await
        .expect("create");
    assert_eq!(asks["spec"]["volumes"].as_array().map(Vec::len), Some(1));
    let declines = pods
        .create(
            Some(NS),
            pod("declines", json!({"automountServiceAccountToken": false})),
            &write(),
        )
        .await
        .expect("create");
    assert!(declines["spec"]["volumes"].is_null());
}

async fn admission_refuses_missing_accounts_and_mirror_pods(h: &Harness) {
    server_admission(h);
    setup(h, 0).await;
    let pods = h.store("", "pods");
    // No `default` yet: admission waits a little for its controller, then refuses.
    let started = Instant::now();
    let err = pods
        .create(Some(NS), pod("early", json!({})), &write())
        .await
        .expect_err("no default account");
    assert!(
        started.elapsed().as_millis() >= 900,
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.code(), 403);
    assert_eq!(
        err.to_string(),
        "pods \"early\" is forbidden: error looking up service account team/default: serviceaccount \"default\" not found"
    );
    let err = pods
        .create(
            Some(NS),
            pod("ghostly", json!({"serviceAccountName": "ghost"})),
            &write(),
        )
        .await
        .expect_err("no such account");
    assert_eq!(
        err.to_string(),
        "pods \"ghostly\" is forbidden: error looking up service account team/ghost: serviceaccount \"ghost\" not found"
    );
    // A mirror pod is left alone, but may not use an account.
    let mut mirror = pod("static-web", json!({}));
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "hash"});
    let created = pods
        .create(Some(NS), mirror.clone(), &write())
        .await
        .expect("mirror pod");
    assert!(created["spec"]["serviceAccountName"].is_null());
    assert!(created["spec"]["volumes"].is_null());
    mirror["metadata"]["name"] = json!("static-sa");
    mirror["spec"]["serviceAccountName"] = json!("default");
    let err = pods
        .create(Some(NS), mirror, &write())
        .await
        .expect_err("mirror pod with an account");
    assert_eq!(
        err.to_string(),
        "pods \"static-sa\" is forbidden: a mirror pod may not reference service accounts"
    );
}
