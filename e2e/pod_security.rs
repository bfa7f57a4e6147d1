//! PodSecurity through the real binary and kubectl, on both backends: a namespace labelled
//! `pod-security.kubernetes.io/enforce=restricted` refuses a privileged pod with upstream's
//! message and takes a compliant one; `warn=baseline` warns of a Deployment whose template is
//! privileged; labelling a namespace whose pods violate the new level warns of them; bad
//! labels are refused; the exemptions of `--admission-control-config-file` let an exempt user
//! and namespace through; the audit log carries the plugin's annotations.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{start_embedded_with, start_on_etcd_with, Kubectl, Server};

const ADMISSION_CONFIG: &str = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: pod-security.yaml
"#;

const POD_SECURITY_CONFIG: &str = r#"
apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: privileged
exemptions:
  usernames: [ci-bot]
  namespaces: [exempt]
"#;

/// Metadata for pods and deployments, nothing else.
const AUDIT_POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  omitStages: ["RequestReceived"]
  resources:
  - group: ""
    resources: ["pods"]
  - group: "apps"
    resources: ["deployments"]
- level: None
"#;

fn privileged_pod(namespace: &str, name: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  containers:
  - name: c
    image: nginx
    securityContext: {{privileged: true}}
"#
    )
}

const RESTRICTED_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: ok, namespace: psa}
spec:
  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: c
    image: nginx
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
"#;

const PRIVILEGED_DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: priv, namespace: wrn}
spec:
  replicas: 1
  selector: {matchLabels: {app: priv}}
  template:
    metadata: {labels: {app: priv}}
    spec:
      containers:
      - name: c
        image: nginx
        securityContext: {privileged: true}
"#;

/// What upstream says of a privileged container "c" at restricted:latest.
const RESTRICTED_VIOLATIONS: &str = "privileged (container \"c\" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";

struct Files {
    _dir: tempfile::TempDir,
    admission: PathBuf,
    audit_policy: PathBuf,
    audit_log: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().expect("tmp");
    let admission = dir.path().join("admission.yaml");
    std::fs::write(&admission, ADMISSION_CONFIG).expect("admission config");
    // Named relative to the AdmissionConfiguration, as upstream resolves `path`.
    std::fs::write(dir.path().join("pod-security.yaml"), POD_SECURITY_CONFIG).expect("psa");
    let audit_policy = dir.path().join("audit.yaml");
    std::fs::write(&audit_policy, AUDIT_POLICY).expect("audit policy");
    let audit_log = dir.path().join("audit.log");
    Files {
        _dir: dir,
        admission,
        audit_policy,
        audit_log,
    }
}

