use bytes::Bytes;

use super::*;

/// base64 of 32, 16 and 8 bytes.
const KEY32: &str = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=";
const KEY16: &str = "MDEyMzQ1Njc4OTAxMjM0NQ==";
const KEY8: &str = "MDEyMzQ1Njc=";

const AD: &[u8] = b"/registry/secrets/default/a";

fn parse(yaml: &str) -> Result<EncryptionConfig> {
    EncryptionConfig::parse(yaml.as_bytes(), "/etc/enc.yaml")
}

fn error(yaml: &str) -> String {
    match parse(yaml) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted:\n{yaml}"),
    }
}

fn with_rules(rules: &str) -> String {
    format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n{rules}")
}

fn stored(config: &EncryptionConfig, group: &str, resource: &str) -> Bytes {
    config
        .transformer_for(group, resource)
        .transform_to_storage(b"{\"kind\":\"Secret\"}", AD)
        .unwrap()
}

#[test]
fn each_provider_writes_its_upstream_prefix_and_reads_back() {
    for (provider, key, prefix) in [
        ("aesgcm", KEY32, "k8s:enc:aesgcm:v1:key1:"),
        ("aesgcm", KEY16, "k8s:enc:aesgcm:v1:key1:"),
        ("aescbc", KEY32, "k8s:enc:aescbc:v1:key1:"),
        ("secretbox", KEY32, "k8s:enc:secretbox:v1:key1:"),
    ] {
        let config = parse(&with_rules(&format!(
            "  - resources: [secrets]\n    providers:\n      - {provider}:\n          keys:\n            - name: key1\n              secret: {key}\n"
        )))
        .unwrap();
        let value = stored(&config, "", "secrets");
        assert!(
            value.starts_with(prefix.as_bytes()),
            "{provider}: {value:?}"
        );
        let (plain, stale) = config
            .transformer_for("", "secrets")
            .transform_from_storage(value, AD)
            .unwrap();
        assert_eq!(&plain[..], b"{\"kind\":\"Secret\"}");
        assert!(!stale);
    }
}

#[test]
fn json_configurations_parse_too() {
    let json = format!(
        r#"{{"apiVersion":"apiserver.config.k8s.io/v1","kind":"EncryptionConfiguration",
            "resources":[{{"resources":["secrets"],"providers":[{{"secretbox":{{"keys":[{{"name":"k","secret":"{KEY32}"}}]}}}}]}}]}}"#
    );
    let config = parse(&json).unwrap();
    assert!(stored(&config, "", "secrets").starts_with(b"k8s:enc:secretbox:v1:k:"));
}

#[test]
fn rotation_reads_every_listed_key_and_marks_older_ones_stale() {
    let old = parse(&with_rules(&format!(
        "  - resources: [secrets]\n    providers:\n      - aesgcm: {{keys: [{{name: key1, secret: {KEY32}}}]}}\n"
    )))
    .unwrap();
    let rotated = parse(&with_rules(&format!(
        "  - resources: [secrets]\n    providers:\n      - aescbc: {{keys: [{{name: key2, secret: {KEY16}}}]}}\n      - aesgcm: {{keys: [{{name: key1, secret: {KEY32}}}]}}\n      - identity: {{}}\n"
    )))
    .unwrap();
    let t = rotated.transformer_for("", "secrets");
    let (plain, stale) = t
        .transform_from_storage(stored(&old, "", "secrets"), AD)
        .unwrap();
    assert_eq!(&plain[..], b"{\"kind\":\"Secret\"}");
    assert!(stale, "read with the second provider");
    // Written before encryption: read through identity, listed last.
    let (plain, stale) = t
        .transform_from_storage(Bytes::from_static(b"{}"), AD)
        .unwrap();
    assert_eq!(&plain[..], b"{}");
    assert!(stale);
    let fresh = stored(&rotated, "", "secrets");
    assert!(fresh.starts_with(b"k8s:enc:aescbc:v1:key2:"));
    assert!(!t.transform_from_storage(fresh, AD).unwrap().1);
    // Without identity, plain data is refused, and the new key is unknown to the old config.
    let err = old
        .transformer_for("", "secrets")
        .transform_from_storage(Bytes::from_static(b"{}"), AD)
        .unwrap_err();
    assert_eq!(message(err), "no matching prefix found");
    let err = old
        .transformer_for("", "secrets")
        .transform_from_storage(stored(&rotated, "", "secrets"), AD)
        .unwrap_err();
    assert_eq!(message(err), "no matching prefix found");
}

#[test]
fn a_key_unknown_to_the_provider_is_named_in_the_error() {
    let a = parse(&with_rules(&format!(
        "  - resources: [secrets]\n    providers:\n      - aesgcm: {{keys: [{{name: a, secret: {KEY32}}}]}}\n"
    )))
    .unwrap();
    let b = parse(&with_rules(&format!(
        "  - resources: [secrets]\n    providers:\n      - aesgcm: {{keys: [{{name: b, secret: {KEY32}}}]}}\n"
    )))
    .unwrap();
    let err = b
        .transformer_for("", "secrets")
        .transform_from_storage(stored(&a, "", "secrets"), AD)
        .unwrap_err();
    assert_eq!(
        message(err),
        "no matching key was found for the provided AES transformer"
    );
}

