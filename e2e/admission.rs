//! The admission chain through the real binary and kubectl: upstream's plugin names on
//! `--enable-admission-plugins` / `--disable-admission-plugins` (unknown ones refused at
//! start), DefaultTolerationSeconds on creates and updates (so `kubectl replace` of a pod
//! manifest keeps the tolerations it was given), and AlwaysDeny's refusal.

mod support;

use serde_json::Value;
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers: [{name: web, image: nginx}]
"#;

fn default_tolerations(pod: &Value) -> Vec<(String, i64)> {
    pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|t| t["effect"] == "NoExecute")
        .map(|t| {
            (
                t["key"].as_str().unwrap_or_default().to_string(),
                t["tolerationSeconds"].as_i64().unwrap_or_default(),
            )
        })
        .collect()
}

const DEFAULTS: [(&str, i64); 2] = [
    ("node.kubernetes.io/not-ready", 300),
    ("node.kubernetes.io/unreachable", 300),
];

/// A pod gets the default tolerations on create; `kubectl replace` of the pod without them
/// keeps them, as upstream's plugin gives them back on update; a pod may still not drop a
/// toleration it set itself.
fn replace_keeps_default_tolerations(s: &Server) {
    s.with_manifest("create", POD);
    let created = s.json(&["get", "pod", "web"]);
    let expected: Vec<(String, i64)> = DEFAULTS.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    assert_eq!(default_tolerations(&created), expected, "{created}");

    // The pod as served, its tolerations dropped and a label changed, as a user would edit
    // a saved manifest (again on a conflict, as a user would, should anything have written
    // the pod meanwhile).
    let replaced = (0..3)
        .find_map(|_| {
            let mut edited = s.json(&["get", "pod", "web"]);
            if let Some(spec) = edited["spec"].as_object_mut() {
                spec.remove("tolerations");
            }
            edited["metadata"]["labels"]["app"] = serde_json::json!("web2");
            let out = s.manifest_output(&["replace", "-f", "-"], &edited.to_string());
            let said = support::output_text(&out);
            match out.status.success() {
                true => Some(said),
                false if said.contains("Conflict") => None,
                false => panic!("replace failed: {said}"),
            }
        })
        .expect("replaced within three tries");
    assert!(replaced.contains("pod/web replaced"), "{replaced}");
    let pod = s.json(&["get", "pod", "web"]);
    assert_eq!(pod["metadata"]["labels"]["app"], "web2", "{pod}");
    assert_eq!(default_tolerations(&pod), expected, "{pod}");

    // A toleration of the pod's own cannot be removed by an update.
    let own = r#"
apiVersion: v1
kind: Pod
metadata: {name: own}
spec:
  containers: [{name: web, image: nginx}]
  tolerations: [{key: example.com/gpu, operator: Exists, effect: NoSchedule}]
"#;
    s.with_manifest("create", own);
    // Again on a conflict: the scheduler and the kubelet write the pod meanwhile, and a
    // stale resourceVersion is refused before the update is validated, as upstream orders it.
    let said = (0..5)
        .find_map(|_| {
            let mut dropped = s.json(&["get", "pod", "own"]);
            if let Some(list) = dropped["spec"]["tolerations"].as_array_mut() {
                list.retain(|t| t["key"] != "example.com/gpu");
            }
            let out = s.manifest_output(&["replace", "-f", "-"], &dropped.to_string());
            let said = support::output_text(&out);
            assert!(!out.status.success(), "{said}");
            (!said.contains("Conflict")).then_some(said)
        })
        .expect("refused for its toleration within five tries");
    assert!(
        said.contains("existing toleration can not be modified except its tolerationSeconds"),
        "{said}"
    );
}

#[test]
fn replace_keeps_default_tolerations_on_embedded() {
    replace_keeps_default_tolerations(&start_embedded_with(&[]));
}

#[test]
fn replace_keeps_default_tolerations_on_etcd() {
    replace_keeps_default_tolerations(&start_on_etcd_with(&[]));
}

#[test]
fn disabled_plugins_do_not_run() {
    let s = start_embedded_with(&[
        "--disable-admission-plugins",
        "DefaultTolerationSeconds,LimitRanger",
    ]);
    s.with_manifest("create", POD);
    let pod = s.json(&["get", "pod", "web"]);
    assert!(default_tolerations(&pod).is_empty(), "{pod}");
    // ServiceAccount still runs: the pod has its account and token.
    assert_eq!(pod["spec"]["serviceAccountName"], "default", "{pod}");
    assert!(s.logged("admission chain") > 0);
}