fn start(on_etcd: bool, files: &Files) -> Server {
    let path = |p: &Path| p.to_str().expect("utf-8 path").to_string();
    let (admission, policy, log) = (
        path(&files.admission),
        path(&files.audit_policy),
        path(&files.audit_log),
    );
    let args = [
        "--admission-control-config-file",
        &admission,
        "--audit-policy-file",
        &policy,
        "--audit-log-path",
        &log,
    ];
    match on_etcd {
        true => start_on_etcd_with(&args),
        false => start_embedded_with(&args),
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The audit events of `verb` on `resource` named `name`, once there is one.
fn audited(log: &Path, verb: &str, resource: &str, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| {
                e["verb"] == verb
                    && e["objectRef"]["resource"] == resource
                    && e["objectRef"]["name"] == name
            });
        if let Some(event) = found {
            return event;
        }
        assert!(
            Instant::now() < deadline,
            "no audit event of {verb} {resource}/{name}: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Enforce at restricted: the privileged pod refused (by `kubectl run` and `apply`), the
/// compliant one created, a bad label refused; the refusal's audit event names the policy.
fn enforce(s: &Server, log: &Path) {
    s.kubectl(&["create", "namespace", "psa"]);
    let out = s.kubectl_raw(&[
        "label",
        "ns",
        "psa",
        "pod-security.kubernetes.io/enforce=restricted",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "namespace/psa labeled\n");
    assert_eq!(stderr(&out), "", "no pods, no warning");

    let out = s.kubectl_raw(&["run", "p", "-n", "psa", "--image=nginx", "--privileged"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        format!(
            "Error from server (Forbidden): pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": {}\n",
            RESTRICTED_VIOLATIONS.replace("\"c\"", "\"p\"")
        )
    );

    let out = s.manifest_output(&["apply", "-f", "-"], &privileged_pod("psa", "p"));
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        format!(
            "Error from server (Forbidden): error when creating \"STDIN\": pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": {RESTRICTED_VIOLATIONS}\n"
        )
    );
    let event = audited(log, "create", "pods", "p");
    assert_eq!(event["responseStatus"]["code"], 403, "{event}");
    assert_eq!(
        event["annotations"]["pod-security.kubernetes.io/enforce-policy"], "restricted:latest",
        "{event}"
    );

    let out = s.manifest_output(&["apply", "-f", "-"], RESTRICTED_POD);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "pod/ok created\n");
    assert_eq!(stderr(&out), "");

    let bad = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bad\n  labels: {pod-security.kubernetes.io/enforce-version: v1.030}\n";
    let out = s.manifest_output(&["apply", "-f", "-"], bad);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "The Namespace \"bad\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: \"v1.030\": must be \"latest\" or \"v1.x\"\n"
    );

    let out = s.kubectl_raw(&["label", "ns", "psa", "pod-security.kubernetes.io/warn=loud"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "The Namespace \"psa\" is invalid: metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: \"loud\": must be one of privileged, baseline, restricted\n"
    );
}

/// Warn (and audit) at baseline: a Deployment with a privileged template is created, with
/// kubectl printing upstream's warning; the audit event carries the violation.
fn warn_on_workloads(s: &Server, log: &Path) {
    s.kubectl(&["create", "namespace", "wrn"]);
    s.kubectl(&[
        "label",
        "ns",
        "wrn",
        "pod-security.kubernetes.io/warn=baseline",
        "pod-security.kubernetes.io/audit=baseline",
    ]);
    let out = s.manifest_output(&["apply", "-f", "-"], PRIVILEGED_DEPLOYMENT);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "deployment.apps/priv created\n");
    let violation = "would violate PodSecurity \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)";
    assert_eq!(stderr(&out), format!("Warning: {violation}\n"));
    let event = audited(log, "create", "deployments", "priv");
    assert_eq!(
        event["annotations"]["pod-security.kubernetes.io/audit-violations"], violation,
        "{event}"
    );
}

/// Raising the enforce level of a namespace whose pods violate it warns of them, grouped.
fn label_warns_of_existing_pods(s: &Server) {
    s.kubectl(&["create", "namespace", "old"]);
    for name in ["legacy-b", "legacy-a"] {
        s.with_manifest("apply", &privileged_pod("old", name));
    }
    let out = s.kubectl_raw(&[
        "label",
        "ns",
        "old",
        "pod-security.kubernetes.io/enforce=baseline",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "namespace/old labeled\n");
    assert_eq!(
        stderr(&out),
        "Warning: existing pods in namespace \"old\" violate the new PodSecurity enforce level \"baseline:latest\"\n\
         Warning: legacy-a (and 1 other pod): privileged\n"
    );
    // Relaxing it again warns of nothing.
    let out = s.kubectl_raw(&[
        "label",
        "ns",
        "old",
        "--overwrite",
        "pod-security.kubernetes.io/enforce=privileged",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

/// The configured exemptions: an exempt user creates a privileged pod in a restricted
/// namespace; an exempt namespace's labels are ignored, with a warning saying so.
fn exemptions(s: &Server) {
    let out = s.manifest_output(
        &[
            "apply",
            "-f",
            "-",
            "--as=ci-bot",
            "--as-group=system:masters",
        ],
        &privileged_pod("psa", "by-bot"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "pod/by-bot created\n");
    let out = s.manifest_output(
        &[
            "apply",
            "-f",
            "-",
            "--as=someone",
            "--as-group=system:masters",
        ],
        &privileged_pod("psa", "by-someone"),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("violates PodSecurity \"restricted:latest\""),
        "{}",
        stderr(&out)
    );

    s.kubectl(&["create", "namespace", "exempt"]);
    let out = s.kubectl_raw(&[
        "label",
        "ns",
        "exempt",
        "pod-security.kubernetes.io/enforce=restricted",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "Warning: namespace \"exempt\" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored\n"
    );
    let out = s.manifest_output(&["apply", "-f", "-"], &privileged_pod("exempt", "free"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "pod/free created\n");
}

fn pod_security(on_etcd: bool) {
    let files = files();
    let s = start(on_etcd, &files);
    enforce(&s, &files.audit_log);
    warn_on_workloads(&s, &files.audit_log);
    label_warns_of_existing_pods(&s);
    exemptions(&s);
}

#[test]
fn pod_security_on_embedded() {
    pod_security(false);
}

#[test]
fn pod_security_on_etcd() {
    pod_security(true);
}

#[test]
fn bad_pod_security_configuration_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tmp");
    let config = dir.path().join("admission.yaml");
    std::fs::write(
        &config,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    defaults: {enforce: strict}\n",
    )
    .expect("config");
    let said = support::refused_start(
        dir.path(),
        &[
            "--admission-control-config-file",
            config.to_str().expect("utf-8"),
        ],
    );
    assert!(
        said.contains("PodSecurity configuration error: enforce: must be one of privileged, baseline, restricted"),
        "{said}"
    );
    let missing = dir.path().join("missing.yaml");
    let said = support::refused_start(
        dir.path(),
        &[
            "--admission-control-config-file",
            missing.to_str().expect("utf-8"),
        ],
    );
    assert!(
        said.contains("unable to read admission control configuration from"),
        "{said}"
    );
}
