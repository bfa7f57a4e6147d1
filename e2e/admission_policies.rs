//! ValidatingAdmissionPolicy through the real binary and kubectl, on both backends: a policy
//! with a ConfigMap for parameters refuses what its CEL validation rejects, in upstream's
//! words and code; a second binding only warns; a binding whose parameters are missing
//! denies (`parameterNotFoundAction: Deny`); matchConditions pass requests over; a deleted
//! binding stops acting; an Audit action lands in the audit log with the failed validation's
//! index. A policy asks the authorizer whether the requesting user (kubectl --as) may list
//! secrets, and compares a variable holding a quantity. A policy naming a field its kind lacks
//! gets `status.typeChecking` warnings in upstream's words; fixed, they are gone. An
//! expression costing more than upstream's per-call limit on a large object fails.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{output_text, start_embedded_with, start_on_etcd_with, Kubectl, Server};

/// Deployments audited at Metadata (where admission annotations show), nothing else.
const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: "apps"
    resources: ["deployments"]
- level: None
"#;

/// A server writing an audit log; the temp dir holding the policy and the log.
fn audited(on_etcd: bool) -> (Server, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tmp");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, AUDIT_POLICY).expect("policy file");
    let log = dir.path().join("audit.log");
    let args = [
        "--audit-policy-file",
        policy.to_str().expect("utf-8 path"),
        "--audit-log-path",
        log.to_str().expect("utf-8 path"),
    ];
    let s = if on_etcd {
        start_on_etcd_with(&args)
    } else {
        start_embedded_with(&args)
    };
    (s, dir, log)
}

/// The audit events of the log.
fn audit_events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn policy(name: &str, spec: serde_json::Value) -> String {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": spec})
    .to_string()
}

fn binding(name: &str, spec: serde_json::Value) -> String {
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": spec})
    .to_string()
}

const DEPLOYMENTS: &str = r#"{"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
    "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]}"#;