#[test]
fn unknown_or_overlapping_plugins_are_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let said = support::refused_start(dir.path(), &["--disable-admission-plugins", "NoSuchPlugin"]);
    assert!(
        said.contains("disable-admission-plugins plugin \"NoSuchPlugin\" is unknown"),
        "{said}"
    );
    let said = support::refused_start(dir.path(), &["--enable-admission-plugins", "NoSuchPlugin"]);
    assert!(
        said.contains("enable-admission-plugins plugin \"NoSuchPlugin\" is unknown"),
        "{said}"
    );
    let said = support::refused_start(
        dir.path(),
        &[
            "--enable-admission-plugins",
            "AlwaysDeny",
            "--disable-admission-plugins",
            "AlwaysDeny",
        ],
    );
    assert!(
        said.contains(
            "[AlwaysDeny] in enable-admission-plugins and disable-admission-plugins overlapped"
        ),
        "{said}"
    );
}

#[test]
fn always_deny_refuses_every_write() {
    // ServiceAccount off: it runs first and would refuse the pod for want of its account,
    // which the accounts' controller cannot create under AlwaysDeny.
    let s = start_embedded_with(&[
        "--enable-admission-plugins",
        "AlwaysDeny",
        "--disable-admission-plugins",
        "ServiceAccount",
    ]);
    let out = s.manifest_output(&["create", "-f", "-"], POD);
    let said = support::output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("pods \"web\" is forbidden: admission control is denying all modifications"),
        "{said}"
    );
    let r = s.request("DELETE", "/api/v1/namespaces/kube-public", &[], b"");
    assert_eq!(r.status, 403, "{}", r.body);
}

/// TaintNodesByCondition: a node is created not ready for scheduling (the node lifecycle
/// controller, off here, takes the taint away once the node is Ready); disabled, it is not.
#[test]
fn nodes_are_created_with_the_not_ready_taint() {
    let node = r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "fresh"}}"#;
    let s = start_embedded_with(&["--disable-controllers", "--nodes", "0"]);
    s.with_manifest("create", node);
    let created = s.json(&["get", "node", "fresh"]);
    assert_eq!(
        created["spec"]["taints"],
        serde_json::json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]),
        "{created}"
    );
    let s = start_embedded_with(&[
        "--disable-controllers",
        "--nodes",
        "0",
        "--disable-admission-plugins",
        "TaintNodesByCondition",
    ]);
    s.with_manifest("create", node);
    let created = s.json(&["get", "node", "fresh"]);
    assert!(created["spec"]["taints"].is_null(), "{created}");
}

fn claim(name: &str, class: &str, size: &str) -> String {
    format!(
        r#"{{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {{"name": "{name}", "namespace": "default"}},
            "spec": {{"storageClassName": "{class}", "accessModes": ["ReadWriteOnce"],
                      "resources": {{"requests": {{"storage": "{size}"}}}}}}}}"#
    )
}

fn bound(s: &Server, name: &str) {
    test_support::wait_until(
        "the claim bound",
        std::time::Duration::from_secs(30),
        || s.json(&["get", "pvc", name])["status"]["phase"] == "Bound",
    );
}

/// PersistentVolumeClaimResize: a bound claim grows only when its class allows expansion.
#[test]
fn claims_grow_only_where_their_class_allows_it() {
    let s = start_embedded_with(&[]);
    s.with_manifest(
        "apply",
        r#"{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "expandable"}, "provisioner": "sim.kube.io/hostpath",
            "allowVolumeExpansion": true}"#,
    );
    s.with_manifest("create", &claim("fixed", "standard", "1Gi"));
    s.with_manifest("create", &claim("growing", "expandable", "1Gi"));
    bound(&s, "fixed");
    bound(&s, "growing");

    let out = s.manifest_output(&["apply", "-f", "-"], &claim("fixed", "standard", "2Gi"));
    let said = support::output_text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"),
        "{said}"
    );
    s.with_manifest("apply", &claim("growing", "expandable", "2Gi"));
    let grown = s.json(&["get", "pvc", "growing"]);
    assert_eq!(
        grown["spec"]["resources"]["requests"]["storage"], "2Gi",
        "{grown}"
    );
    // Shrinking is not this plugin's to refuse; an equal size passes it.
    s.with_manifest("apply", &claim("fixed", "standard", "1Gi"));
}

