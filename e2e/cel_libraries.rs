//! Kubernetes' CEL libraries and upstream's cost limits through the real binary and kubectl,
//! on both backends: a CRD whose rules use `isURL`, `quantity`, `cidr` and the lists library
//! is accepted and enforces them (a valid object created, invalid ones refused with each
//! rule's message in upstream's Status); a rule over an unbounded string, as traefik writes
//! `isURL(self)`, is accepted; a CRD whose rule is over the estimated cost limit is refused
//! when written, in upstream's words; and a ValidatingAdmissionPolicy uses the same
//! libraries.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{output_text, start, start_on_etcd, Kubectl, Server};

const WIDGETS: &str = "/apis/libs.example.com/v1/namespaces/default/widgets";

fn definition(name: &str, plural: &str, kind: &str, spec: Value) -> String {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.libs.example.com")},
        "spec": {
            "group": "libs.example.com", "scope": "Namespaced",
            "names": {"plural": plural, "singular": name, "kind": kind},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": spec}}}}],
        },
    })
    .to_string()
}

fn widget_spec() -> Value {
    json!({
        "type": "object",
        "properties": {
            // as traefik declares its URLs: no maxLength, still cheap enough
            "url": {"type": "string", "x-kubernetes-validations": [{"rule": "isURL(self)"}]},
            "endpoint": {"type": "string", "maxLength": 2048, "x-kubernetes-validations": [
                {"rule": "isURL(self) && url(self).getScheme() == 'https'",
                 "message": "endpoint must be an https URL"}]},
            "memory": {"type": "string", "maxLength": 64, "x-kubernetes-validations": [
                {"rule": "isQuantity(self) && quantity(self).isLessThan(quantity('1Gi'))",
                 "message": "memory must be a quantity under 1Gi"}]},
            "network": {"type": "string", "maxLength": 64, "x-kubernetes-validations": [
                {"rule": "isCIDR(self) && cidr(self).prefixLength() >= 16 && cidr(self).containsIP('10.0.0.1')",
                 "messageExpression": "'network ' + self + ' must be a /16 or longer holding 10.0.0.1'"}]},
            "ports": {"type": "array", "maxItems": 16, "items": {"type": "integer"},
                "x-kubernetes-validations": [
                    {"rule": "self.isSorted() && self.max() < 65536 && self.indexOf(0) == -1",
                     "message": "ports must be sorted, nonzero and below 65536"}]},
        },
    })
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "libs.example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec})
}

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn libraries(s: &Server) {
    s.with_manifest(
        "apply",
        &definition("widget", "widgets", "Widget", widget_spec()),
    );
    s.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.libs.example.com",
        "--timeout=30s",
    ]);
    eventually("widgets served", || s.get(WIDGETS).status == 200);

    let good = json!({"url": "/dashboard/", "endpoint": "https://api.example.com:8443/v1",
        "memory": "512Mi", "network": "10.0.0.0/16", "ports": [80, 443, 8443]});
    let out = s.manifest_output(
        &["create", "-f", "-"],
        &widget("good", good.clone()).to_string(),
    );
    assert!(out.status.success(), "{}", output_text(&out));

    // kubectl shows each failed rule under its field, as upstream's Invalid status has them
    let bad = json!({"url": "not a url", "endpoint": "http://api.example.com",
        "memory": "2Gi", "network": "192.168.0.0/16", "ports": [443, 80]});
    let out = s.manifest_output(
        &["create", "-f", "-"],
        &widget("bad", bad.clone()).to_string(),
    );
    let said = output_text(&out);
    assert!(!out.status.success(), "{said}");
    for line in [
        "The Widget \"bad\" is invalid: ",
        "spec.url: Invalid value: \"string\": failed rule: isURL(self)",
        "spec.endpoint: Invalid value: \"string\": endpoint must be an https URL",
        "spec.memory: Invalid value: \"string\": memory must be a quantity under 1Gi",
        "spec.network: Invalid value: \"string\": network 192.168.0.0/16 must be a /16 or longer holding 10.0.0.1",
        "spec.ports: Invalid value: \"array\": ports must be sorted, nonzero and below 65536",
    ] {
        assert!(said.contains(line), "{line} in {said}");
    }
    let r = s.send_json("POST", WIDGETS, &widget("bad", bad));
    assert_eq!(r.status, 422, "{}", r.body);
    let status = r.json();
    assert_eq!(status["reason"], "Invalid", "{status}");
    let causes = status["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(causes.len(), 5, "{status}");
    assert!(
        causes.contains(
            &json!({"reason": "FieldValueInvalid", "field": "spec.memory",
            "message": "Invalid value: \"string\": memory must be a quantity under 1Gi"})
        ),
        "{status}"
    );

    // One broken value, the others fine: only its rule speaks. An updated object too.
    let mut fixed = good.clone();
    fixed["memory"] = json!("lots");
    let r = s.send_json("POST", WIDGETS, &widget("lots", fixed));
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.json()["details"]["causes"][0]["field"],
        "spec.memory",
        "{}",
        r.body
    );
    let mut stored = s.get(&format!("{WIDGETS}/good")).json();
    stored["spec"]["ports"] = json!([8443, 0]);
    let r = s.send_json("PUT", &format!("{WIDGETS}/good"), &stored);
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body
            .contains("ports must be sorted, nonzero and below 65536"),
        "{}",
        r.body
    );

    // Over the estimated cost limit: refused when written, in upstream's words.
    let costly = json!({"type": "object", "properties": {"names": {"type": "array",
        "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]}}});
    let out = s.manifest_output(
        &["create", "-f", "-"],
        &definition("gadget", "gadgets", "Gadget", costly.clone()),
    );
    let said = output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        ),
        "{said}"
    );
    assert!(
        said.contains("spec.versions[0].schema.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x"),
        "{said}"
    );
    // Bounded, the same rule is accepted.
    let mut bounded = costly;
    bounded["properties"]["names"]["maxItems"] = json!(100);
    bounded["properties"]["names"]["items"]["maxLength"] = json!(63);
    s.with_manifest(
        "create",
        &definition("gadget", "gadgets", "Gadget", bounded),
    );
}

/// A ValidatingAdmissionPolicy's expressions have the libraries too.
fn policy(s: &Server) {
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "endpoints"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
            "validations": [{
                "expression": "!has(object.data) || !('endpoint' in object.data) || (isURL(object.data.endpoint) && url(object.data.endpoint).getHostname().endsWith('.example.com'))",
                "message": "endpoint must be a URL on example.com"}]}});
    s.with_manifest("create", &policy.to_string());
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "endpoints"},
        "spec": {"policyName": "endpoints", "validationActions": ["Deny"]}});
    s.with_manifest("create", &binding.to_string());
    let mut said = String::new();
    let mut n = 0;
    eventually("the policy refusing", || {
        n += 1;
        let out = s.kubectl_raw(&[
            "create",
            "configmap",
            &format!("elsewhere-{n}"),
            "--from-literal=endpoint=https://other.org/x",
        ]);
        said = output_text(&out);
        !out.status.success()
    });
    assert!(
        said.contains("ValidatingAdmissionPolicy 'endpoints' with binding 'endpoints' denied request: endpoint must be a URL on example.com"),
        "{said}"
    );
    s.kubectl(&[
        "create",
        "configmap",
        "here",
        "--from-literal=endpoint=https://api.example.com/x",
    ]);
}

#[test]
fn cel_libraries() {
    let s = start();
    libraries(&s);
    policy(&s);
}

#[test]
fn cel_libraries_on_etcd() {
    let s = start_on_etcd();
    libraries(&s);
    policy(&s);
}