fn policies(s: &Server, log: &Path) {
    let rules: serde_json::Value = serde_json::from_str(DEPLOYMENTS).unwrap_or_default();
    s.kubectl(&[
        "create",
        "configmap",
        "limits",
        "--from-literal=maxReplicas=3",
    ]);
    s.with_manifest(
        "create",
        &policy(
            "max-replicas",
            json!({
                "failurePolicy": "Fail",
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": rules,
                "matchConditions": [{"name": "not-exempt",
                    "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
                "variables": [{"name": "max", "expression": "int(params.data.maxReplicas)"}],
                "validations": [{
                    "expression": "object.spec.replicas <= variables.max",
                    "messageExpression": "'replicas must be at most ' + string(variables.max)",
                }],
            }),
        ),
    );
    s.with_manifest(
        "create",
        &binding(
            "max-replicas-binding",
            json!({"policyName": "max-replicas", "validationActions": ["Deny"],
                "paramRef": {"name": "limits", "namespace": "default",
                    "parameterNotFoundAction": "Deny"}}),
        ),
    );
    let mut said = String::new();
    let mut n = 0;
    eventually("the policy refusing", || {
        n += 1;
        let out = s.kubectl_raw(&[
            "create",
            "deployment",
            &format!("big-{n}"),
            "--image=nginx",
            "--replicas=5",
        ]);
        said = output_text(&out);
        !out.status.success()
    });
    assert!(
        said.contains(&format!(
            "deployments.apps \"big-{n}\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be at most 3"
        )),
        "{said}"
    );
    // Over HTTP: 422 Invalid, as upstream's default reason.
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "raw"},
        "spec": {"replicas": 9, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let r = s.send_json(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        &body,
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let status = r.json();
    assert_eq!(status["reason"], "Invalid", "{status}");
    assert_eq!(status["details"]["causes"][0]["message"],
        "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be at most 3");
    // Within the limit, or passed over by the matchCondition: created.
    s.kubectl(&[
        "create",
        "deployment",
        "small",
        "--image=nginx",
        "--replicas=2",
    ]);
    let exempt = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "exempt", "labels": {"exempt": "yes"}},
        "spec": {"replicas": 9, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    s.with_manifest("create", &exempt.to_string());

    // A second policy, only warned of.
    s.with_manifest(
        "create",
        &policy(
            "no-latest",
            json!({"matchConstraints": rules, "validations": [
                {"expression": "true"},
                {"expression": "object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))"}]}),
        ),
    );
    s.with_manifest(
        "create",
        &binding(
            "no-latest-warn",
            json!({"policyName": "no-latest", "validationActions": ["Warn", "Audit"]}),
        ),
    );
    eventually("the warning", || {
        n += 1;
        let out = s.kubectl_raw(&[
            "create",
            "deployment",
            &format!("latest-{n}"),
            "--image=nginx:latest",
        ]);
        out.status.success() && output_text(&out).contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest-warn': failed expression: object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))"
        )
    });

    // Audit: the failure is in the request's audit event, naming the failed validation.
    let name = format!("latest-{n}");
    let mut annotation = Value::Null;
    eventually("the audit annotation", || {
        annotation = audit_events(log)
            .into_iter()
            .filter(|e| e["stage"] == "ResponseComplete" && e["objectRef"]["name"] == name.as_str())
            .find_map(|e| {
                let text = e["annotations"]
                    ["validation.policy.admission.k8s.io/validation_failure"]
                    .as_str()?
                    .to_string();
                serde_json::from_str(&text).ok()
            })
            .unwrap_or(Value::Null);
        !annotation.is_null()
    });
    assert_eq!(
        annotation,
        json!([{"message": "failed expression: object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))",
            "policy": "no-latest", "binding": "no-latest-warn", "expressionIndex": 1,
            "validationActions": ["Warn", "Audit"]}])
    );

    // matchPolicy Equivalent (the default): rules naming autoscaling/v1 take a v2 request in,
    // and the policy sees the object in v1.
    s.with_manifest(
        "create",
        &policy(
            "cpu-target",
            json!({"matchConstraints": {"resourceRules": [{"apiGroups": ["autoscaling"],
                    "apiVersions": ["v1"], "operations": ["CREATE"],
                    "resources": ["horizontalpodautoscalers"]}]},
                "validations": [{"expression": "object.spec.targetCPUUtilizationPercentage <= 80",
                    "messageExpression": "'target too high in ' + object.apiVersion + ', asked as ' + request.requestKind.version"}]}),
        ),
    );
    s.with_manifest(
        "create",
        &binding(
            "cpu-target",
            json!({"policyName": "cpu-target", "validationActions": ["Deny"]}),
        ),
    );
    let hpa = |name: &str, target: u32| {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": target}}}]}})
        .to_string()
    };
    let mut said = String::new();
    eventually("the policy taking v2 requests in through v1", || {
        n += 1;
        let out = s.manifest_output(&["create", "-f", "-"], &hpa(&format!("hot-{n}"), 90));
        said = output_text(&out);
        !out.status.success()
    });
    assert!(
        said.contains("ValidatingAdmissionPolicy 'cpu-target' with binding 'cpu-target' denied request: target too high in autoscaling/v1, asked as v2"),
        "{said}"
    );
    s.with_manifest("create", &hpa("calm", 50));

    // Parameters gone: the binding denies.
    s.kubectl(&["delete", "configmap", "limits"]);
    let out = s.kubectl_raw(&["create", "deployment", "no-params", "--image=nginx"]);
    let said = output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"), "{said}");

    // The binding deleted: nothing refuses.
    s.kubectl(&[
        "delete",
        "validatingadmissionpolicybinding",
        "max-replicas-binding",
    ]);
    eventually("the binding gone", || {
        n += 1;
        s.kubectl_raw(&[
            "create",
            "deployment",
            &format!("free-{n}"),
            "--image=nginx",
            "--replicas=5",
        ])
        .status
        .success()
    });
}

const CONFIGMAPS: &str = r#"{"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
    "operations": ["CREATE"], "resources": ["configmaps"]}]}"#;