const WEBHOOKS_AND_POLICIES: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: chart-webhook}
webhooks:
- name: pods.chart.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {namespace: default, name: chart-webhook, path: /validate}
    caBundle: Y2E=
  rules:
  - {operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: chart-mutator}
webhooks:
- name: defaults.chart.example.com
  admissionReviewVersions: [v1, v1beta1]
  sideEffects: NoneOnDryRun
  clientConfig: {url: "https://mutator.example.com/mutate"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  matchConstraints:
    resourceRules:
    - {operations: [CREATE, UPDATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}
  validations:
  - {expression: "object.spec.replicas <= 5", reason: Invalid}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit}
spec:
  policyName: replica-limit
  validationActions: [Deny]
"#;

/// Webhook configurations and admission policies are served and validated as upstream's
/// (acting on them is the admission chain's next step).
fn webhook_configurations_and_policies(s: &Server) {
    s.with_manifest("apply", WEBHOOKS_AND_POLICIES);
    let hook = &s.json(&["get", "validatingwebhookconfiguration", "chart-webhook"])["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail", "{hook}");
    assert_eq!(hook["timeoutSeconds"], 10, "{hook}");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443, "{hook}");
    assert_eq!(hook["rules"][0]["scope"], "*", "{hook}");
    let mutator = &s.json(&["get", "mutatingwebhookconfiguration", "chart-mutator"])["webhooks"][0];
    assert_eq!(mutator["reinvocationPolicy"], "Never", "{mutator}");
    let listed = s.kubectl(&["get", "validatingwebhookconfigurations"]);
    assert!(
        listed.contains("WEBHOOKS") && listed.contains("chart-webhook"),
        "{listed}"
    );
    let policies = s.kubectl(&["get", "validatingadmissionpolicies"]);
    assert!(
        policies.contains("VALIDATIONS") && policies.contains("<unset>"),
        "{policies}"
    );
    let bindings = s.kubectl(&["get", "validatingadmissionpolicybindings"]);
    assert!(bindings.contains("replica-limit"), "{bindings}");
    // kubectl get api-extensions lists them with the CRDs.
    let extensions = s.kubectl(&["get", "api-extensions", "-o", "name"]);
    assert!(
        extensions
            .contains("validatingwebhookconfiguration.admissionregistration.k8s.io/chart-webhook"),
        "{extensions}"
    );

    // The aggregation layer's registrations: the server's own group-versions are Local and
    // available; a chart's APIService is taken (proxying to it is the next step's).
    let services = s.kubectl(&["get", "apiservices"]);
    for line in [
        "v1.apps",
        "v1.networking.k8s.io",
        "v1.apiregistration.k8s.io",
    ] {
        let row = services
            .lines()
            .find(|l| l.starts_with(&format!("{line} ")))
            .unwrap_or_else(|| panic!("no {line}: {services}"));
        assert!(row.contains("Local") && row.contains("True"), "{row}");
    }
    let core = s.json(&["get", "apiservice", "v1."]);
    assert_eq!(core["spec"]["groupPriorityMinimum"], 18000, "{core}");
    assert_eq!(core["spec"]["versionPriority"], 1, "{core}");
    s.with_manifest(
        "apply",
        r#"
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  service: {name: metrics-server, namespace: kube-system}
  group: metrics.k8s.io
  version: v1beta1
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
"#,
    );
    let metrics = s.json(&["get", "apiservice", "v1beta1.metrics.k8s.io"]);
    assert_eq!(metrics["spec"]["service"]["port"], 443, "{metrics}");
    let out = s.manifest_output(
        &["apply", "-f", "-"],
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: metrics}\nspec: {group: metrics.k8s.io, version: v1, groupPriorityMinimum: 100, versionPriority: 100}\n",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`: \"v1.metrics.k8s.io\""),
        "{err}"
    );

    let bad = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bad-webhook}
webhooks:
- name: bad
  admissionReviewVersions: [v1]
  clientConfig: {url: "http://insecure.example.com"}
