//! Upstream's defaults and messages for webhook configurations and admission policies.

use serde_json::{json, Value};

use super::{PolicyBindingStrategy, PolicyStrategy, WebhookConfigurationStrategy};
use crate::error::Cause;
use crate::strategy::Strategy;

fn messages(causes: Vec<Cause>) -> Vec<String> {
    causes.iter().map(|c| c.full_message()).collect()
}

const MUTATING: WebhookConfigurationStrategy = WebhookConfigurationStrategy { mutating: true };
const VALIDATING: WebhookConfigurationStrategy = WebhookConfigurationStrategy { mutating: false };

fn hook(extra: Value) -> Value {
    let mut hook = json!({
        "name": "pods.policy.example.com",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {"service": {"namespace": "system", "name": "webhook", "path": "/validate"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]
    });
    if let (Some(h), Some(e)) = (hook.as_object_mut(), extra.as_object()) {
        h.extend(e.clone());
    }
    hook
}

#[test]
fn webhooks_get_upstreams_defaults() {
    let mut config = json!({"webhooks": [hook(json!({}))]});
    MUTATING.prepare_for_create(&mut config);
    let h = &config["webhooks"][0];
    assert_eq!(h["failurePolicy"], "Fail");
    assert_eq!(h["matchPolicy"], "Equivalent");
    assert_eq!(h["timeoutSeconds"], 10);
    assert_eq!(h["namespaceSelector"], json!({}));
    assert_eq!(h["objectSelector"], json!({}));
    assert_eq!(h["reinvocationPolicy"], "Never");
    assert_eq!(h["rules"][0]["scope"], "*");
    assert_eq!(h["clientConfig"]["service"]["port"], 443);
    assert!(MUTATING.validate(&config).is_empty());
    let mut validating = json!({"webhooks": [hook(json!({}))]});
    VALIDATING.prepare_for_create(&mut validating);
    assert!(validating["webhooks"][0]
        .get("reinvocationPolicy")
        .is_none());
}

#[test]
fn webhook_fields_are_checked_with_upstreams_words() {
    let config = json!({"webhooks": [
        hook(json!({"name": "short.name", "sideEffects": "Some", "timeoutSeconds": 31,
            "admissionReviewVersions": ["v2"],
            "clientConfig": {"url": "http://user@example.com/x?a=b"}})),
        hook(json!({"clientConfig": {}, "rules": [{"operations": ["*", "CREATE"],
            "apiGroups": ["*", "apps"], "apiVersions": [], "resources": ["*/*", "pods"]}]})),
        hook(json!({})),
    ]});
    assert_eq!(
        messages(VALIDATING.validate(&config)),
        [
            "webhooks[0].name: Invalid value: \"short.name\": should be a domain with at least three segments separated by dots",
            "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "webhooks[0].clientConfig.url: Invalid value: \"user\": user information is not permitted in the URL",
            "webhooks[0].clientConfig.url: Invalid value: \"a=b\": query parameters are not permitted in the URL",
            "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
            "webhooks[1].rules[0].operations: Invalid value: []admissionregistration.OperationType{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations",
            "webhooks[1].rules[0].apiGroups: Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other API groups",
            "webhooks[1].rules[0].apiVersions: Required value",
            "webhooks[1].rules[0].resources: Invalid value: []string{\"*/*\", \"pods\"}: if '*/*' is present, must not specify other resources",
            "webhooks[1].clientConfig: Required value: exactly one of url or service is required",
            "webhooks[2].name: Duplicate value: \"pods.policy.example.com\"",
        ]
    );
    // A rule the stored configuration already broke is not enforced on update.
    let old = json!({"webhooks": [hook(json!({"sideEffects": "Some"}))]});
    assert!(VALIDATING.validate_update(&old, &old).is_empty());
}

#[test]
fn service_paths_are_dns_segments() {
    let config = |path: &str| {
        json!({"webhooks": [hook(json!({"clientConfig": {"service":
            {"namespace": "ns", "name": "svc", "path": path, "port": 0}}}))]})
    };
    assert_eq!(
        messages(VALIDATING.validate(&config("validate"))),
        [
            "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
            "webhooks[0].clientConfig.service.path: Invalid value: \"validate\": must start with a '/'",
        ]
    );
    let segments = messages(VALIDATING.validate(&config("/a//B")));
    assert_eq!(segments[1], "webhooks[0].clientConfig.service.path: Invalid value: \"/a//B\": segment[1] may not be empty");
    assert!(segments[2].starts_with("webhooks[0].clientConfig.service.path: Invalid value: \"/a//B\": segment[2]: a lowercase RFC 1123 subdomain"));
}

#[test]
fn policies_and_bindings() {
    let mut policy = json!({"spec": {
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"],
            "apiVersions": ["v1"], "resources": ["deployments"]}]},
        "validations": [{"expression": "object.spec.replicas <= 5"}]
    }});
    PolicyStrategy.prepare_for_create(&mut policy);
    assert_eq!(policy["spec"]["failurePolicy"], "Fail");
    assert_eq!(
        policy["spec"]["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );
    assert!(PolicyStrategy.validate(&policy).is_empty());
    assert_eq!(
        messages(PolicyStrategy.validate(&json!({"spec": {"failurePolicy": "Maybe"}}))),
        [
            "spec.failurePolicy: Unsupported value: \"Maybe\": supported values: \"Fail\", \"Ignore\"",
            "spec.matchConstraints: Required value",
            "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
        ]
    );
    let binding =
        |actions: Value| json!({"spec": {"policyName": "p", "validationActions": actions}});
    assert!(PolicyBindingStrategy
        .validate(&binding(json!(["Deny"])))
        .is_empty());
    assert_eq!(
        messages(PolicyBindingStrategy.validate(&binding(json!(["Deny", "Warn", "Deny", "Shout"])))),
        [
            "spec.validationActions[2]: Duplicate value: \"Deny\"",
            "spec.validationActions[3]: Unsupported value: \"Shout\": supported values: \"Audit\", \"Deny\", \"Warn\"",
            "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\", \"Shout\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ]
    );
    assert_eq!(
        messages(PolicyBindingStrategy.validate(&json!({"spec": {"paramRef": {"name": "x"}}}))),
        [
            "spec.policyName: Required value",
            "spec.paramRef.parameterNotFoundAction: Required value",
            "spec.validationActions: Required value: at least one validation action is required",
        ]
    );
}