#[test]
fn resources_match_exact_then_group_then_everything() {
    let config = parse(&with_rules(&format!(
        "  - resources: [secrets, deployments.apps]\n    providers:\n      - aesgcm: {{keys: [{{name: exact, secret: {KEY32}}}]}}\n  - resources: ['*.apps', '*.']\n    providers:\n      - aescbc: {{keys: [{{name: group, secret: {KEY32}}}]}}\n  - resources: ['*.*']\n    providers:\n      - secretbox: {{keys: [{{name: all, secret: {KEY32}}}]}}\n"
    )))
    .unwrap();
    for (group, resource, prefix) in [
        ("", "secrets", "k8s:enc:aesgcm:v1:exact:"),
        ("apps", "deployments", "k8s:enc:aesgcm:v1:exact:"),
        ("apps", "statefulsets", "k8s:enc:aescbc:v1:group:"),
        ("", "configmaps", "k8s:enc:aescbc:v1:group:"),
        ("example.com", "widgets", "k8s:enc:secretbox:v1:all:"),
    ] {
        let value = stored(&config, group, resource);
        assert!(
            value.starts_with(prefix.as_bytes()),
            "{resource}.{group}: {value:?}"
        );
    }
}

#[test]
fn unlisted_resources_stay_plain() {
    let config = parse(&with_rules(&format!(
        "  - resources: [secrets]\n    providers:\n      - aesgcm: {{keys: [{{name: k, secret: {KEY32}}}]}}\n"
    )))
    .unwrap();
    assert_eq!(
        &stored(&config, "", "configmaps")[..],
        b"{\"kind\":\"Secret\"}"
    );
    assert_eq!(
        &stored(&config, "apps", "secrets")[..],
        b"{\"kind\":\"Secret\"}"
    );
}

#[test]
fn a_rule_masked_by_an_earlier_wildcard_is_refused() {
    let err = error(&with_rules(&format!(
        "  - resources: ['*.']\n    providers: [{{identity: {{}}}}]\n  - resources: [secrets]\n    providers:\n      - aesgcm: {{keys: [{{name: k, secret: {KEY32}}}]}}\n"
    )));
    assert_eq!(
        err,
        r#"error while building transformers: resource "secrets" is masked by earlier rule "*.""#
    );
    let err = error(&with_rules(
        "  - resources: ['*.*']\n    providers: [{identity: {}}]\n  - resources: ['*.apps']\n    providers: [{identity: {}}]\n",
    ));
    assert_eq!(
        err,
        r#"error while building transformers: resource "*.apps" is masked by earlier rule "*.*""#
    );
}