/// The authorizer library as the requesting user, and a variable keeping a quantity.
fn authorizer_and_variables(s: &Server) {
    let rules: serde_json::Value = serde_json::from_str(CONFIGMAPS).unwrap_or_default();
    s.with_manifest(
        "create",
        &policy(
            "guarded",
            json!({
                "matchConstraints": rules,
                "matchConditions": [{"name": "guarded",
                    "expression": "object.metadata.name.startsWith('guarded')"}],
                "variables": [
                    {"name": "size", "expression":
                        "has(object.data) && 'size' in object.data ? quantity(object.data.size) : quantity('0')"},
                    {"name": "limit", "expression": "quantity('1Gi')"},
                ],
                "validations": [
                    {"expression": "authorizer.group('').resource('secrets').namespace(request.namespace).check('list').allowed()",
                     "message": "only those who may list secrets create guarded configmaps",
                     "reason": "Forbidden"},
                    {"expression": "variables.size.isLessThan(variables.limit)",
                     "messageExpression": "'size must be below ' + string(variables.limit.asInteger())"},
                ],
            }),
        ),
    );
    s.with_manifest(
        "create",
        &binding(
            "guarded-binding",
            json!({"policyName": "guarded", "validationActions": ["Deny"]}),
        ),
    );
    s.kubectl(&[
        "create",
        "role",
        "cm-writer",
        "--verb=create,get",
        "--resource=configmaps",
    ]);
    s.kubectl(&[
        "create",
        "rolebinding",
        "jane-cm",
        "--role=cm-writer",
        "--user=jane",
    ]);
    let mut said = String::new();
    let mut n = 0;
    eventually("the authorizer refusing jane", || {
        n += 1;
        let out = s.kubectl_raw(&["--as=jane", "create", "configmap", &format!("guarded-{n}")]);
        said = output_text(&out);
        !out.status.success() && said.contains("guarded configmaps")
    });
    assert!(
        said.contains(&format!(
            "configmaps \"guarded-{n}\" is forbidden: ValidatingAdmissionPolicy 'guarded' with binding 'guarded-binding' denied request: only those who may list secrets create guarded configmaps"
        )),
        "{said}"
    );
    // The admin may list secrets; the size variable stays a quantity.
    let out = s.kubectl_raw(&[
        "create",
        "configmap",
        "guarded-big",
        "--from-literal=size=2Gi",
    ]);
    let said = output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("denied request: size must be below 1073741824"),
        "{said}"
    );
    s.kubectl(&[
        "create",
        "configmap",
        "guarded-small",
        "--from-literal=size=512Mi",
    ]);
    // Allowed to list secrets, jane passes.
    s.kubectl(&[
        "create",
        "role",
        "secret-lister",
        "--verb=list",
        "--resource=secrets",
    ]);
    s.kubectl(&[
        "create",
        "rolebinding",
        "jane-secrets",
        "--role=secret-lister",
        "--user=jane",
    ]);
    eventually("jane allowed once she may list secrets", || {
        n += 1;
        s.kubectl_raw(&["--as=jane", "create", "configmap", &format!("guarded-{n}")])
            .status
            .success()
    });
    // Other configmaps are passed over by the matchCondition.
    let out = s.kubectl_raw(&["--as=jane", "create", "configmap", "plain"]);
    assert!(out.status.success(), "{}", output_text(&out));
}