"#;
    let out = s.manifest_output(&["apply", "-f", "-"], bad);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    for message in [
        "webhooks[0].name: Invalid value: \"bad\": should be a domain with at least three segments separated by dots",
        "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
    ] {
        assert!(err.contains(message), "{message}: {err}");
    }
}

#[test]
fn webhook_configurations_and_policies_on_embedded() {
    webhook_configurations_and_policies(&start_embedded_with(&[]));
}

#[test]
fn webhook_configurations_and_policies_on_etcd() {
    webhook_configurations_and_policies(&start_on_etcd_with(&[]));
}

/// RuntimeClass: a pod naming a class gets its overhead and scheduling, and may not
/// contradict them; an unknown class, or an overhead without one, refuses the pod.
fn runtime_classes(s: &Server) {
    s.with_manifest(
        "apply",
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: sandboxed}\nhandler: runsc\noverhead:\n  podFixed: {cpu: 250m, memory: 120Mi}\nscheduling:\n  nodeSelector: {sandbox: \"true\"}\n  tolerations: [{key: sandbox, operator: Exists, effect: NoSchedule}]\n",
    );
    let pod = |name: &str, extra: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers: [{{name: c, image: nginx}}]\n{extra}"
        )
    };
    s.with_manifest(
        "create",
        &pod(
            "sandboxed",
            "  runtimeClassName: sandboxed\n  nodeSelector: {disk: ssd}\n",
        ),
    );
    let made = s.json(&["get", "pod", "sandboxed"]);
    assert_eq!(
        made["spec"]["overhead"],
        serde_json::json!({"cpu": "250m", "memory": "120Mi"})
    );
    assert_eq!(
        made["spec"]["nodeSelector"],
        serde_json::json!({"disk": "ssd", "sandbox": "true"})
    );
    assert!(made["spec"]["tolerations"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["key"] == "sandbox")));
    let refused = |manifest: String| {
        let out = s.manifest_output(&["create", "-f", "-"], &manifest);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).trim().to_string()
    };
    assert_eq!(
        refused(pod("missing", "  runtimeClassName: gvisor\n")),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"missing\" is forbidden: pod rejected: RuntimeClass \"gvisor\" not found"
    );
    assert_eq!(
        refused(pod("conflict", "  runtimeClassName: sandboxed\n  nodeSelector: {sandbox: \"false\"}\n")),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"conflict\" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = true; pod.spec.nodeSelector[sandbox] = false"
    );
    assert_eq!(
        refused(pod("overhead", "  overhead: {cpu: 100m}\n")),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"overhead\" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
    );
}

#[test]
fn runtime_classes_on_embedded() {
    runtime_classes(&start_embedded_with(&["--nodes", "0"]));
}

#[test]
fn runtime_classes_on_etcd() {
    runtime_classes(&start_on_etcd_with(&["--nodes", "0"]));
}

/// LimitRanger: a namespace's LimitRange defaults the requests and limits of the pods created
/// there (and says so in `kubernetes.io/limit-ranger`), and refuses what exceeds it.
fn limit_ranges(s: &Server) {
    s.with_manifest(
        "apply",
        "apiVersion: v1\nkind: LimitRange\nmetadata: {name: bounds}\nspec:\n  limits:\n  - type: Container\n    defaultRequest: {cpu: 100m, memory: 64Mi}\n    default: {cpu: 500m, memory: 256Mi}\n    max: {cpu: \"1\"}\n",
    );
    s.with_manifest("create", POD);
    let pod = s.json(&["get", "pod", "web"]);
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        serde_json::json!({
            "limits": {"cpu": "500m", "memory": "256Mi"},
            "requests": {"cpu": "100m", "memory": "64Mi"},
        })
    );
    assert_eq!(
        pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container web; cpu, memory limit for container web"
    );
    let greedy = POD
        .replace("name: web, labels", "name: greedy, labels")
        .replace(
            "image: nginx}",
            "image: nginx, resources: {limits: {cpu: \"2\"}}}",
        );
    let out = s.manifest_output(&["create", "-f", "-"], &greedy);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"greedy\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
    );
}

#[test]
fn limit_ranges_on_embedded() {
    limit_ranges(&start_embedded_with(&["--nodes", "0"]));
}

#[test]
fn limit_ranges_on_etcd() {
    limit_ranges(&start_on_etcd_with(&["--nodes", "0"]));
}