#[test]
fn file_and_type_errors_are_upstream_s() {
    assert_eq!(
        error(""),
        r#"error while parsing file: encryption provider configuration file "/etc/enc.yaml" is empty"#
    );
    assert!(error("kind: [").starts_with(
        r#"error while parsing file: error decoding encryption provider configuration file "/etc/enc.yaml": "#
    ));
    assert!(
        error("apiVersion: v1\nkind: EncryptionConfig\nresources: []\n")
            .ends_with(r#"no kind "EncryptionConfig" is registered for version "v1""#)
    );
    assert!(error("apiVersion: apiserver.config.k8s.io/v1\n").ends_with("Object 'Kind' is missing"));
    let missing = EncryptionConfig::load(Path::new("/nonexistent/enc.yaml"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        missing.starts_with(r#"error while parsing file: error opening encryption provider configuration file "/nonexistent/enc.yaml": "#),
        "{missing}"
    );
}

#[test]
fn validation_messages_are_upstream_s() {
    let cases: Vec<(String, &str)> = vec![
        (
            with_rules("  []\n"),
            "error while parsing file: resources: Required value: at least one resources is required",
        ),
        (
            with_rules("  - resources: [secrets]\n"),
            "error while parsing file: resources[0].providers: Required value: at least one resources[0].providers is required",
        ),
        (
            with_rules("  - providers: [{identity: {}}]\n"),
            "error while parsing file: resources[0].resources: Required value: at least one resources[0].resources is required",
        ),
        (
            with_rules(&format!("  - resources: [secrets]\n    providers:\n      - aesgcm: {{keys: [{{name: k, secret: {KEY8}}}]}}\n")),
            r#"error while parsing file: resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of [16 24 32]"#,
        ),
        (
            with_rules(&format!("  - resources: [secrets]\n    providers:\n      - secretbox: {{keys: [{{name: k, secret: {KEY16}}}]}}\n")),
            r#"error while parsing file: resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 16, expected one of [32]"#,
        ),
        (
            with_rules("  - resources: [secrets]\n    providers:\n      - aescbc: {keys: [{name: k, secret: 'not base64!'}]}\n"),
            r#"error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded"#,
        ),
        (
            with_rules(&format!("  - resources: [secrets]\n    providers:\n      - aesgcm: {{keys: [{{secret: {KEY32}}}]}}\n")),
            "error while parsing file: resources[0].providers[0].aesgcm.keys[0].name: Required value: name is a mandatory field for a key",
        ),
        (
            with_rules("  - resources: [secrets]\n    providers:\n      - aesgcm: {keys: []}\n"),
            "error while parsing file: resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required",
        ),
        (
            with_rules("  - resources: [secrets]\n    providers:\n      - {}\n"),
            "error while parsing file: resources[0].providers[0]: Invalid value: {}: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
        ),
        (
            with_rules("  - resources: [secrets]\n    providers:\n      - {identity: {}, aesgcm: {keys: []}}\n"),
            r#"error while parsing file: resources[0].providers[0]: Invalid value: {"aesgcm":{"keys":[]},"identity":{}}: more than one provider specified in a single element, should split into different list elements"#,
        ),
        (
            with_rules("  - resources: [Secrets]\n    providers: [{identity: {}}]\n"),
            r#"error while parsing file: resources[0].resources[0]: Invalid value: "Secrets": resource name should not contain capital letters"#,
        ),
        (
            with_rules("  - resources: ['*']\n    providers: [{identity: {}}]\n"),
            r#"error while parsing file: resources[0].resources[0]: Invalid value: "*": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"#,
        ),
        (
            with_rules("  - resources: [events.events.k8s.io]\n    providers: [{identity: {}}]\n"),
            r#"error while parsing file: resources[0].resources[0]: Invalid value: "events.events.k8s.io": '*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"#,
        ),
        (
            with_rules("  - resources: [serviceipallocations]\n    providers: [{identity: {}}]\n"),
            r#"error while parsing file: resources[0].resources[0]: Invalid value: "serviceipallocations": resources which do not have REST API/s cannot be encrypted"#,
        ),
        (
            with_rules("  - resources: [secrets.*]\n    providers: [{identity: {}}]\n"),
            r#"error while parsing file: resources[0].resources[0]: Invalid value: "secrets.*": encrypting the same resource across groups is not supported"#,
        ),
        (
            with_rules("  - resources: [secrets, '*.']\n    providers: [{identity: {}}]\n"),
            r#"error while parsing file: resources[0].resources: Invalid value: ["secrets","*."]: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"#,
        ),
        (
            with_rules("  - resources: [secrets, secrets]\n    providers: [{identity: {}}]\n"),
            r#"error while parsing file: resources[0].resources: Invalid value: ["secrets","secrets"]: the same resource cannot be specified multiple times"#,
        ),
    ];
    for (yaml, expected) in cases {
        assert_eq!(error(&yaml), expected, "for\n{yaml}");
    }
}

#[test]
fn several_errors_are_listed_together() {
    let err = error(&with_rules(&format!(
        "  - resources: [Secrets]\n    providers:\n      - aesgcm: {{keys: [{{name: k, secret: {KEY8}}}]}}\n"
    )));
    assert!(
        err.starts_with("error while parsing file: [resources[0].resources[0]: "),
        "{err}"
    );
    assert!(
        err.contains(", resources[0].providers[0].aesgcm.keys[0].secret: "),
        "{err}"
    );
    assert!(err.ends_with(']'), "{err}");
    assert!(!err.contains(KEY8), "the secret is never printed: {err}");
}

#[test]
fn kms_is_refused_clearly() {
    let err = error(&with_rules(
        "  - resources: [secrets]\n    providers:\n      - kms: {name: p, endpoint: 'unix:///kms.sock'}\n",
    ));
    assert!(
        err.contains("resources[0].providers[0].kms: Forbidden: KMS providers are not supported"),
        "{err}"
    );
}

/// Values another implementation (OpenSSL) stored in upstream's format, with fixed nonce and
/// IV: what kube-apiserver wrote must read here, byte for byte.
#[test]
fn reads_values_stored_by_another_implementation() {
    let config = parse(&with_rules(&format!(
        "  - resources: [secrets]\n    providers:\n      - aescbc: {{keys: [{{name: key1, secret: {KEY}}}]}}\n      - aesgcm: {{keys: [{{name: key1, secret: {KEY}}}]}}\n",
        KEY = "c2VjcmV0IGlzIHNlY3VyZSwgc2VjcmV0IGlzIHNhZmU="
    )))
    .unwrap();
    let t = config.transformer_for("", "secrets");
    for stored in [
        "azhzOmVuYzphZXNnY206djE6a2V5MToAAQIDBAUGBwgJCgvD5p8hjvwxecKKRNQLcDMqTWQyKSQOVYF/MwY8WM7rElXx9uVuesdezct1CRYknh1oDKw=",
        "azhzOmVuYzphZXNjYmM6djE6a2V5MToAAQIDBAUGBwgJCgsMDQ4P+8rA73NNasSg7bPVCwuM+2m5gOu6ukBD5zSA4Gdxb7fSyD3Fp4sxSAqPxB0djj6R",
    ] {
        let bytes = base64::engine::general_purpose::STANDARD.decode(stored).unwrap();
        let (plain, _) = t
            .transform_from_storage(bytes.into(), b"/registry/secrets/default/s1")
            .unwrap();
        assert_eq!(&plain[..], br#"{"kind":"Secret","apiVersion":"v1"}"#);
    }
}
