use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use rcgen::PublicKeyData;
use serde_json::{json, Value};

use super::claims::{check_times, new_claims, Binding, Claims, Ref};
use super::jwt::{key_id, SigningKey, TokenError, Verifier, VerifyingKey};
use crate::admission::service_account::{check_mirror_pod, limit_secret_references, mount_token};

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// A fresh ES256 key pair: what signs, and what verifies.
fn keys() -> (SigningKey, VerifyingKey) {
    let pair = rcgen::KeyPair::generate().expect("generate key");
    let der = pair.subject_public_key_info();
    let signer = SigningKey::new(
        EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).expect("signing key"),
        Algorithm::ES256,
        &der,
    );
    let verifier = VerifyingKey::new(
        DecodingKey::from_ec_pem(pair.public_key_pem().as_bytes()).expect("verifying key"),
        Algorithm::ES256,
        &der,
    );
    (signer, verifier)
}

fn verifier(key: VerifyingKey) -> Verifier {
    Verifier {
        keys: vec![key],
        issuers: vec![ISSUER.into(), "https://old.example".into()],
        audiences: vec![ISSUER.into()],
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn claims(at: i64, expiration: i64, audiences: &[&str]) -> Claims {
    let mut c = new_claims(
        ("ns", "builder", "sa-uid"),
        Binding {
            pod: Some(Ref {
                name: "p".into(),
                uid: "pod-uid".into(),
            }),
            node: Some(Ref {
                name: "node-0".into(),
                uid: "node-uid".into(),
            }),
            secret: None,
        },
        at,
        expiration,
        0,
        audiences.iter().map(|a| a.to_string()).collect(),
    );
    c.iss = ISSUER.into();
    c
}

fn payload(token: &str) -> Value {
    let part = token.split('.').nth(1).expect("payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("json")
}

#[test]
fn claims_are_upstreams() {
    let (signer, _) = keys();
    let at = now();
    let token = signer.sign(&claims(at, 3600, &[ISSUER])).expect("sign");
    let body = payload(&token);
    assert_eq!(body["iss"], ISSUER);
    assert_eq!(body["sub"], "system:serviceaccount:ns:builder");
    assert_eq!(body["aud"], json!([ISSUER]));
    assert_eq!(body["iat"], at);
    assert_eq!(body["nbf"], at);
    assert_eq!(body["exp"], at + 3600);
    assert_eq!(body["jti"].as_str().map(str::len), Some(36));
    assert_eq!(
        body["kubernetes.io"],
        json!({"namespace": "ns",
               "serviceaccount": {"name": "builder", "uid": "sa-uid"},
               "pod": {"name": "p", "uid": "pod-uid"},
               "node": {"name": "node-0", "uid": "node-uid"}})
    );
    // Keys in alphabetical order, as upstream's tokens have them.
    let keys: Vec<&String> = body.as_object().expect("object").keys().collect();
    let text = String::from_utf8(
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').nth(1).unwrap_or_default())
            .unwrap_or_default(),
    )
    .unwrap_or_default();
    let positions: Vec<usize> = keys
        .iter()
        .filter_map(|k| text.find(&format!("\"{k}\"")))
        .collect();
    let mut sorted = positions.clone();
    sorted.sort_unstable();
    assert_eq!(positions, sorted, "{text}");
    // The header: alg and kid only.
    let header = jsonwebtoken::decode_header(&token).expect("header");
    assert_eq!(header.alg, Algorithm::ES256);
    assert_eq!(header.kid.as_deref(), Some(signer.kid()));
    assert!(header.typ.is_none());
}

#[test]
fn kid_is_base64url_sha256_of_the_public_key() {
    let pair = rcgen::KeyPair::generate().expect("generate key");
    let der = pair.subject_public_key_info();
    let kid = key_id(&der);
    use sha2::Digest;
    let expected =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(&der));
    assert_eq!(kid, expected);
    assert_eq!(kid.len(), 43);
    assert!(!kid.contains('=') && !kid.contains('+') && !kid.contains('/'));
}

#[test]
fn a_good_token_verifies() {
    let (signer, key) = keys();
    let token = signer
        .sign(&claims(now(), 3600, &[ISSUER, "other"]))
        .expect("sign");
    let v = verifier(key);
    assert!(v.is_ours(&token));
    let verified = v.verify(&token, now()).expect("verifies");
    assert_eq!(verified.sub, "system:serviceaccount:ns:builder");
}

#[test]
fn expiry_and_not_before_with_leeway() {
    let (signer, key) = keys();
    let v = verifier(key);
    let issued = now() - 4000;
    let token = signer.sign(&claims(issued, 3600, &[ISSUER])).expect("sign");
    // Expired 400 s ago: refused.
    assert_eq!(
        v.verify(&token, now()),
        Err(TokenError::Time("service account token has expired"))
    );
    // Within a minute past expiry: still good.
    assert!(v.verify(&token, issued + 3600 + 59).is_ok());
    assert!(v.verify(&token, issued + 3600 + 61).is_err());
    // Not valid yet beyond the leeway.
    let future = claims(now() + 600, 3600, &[ISSUER]);
    assert_eq!(
        check_times(&future, now()),
        Err("service account token is not valid yet")
    );
}

#[test]
fn tampered_tokens_fail() {
    let (signer, key) = keys();
    let v = verifier(key);
    let token = signer.sign(&claims(now(), 3600, &[ISSUER])).expect("sign");
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    let mut body = payload(&token);
    body["sub"] = json!("system:serviceaccount:kube-system:admin");
    parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(&body).expect("json"));
    let tampered = parts.join(".");
    assert!(matches!(
        v.verify(&tampered, now()),
        Err(TokenError::Signature(_))
    ));
    // Signed by another key.
    let (other, _) = keys();
    let foreign = other.sign(&claims(now(), 3600, &[ISSUER])).expect("sign");
    assert!(matches!(
        v.verify(&foreign, now()),
        Err(TokenError::Signature(_))
    ));
    // Garbage of every shape: errors, never panics.
    for junk in [
        "",
        ".",
        "..",
        "a.b.c",
        "a.b.c.d",
        "\u{0}.\u{1}.\u{2}",
        "eyJ.eyJ.x",
    ] {
        assert!(v.verify(junk, now()).is_err(), "{junk:?}");
        assert!(!v.is_ours(junk));
    }
    let huge = "a".repeat(super::jwt::MAX_TOKEN_BYTES + 1);
    assert_eq!(v.verify(&huge, now()), Err(TokenError::TooLarge));
}

#[test]
fn wrong_audience_is_refused() {
    let (signer, key) = keys();
    let v = verifier(key);
    let token = signer.sign(&claims(now(), 3600, &["vault"])).expect("sign");
    assert!(matches!(
        v.verify(&token, now()),
        Err(TokenError::Audience { .. })
    ));
}

#[test]
fn issuers_decide_whose_token_it_is() {
    let (signer, key) = keys();
    let v = verifier(key);
    let mut c = claims(now(), 3600, &[ISSUER]);
    c.iss = "https://elsewhere.example".into();
    let foreign = signer.sign(&c).expect("sign");
    assert!(!v.is_ours(&foreign));
    assert_eq!(
        v.verify(&foreign, now()),
        Err(TokenError::Issuer("https://elsewhere.example".into()))
    );
    // Any accepted issuer, not only the first.
    c.iss = "https://old.example".into();
    let old = signer.sign(&c).expect("sign");
    assert!(v.is_ours(&old));
    assert!(v.verify(&old, now()).is_ok());
}

#[test]
fn the_kid_picks_among_several_keys() {
    let (signer, key) = keys();
    let (_, other) = keys();
    let mut v = verifier(other);
    v.keys.push(key);
    let token = signer.sign(&claims(now(), 3600, &[ISSUER])).expect("sign");
    assert!(v.verify(&token, now()).is_ok());
}

fn pod(spec: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
}

#[test]
fn token_volume_is_mounted_in_every_container() {
    let mut p = pod(json!({
        "initContainers": [{"name": "init", "image": "busybox"}],
        "containers": [
            {"name": "a", "image": "nginx"},
            {"name": "b", "image": "nginx", "volumeMounts": [
                {"name": "own", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]},
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
    }));
    mount_token(&mut p);
    let volumes = p["spec"]["volumes"].as_array().expect("volumes");
    assert_eq!(volumes.len(), 2);
    let name = volumes[1]["name"].as_str().expect("name");
    assert!(
        name.starts_with("kube-api-access-") && name.len() == 21,
        "{name}"
    );
    assert_eq!(
        volumes[1]["projected"]["sources"][0]["serviceAccountToken"],
        json!({"expirationSeconds": 3607, "path": "token"})
    );
    assert_eq!(volumes[1]["projected"]["defaultMode"], 420);
    assert_eq!(
        volumes[1]["projected"]["sources"][1]["configMap"]["name"],
        "kube-root-ca.crt"
    );
    let mount = json!({"name": name, "readOnly": true,
                       "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"});
    assert_eq!(
        p["spec"]["initContainers"][0]["volumeMounts"],
        json!([mount])
    );
    assert_eq!(p["spec"]["containers"][0]["volumeMounts"], json!([mount]));
    // A container with its own mount at the path keeps it alone.
    assert_eq!(
        p["spec"]["containers"][1]["volumeMounts"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn mounting_the_token_adds_no_container_list_the_pod_has_not() {
    let mut p = pod(json!({"containers": [{"name": "c", "image": "i"}]}));
    mount_token(&mut p);
    let spec = p["spec"].as_object().expect("spec");
    assert!(!spec.contains_key("initContainers"), "{p}");
    assert!(!spec.contains_key("ephemeralContainers"), "{p}");
    assert_eq!(
        p["spec"]["containers"][0]["volumeMounts"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn mirror_pods_may_not_use_accounts_or_secrets() {
    assert!(check_mirror_pod(&pod(json!({"containers": []}))).is_ok());
    assert_eq!(
        check_mirror_pod(&pod(json!({"serviceAccountName": "x"}))),
        Err("a mirror pod may not reference service accounts")
    );
    assert_eq!(
        check_mirror_pod(&pod(
            json!({"volumes": [{"name": "s", "secret": {"secretName": "x"}}]})
        )),
        Err("a mirror pod may not reference secrets")
    );
    assert_eq!(
        check_mirror_pod(&pod(json!({"containers": [{"name": "c", "env": [
            {"name": "E", "valueFrom": {"secretKeyRef": {"name": "x", "key": "k"}}}]}]}))),
        Err("a mirror pod may not reference secrets")
    );
    assert_eq!(
        check_mirror_pod(&pod(
            json!({"volumes": [{"name": "t", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token"}}]}}]})
        )),
        Err("a mirror pod may not use ServiceAccountToken volume projections")
    );
}

#[test]
fn enforced_mountable_secrets() {
    let account = json!({"metadata": {"name": "builder"}, "secrets": [{"name": "ok"}]});
    let allowed = pod(json!({"volumes": [{"name": "v", "secret": {"secretName": "ok"}}]}));
    assert!(limit_secret_references(&account, &allowed).is_ok());
    let refused = pod(json!({"volumes": [{"name": "v", "secret": {"secretName": "no"}}]}));
    assert_eq!(
        limit_secret_references(&account, &refused),
        Err("volume with secret.secretName=\"no\" is not allowed because service account builder does not reference that secret".into())
    );
    let env = pod(json!({"containers": [{"name": "c", "env": [
        {"name": "E", "valueFrom": {"secretKeyRef": {"name": "no", "key": "k"}}}]}]}));
    assert_eq!(
        limit_secret_references(&account, &env),
        Err("container c with envVar E referencing secret.secretName=\"no\" is not allowed because service account builder does not reference that secret".into())
    );
}