/// status.typeChecking: written for each new generation of a policy.
fn type_checking(s: &Server) {
    let rules: serde_json::Value = serde_json::from_str(DEPLOYMENTS).unwrap_or_default();
    let spec = |expression: &str| {
        json!({"matchConstraints": rules, "validations": [
            {"expression": "object.spec.replicas >= 0"},
            {"expression": expression, "messageExpression": "'at most ' + string(object.spec.replicas)"}]})
    };
    s.with_manifest("create", &policy("typo", spec("object.spec.replicaz > 1")));
    let mut status = Value::Null;
    eventually("the type checking status", || {
        status =
            s.json(&["get", "validatingadmissionpolicy", "typo", "-o", "json"])["status"].clone();
        status["observedGeneration"] == 1
    });
    assert_eq!(
        status["typeChecking"],
        json!({"expressionWarnings": [{"fieldRef": "spec.validations[1].expression",
            "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz > 1\n | ...........^\n"}]})
    );
    let yaml = s.kubectl(&["get", "validatingadmissionpolicy", "typo", "-o", "yaml"]);
    assert!(yaml.contains("expressionWarnings:"), "{yaml}");
    assert!(
        yaml.contains("fieldRef: spec.validations[1].expression"),
        "{yaml}"
    );
    // Fixed: the next generation has no warnings.
    let mut fixed: Value =
        serde_json::from_str(&policy("typo", spec("object.spec.replicas > 1"))).unwrap_or_default();
    fixed["metadata"]["resourceVersion"] =
        s.json(&["get", "validatingadmissionpolicy", "typo", "-o", "json"])["metadata"]
            ["resourceVersion"]
            .clone();
    s.with_manifest("replace", &fixed.to_string());
    eventually("the warnings gone", || {
        status =
            s.json(&["get", "validatingadmissionpolicy", "typo", "-o", "json"])["status"].clone();
        status["observedGeneration"] == 2
    });
    assert_eq!(status["typeChecking"], json!({}), "{status}");
    // params typed by the paramKind (a ConfigMap has no spec).
    let with_params = json!({"matchConstraints": rules,
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "validations": [{"expression": "object.spec.replicas <= int(params.data.max)"},
            {"expression": "params.spec.max > 1"}]});
    s.with_manifest("create", &policy("with-params", with_params));
    eventually("the params policy checked", || {
        status = s.json(&[
            "get",
            "validatingadmissionpolicy",
            "with-params",
            "-o",
            "json",
        ])["status"]
            .clone();
        status["observedGeneration"] == 1
    });
    assert_eq!(
        status["typeChecking"]["expressionWarnings"],
        json!([{"fieldRef": "spec.validations[1].expression",
            "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'spec'\n | params.spec.max > 1\n | ......^\n"}]),
        "{status}"
    );
    // Wildcards are not checked.
    let any = json!({"matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
        "operations": ["CREATE"], "resources": ["*"]}]},
        "validations": [{"expression": "object.nothing.here"}]});
    s.with_manifest("create", &policy("wild", any));
    eventually("the wildcard policy checked", || {
        status =
            s.json(&["get", "validatingadmissionpolicy", "wild", "-o", "json"])["status"].clone();
        status["observedGeneration"] == 1
    });
    assert_eq!(status["typeChecking"], json!({}), "{status}");
}

/// The per-call cost limit: a quadratic expression is cheap on a small object, refused on a
/// large one.
fn cost_limits(s: &Server) {
    let rules: serde_json::Value = serde_json::from_str(CONFIGMAPS).unwrap_or_default();
    let quadratic = "object.data.all(k, object.data.exists(j, k == j))";
    s.with_manifest(
        "create",
        &policy(
            "costly",
            json!({"matchConstraints": rules,
                "matchConditions": [{"name": "costly", "expression": "object.metadata.name.startsWith('costly')"}],
                "validations": [{"expression": quadratic}]}),
        ),
    );
    s.with_manifest(
        "create",
        &binding(
            "costly-binding",
            json!({"policyName": "costly", "validationActions": ["Deny"]}),
        ),
    );
    let configmap = |name: &str, entries: usize| {
        let data: serde_json::Map<String, Value> = (0..entries)
            .map(|i| (format!("key-{i}"), json!("v")))
            .collect();
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
            .to_string()
    };
    let mut said = String::new();
    let mut n = 0;
    eventually("the cost limit refusing", || {
        n += 1;
        let out = s.manifest_output(
            &["create", "-f", "-"],
            &configmap(&format!("costly-{n}"), 2000),
        );
        said = output_text(&out);
        !out.status.success()
    });
    assert!(
        said.contains(&format!("configmaps \"costly-{n}\" is invalid"))
            && said.contains(&format!(
                "ValidatingAdmissionPolicy 'costly' with binding 'costly-binding' denied request: expression '{quadratic}' resulted in error: operation cancelled: actual cost limit exceeded"
            )),
        "{said}"
    );
    s.with_manifest("create", &configmap("costly-small", 10));
}

#[test]
fn admission_policies() {
    let (s, _dir, log) = audited(false);
    policies(&s, &log);
    authorizer_and_variables(&s);
    type_checking(&s);
    cost_limits(&s);
}

#[test]
fn admission_policies_on_etcd() {
    let (s, _dir, log) = audited(true);
    policies(&s, &log);
    authorizer_and_variables(&s);
    type_checking(&s);
    cost_limits(&s);
}
