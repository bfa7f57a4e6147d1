//! The real kubectl against the real binary on the embedded store: discovery, Table output,
//! create / get / label / patch / delete, each checked on the state afterwards.

mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use support::{start, start_on_etcd, Kubectl, Server};

#[test]
fn kubectl_everyday_verbs() {
    everyday_verbs(&start());
}

#[test]
fn kubectl_everyday_verbs_on_etcd() {
    everyday_verbs(&start_on_etcd());
}

fn everyday_verbs(s: &Server) {
    let version = s.kubectl(&["version", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&version).expect("version json");
    assert_eq!(v["serverVersion"]["major"], "1");

    let resources = s.kubectl(&["api-resources"]);
    for needle in ["pods", "deployments", "configmaps", "namespaces", "leases"] {
        assert!(
            resources.contains(needle),
            "{needle} missing in api-resources:\n{resources}"
        );
    }
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("deployments") && l.contains("deploy") && l.contains("apps/v1")),
        "{resources}"
    );

    // Exactly kube-apiserver 1.35's default resources (GA group-versions), with
    // metrics-server's (the metrics API is served in-process), in kubectl's order.
    let names = s.kubectl(&["api-resources", "-o", "name"]);
    let names: Vec<&str> = names.lines().collect();
    assert_eq!(names, UPSTREAM_1_35_RESOURCES, "{}", names.len());

    // explain reads the server's OpenAPI.
    let explained = s.kubectl(&["explain", "deployment.spec.strategy"]);
    assert!(explained.contains("KIND:       Deployment"), "{explained}");
    assert!(explained.contains("rollingUpdate"), "{explained}");

    // Table output with upstream's columns.
    let namespaces = s.kubectl(&["get", "namespaces"]);
    let header: Vec<&str> = namespaces
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "STATUS", "AGE"]);
    assert!(
        namespaces.contains("kube-system") && namespaces.contains("Active"),
        "{namespaces}"
    );

    // kubectl's typed generators send protobuf bodies.
    assert!(s
        .kubectl(&["create", "namespace", "demo"])
        .contains("namespace/demo created"));
    assert_eq!(
        s.json(&["get", "namespace", "demo"])["status"]["phase"],
        "Active"
    );
    assert!(s
        .kubectl(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "demo",
            "--from-literal=color=blue"
        ])
        .contains("configmap/settings created"));
    let secret = s.kubectl(&[
        "create",
        "secret",
        "generic",
        "token",
        "-n",
        "demo",
        "--from-literal=password=hunter2",
    ]);
    assert!(secret.contains("secret/token created"), "{secret}");
    assert_eq!(
        s.json(&["get", "secret", "token", "-n", "demo"])["data"]["password"],
        "aHVudGVyMg=="
    );
    let cm = s.json(&["get", "configmap", "settings", "-n", "demo"]);
    assert_eq!(cm["data"]["color"], "blue");
    let table = s.kubectl(&["get", "cm", "-n", "demo"]);
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|h| h.split_whitespace().collect::<Vec<_>>() == ["NAME", "DATA", "AGE"]),
        "{table}"
    );
    assert!(table.contains("settings"), "{table}");
    assert_eq!(
        s.kubectl(&["get", "cm", "settings", "-n", "demo", "-o", "name"])
            .trim(),
        "configmap/settings"
    );
    assert_eq!(
        s.kubectl(&[
            "get",
            "cm",
            "settings",
            "-n",
            "demo",
            "-o",
            "jsonpath={.data.color}"
        ]),
        "blue"
    );

    s.kubectl(&[
        "label",
        "configmap",
        "settings",
        "-n",
        "demo",
        "tier=backend",
    ]);
    s.kubectl(&[
        "annotate",
        "configmap",
        "settings",
        "-n",
        "demo",
        "owner=team-a",
    ]);
    s.kubectl(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        "demo",
        "--type=merge",
        "-p",
        r#"{"data":{"size":"L"}}"#,
    ]);
    s.kubectl(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        "demo",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/data/color","value":"red"}]"#,
    ]);
    let cm = s.json(&["get", "configmap", "settings", "-n", "demo"]);
    assert_eq!(cm["metadata"]["labels"]["tier"], "backend");
    assert_eq!(cm["metadata"]["annotations"]["owner"], "team-a");
    assert_eq!(cm["data"]["size"], "L");
    assert_eq!(cm["data"]["color"], "red");
    // edit, with a script as the editor.
    let editor = s.dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/color: red/color: purple/' \"$1\"\n",
    )
    .expect("editor script");
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let edited = s
        .command(&["edit", "configmap", "settings", "-n", "demo"])
        .env("KUBE_EDITOR", &editor)
        .output()
        .expect("kubectl edit");
    assert!(
        edited.status.success(),
        "{}",
        String::from_utf8_lossy(&edited.stderr)
    );
    assert_eq!(
        s.json(&["get", "configmap", "settings", "-n", "demo"])["data"]["color"],
        "purple"
    );

    let selected = s.kubectl(&[
        "get",
        "cm",
        "-n",
        "demo",
        "-l",
        "tier=backend",
        "-o",
        "name",
    ]);
    assert_eq!(selected.trim(), "configmap/settings");

    // A missing object is a NotFound kubectl reports as such.
    let missing = s.kubectl_raw(&["get", "configmap", "nope", "-n", "demo"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("configmaps \"nope\" not found"));

    // apply on top: the last-applied annotation is recorded, the change merged.
    let applied = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: demo\ndata:\n  color: green\n";
    s.with_manifest("apply", applied);
    let cm = s.json(&["get", "configmap", "settings", "-n", "demo"]);
    assert_eq!(cm["data"]["color"], "green");
    assert!(
        cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );

    s.kubectl(&["delete", "configmap", "settings", "-n", "demo"]);
    let gone = s.kubectl_raw(&["get", "configmap", "settings", "-n", "demo"]);
    assert!(!gone.status.success());
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
      - name: side
        image: busybox
";

/// kubectl validates strictly by default, and the server does it: an unknown field in a
/// manifest is refused with the server's words; `--validate=false` stores it without.
#[test]
fn kubectl_unknown_fields_are_refused_unless_validation_is_off() {
    let s = start();
    let manifest = DEPLOYMENT.replace("  replicas: 2\n", "  replicas: 2\n  bogus: 1\n");
    let create = |validate: &[&str]| {
        let mut args = vec!["create", "-f", "-"];
        args.extend(validate);
        s.manifest_output(&args, &manifest)
    };

    let refused = create(&[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains(r#"strict decoding error: unknown field "spec.bogus""#),
        "{stderr}"
    );
    assert!(!s
        .kubectl_raw(&["get", "deployment", "web"])
        .status
        .success());

    let created = create(&["--validate=false"]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let stored = s.json(&["get", "deployment", "web"]);
    assert_eq!(stored["spec"]["replicas"], 2);
    assert!(stored["spec"].get("bogus").is_none(), "{stored}");
}

/// A body of the wrong kind, or no JSON at all, is refused with upstream's decoder words
/// (test/cmd's `create --raw /api/v1/namespaces -f valid-pod.yaml`).
#[test]
fn kubectl_create_raw_refuses_bodies_as_upstreams_decoder() {
    let s = start();
    let pod_yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: raw\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
    let refused = |path: &str, manifest: &str| {
        let out = s.manifest_output(&["create", "--raw", path, "-f", "-"], manifest);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).trim().to_string()
    };
    // The raw body goes as JSON, and YAML is not JSON.
    assert_eq!(
        refused("/api/v1/namespaces", pod_yaml),
        "Error from server (BadRequest): the object provided is unrecognized (must be of type \
         Namespace): couldn't get version/kind; json parse error: invalid character 'a' looking \
         for beginning of value (61706956657273696f6e3a2076310a6b696e643a20506f640a6d65746164 ...)"
    );
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"raw"}}"#;
    assert_eq!(
        refused("/api/v1/namespaces", pod),
        "Error from server (BadRequest): Pod in version \"v1\" cannot be handled as a Namespace: \
         converting (v1.Pod) to (core.Namespace): unknown conversion"
    );
    // A kind the version does not have (a Deployment in v1, a common slip).
    let deployment = r#"{"apiVersion":"v1","kind":"Deployment","metadata":{"name":"raw"}}"#;
    assert_eq!(
        refused("/apis/apps/v1/namespaces/default/deployments", deployment),
        "Error from server (BadRequest): Deployment in version \"v1\" cannot be handled as a \
         Deployment: no kind \"Deployment\" is registered for version \"v1\" in scheme \
         \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30\""
    );
    // The same kind in another group decodes, then fails the apiVersion check.
    let event = r#"{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"raw"}}"#;
    assert_eq!(
        refused("/api/v1/namespaces/default/events", event),
        "Error from server (BadRequest): the API version in the data (events.k8s.io/v1) does \
         not match the expected API version (v1)"
    );
}

#[test]
fn kubectl_deployments_apply_scale_watch_delete() {
    deployment_flows(&start());
}

#[test]
fn kubectl_deployments_on_etcd() {
    deployment_flows(&start_on_etcd());
}

/// The READY column (`ready/desired`) of a deployment's table row, the last row of `table`.
fn ready_column(table: &str) -> String {
    let row = table.lines().last().unwrap_or_default();
    row.split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

fn deployment_flows(s: &Server) {
    assert!(s
        .with_manifest("apply", DEPLOYMENT)
        .contains("deployment.apps/web created"));
    let table = s.kubectl(&["get", "deployments"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert!(ready_column(&table).ends_with("/2"), "{table}");

    // apply again with one image changed: strategic merge by container name keeps both
    // containers, and the last-applied annotation follows the manifest.
    s.with_manifest("apply", &DEPLOYMENT.replace("nginx:1.25", "nginx:1.26"));
    let d = s.json(&["get", "deployment", "web"]);
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(containers.len(), 2);
    assert_eq!(containers[0]["image"], "nginx:1.26");
    assert_eq!(containers[1]["image"], "busybox");
    let applied = d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap_or_default();
    assert!(applied.contains("nginx:1.26"), "{applied}");
    assert_eq!(d["metadata"]["generation"], 2);

    s.kubectl(&[
        "patch",
        "deployment",
        "web",
        "--type=strategic",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox:1.36"}]}}}}"#,
    ]);
    let d = s.json(&["get", "deployment", "web"]);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][1]["image"],
        "busybox:1.36"
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );

    s.kubectl(&["scale", "deployment", "web", "--replicas=4"]);
    assert_eq!(s.json(&["get", "deployment", "web"])["spec"]["replicas"], 4);
    assert!(s
        .kubectl(&["describe", "deployment", "web"])
        .contains("Replicas:"));

    // The typed generator sends the deployment as protobuf.
    s.kubectl(&[
        "create",
        "deployment",
        "api",
        "--image=nginx:1.27",
        "--replicas=3",
        "--port=8080",
    ]);
    let api = s.json(&["get", "deployment", "api"]);
    assert_eq!(api["spec"]["replicas"], 3);
    assert_eq!(api["spec"]["selector"]["matchLabels"]["app"], "api");
    let container = &api["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.27");
    assert_eq!(
        container["ports"],
        serde_json::json!([{"containerPort": 8080, "protocol": "TCP"}])
    );
    s.kubectl(&["delete", "deployment", "api"]);

    // get -w prints the change made while it watches.
    let mut watch = s
        .command(&["get", "deployments", "-w", "--request-timeout=20s"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("kubectl get -w");
    let lines = BufReader::new(watch.stdout.take().expect("stdout")).lines();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("watch header");
    assert!(first.starts_with("NAME"), "{first}");
    rx.recv_timeout(Duration::from_secs(10))
        .expect("initial row");
    s.kubectl(&["scale", "deployment", "web", "--replicas=1"]);
    // The rollout to 4 may still be under way: its status rows can come before the change.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    while !seen
        .last()
        .is_some_and(|row: &String| ready_column(row).ends_with("/1"))
    {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(row) => seen.push(row),
            Err(_) => panic!("no row after the change: {seen:?}"),
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();

    // Foreground deletion leaves the owner waiting on a dependent that blocks it, until the
    // dependent (held by its own finalizer) is released.
    let uid = s.json(&["get", "deployment", "web"])["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    s.with_manifest(
        "create",
        &format!(
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web-rs\n  finalizers: [example.com/hold]\n  ownerReferences:\n  - {{apiVersion: apps/v1, kind: Deployment, name: web, uid: {uid}, blockOwnerDeletion: true}}\nspec:\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers: [{{name: c, image: nginx}}]\n"
        ),
    );
    s.kubectl(&[
        "delete",
        "deployment",
        "web",
        "--cascade=foreground",
        "--wait=false",
    ]);
    let d = s.json(&["get", "deployment", "web"]);
    assert_eq!(
        d["metadata"]["finalizers"],
        serde_json::json!(["foregroundDeletion"])
    );
    assert!(d["metadata"]["deletionTimestamp"].is_string());
    s.kubectl(&[
        "patch",
        "replicaset",
        "web-rs",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    s.kubectl(&["wait", "--for=delete", "deployment/web", "--timeout=30s"]);
    assert!(!s
        .kubectl_raw(&["get", "replicaset", "web-rs"])
        .status
        .success());

    // Orphan and background on fresh ones.
    s.with_manifest(
        "apply",
        &DEPLOYMENT.replace("name: web\n", "name: orphaned\n"),
    );
    s.kubectl(&[
        "delete",
        "deployment",
        "orphaned",
        "--cascade=orphan",
        "--wait=false",
    ]);
    // The collector strips the orphan finalizer once dependents are orphaned: it goes.
    s.kubectl(&[
        "wait",
        "--for=delete",
        "deployment/orphaned",
        "--timeout=30s",
    ]);
    s.with_manifest("apply", &DEPLOYMENT.replace("name: web\n", "name: gone\n"));
    s.kubectl(&[
        "delete",
        "deployment",
        "gone",
        "--cascade=background",
        "--wait=true",
    ]);
    assert!(!s
        .kubectl_raw(&["get", "deployment", "gone"])
        .status
        .success());

    // wait --for=delete returns once the object is gone.
    s.with_manifest("apply", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: doomed\n  finalizers: [example.com/hold]\n");
    s.kubectl(&["delete", "configmap", "doomed", "--wait=false"]);
    let mut waiter = s
        .command(&["wait", "--for=delete", "configmap/doomed", "--timeout=30s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl wait");
    std::thread::sleep(Duration::from_millis(500));
    s.kubectl(&[
        "patch",
        "configmap",
        "doomed",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    let status = waiter.wait().expect("kubectl wait ends");
    assert!(status.success(), "kubectl wait --for=delete failed");
}

/// `kubectl diff --prune`: its default prune list names Ingress among others, so it needs every
/// kind it names served; what the new manifests drop shows as a deletion.
#[test]
fn kubectl_diff_prune_shows_what_apply_would_prune() {
    let s = start();
    let configmap = |value: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a, labels: {{app: demo}}}}\ndata: {{x: \"{value}\"}}\n")
    };
    let ingress = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, labels: {app: demo}}\nspec:\n  defaultBackend: {service: {name: web, port: {number: 80}}}\n";
    s.with_manifest("apply", &format!("{}---\n{ingress}", configmap("1")));
    let out = s.manifest_output(
        &["diff", "--prune", "-l", "app=demo", "-f", "-"],
        &configmap("2"),
    );
    let diff = String::from_utf8_lossy(&out.stdout);
    // diff's exit code 1: there are differences.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{diff}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        diff.contains("/networking.k8s.io.v1.Ingress.default.web"),
        "{diff}"
    );
    assert!(diff.contains("-kind: Ingress"), "{diff}");
    assert!(diff.contains("-  x: \"1\"\n+  x: \"2\""), "{diff}");
}

/// `kubectl api-resources -o name` against kube-apiserver 1.35 with its defaults: 65 resources.
const UPSTREAM_1_35_RESOURCES: [&str; 67] = [
    "bindings",
    "componentstatuses",
    "configmaps",
    "endpoints",
    "events",
    "limitranges",
    "namespaces",
    "nodes",
    "persistentvolumeclaims",
    "persistentvolumes",
    "pods",
    "podtemplates",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "serviceaccounts",
    "services",
    "mutatingwebhookconfigurations.admissionregistration.k8s.io",
    "validatingadmissionpolicies.admissionregistration.k8s.io",
    "validatingadmissionpolicybindings.admissionregistration.k8s.io",
    "validatingwebhookconfigurations.admissionregistration.k8s.io",
    "customresourcedefinitions.apiextensions.k8s.io",
    "apiservices.apiregistration.k8s.io",
    "controllerrevisions.apps",
    "daemonsets.apps",
    "deployments.apps",
    "replicasets.apps",
    "statefulsets.apps",
    "selfsubjectreviews.authentication.k8s.io",
    "tokenreviews.authentication.k8s.io",
    "localsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
    "subjectaccessreviews.authorization.k8s.io",
    "horizontalpodautoscalers.autoscaling",
    "cronjobs.batch",
    "jobs.batch",
    "certificatesigningrequests.certificates.k8s.io",
    "leases.coordination.k8s.io",
    "endpointslices.discovery.k8s.io",
    "events.events.k8s.io",
    "flowschemas.flowcontrol.apiserver.k8s.io",
    "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
    "nodes.metrics.k8s.io",
    "pods.metrics.k8s.io",
    "ingressclasses.networking.k8s.io",
    "ingresses.networking.k8s.io",
    "ipaddresses.networking.k8s.io",
    "networkpolicies.networking.k8s.io",
    "servicecidrs.networking.k8s.io",
    "runtimeclasses.node.k8s.io",
    "poddisruptionbudgets.policy",
    "clusterrolebindings.rbac.authorization.k8s.io",
    "clusterroles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "roles.rbac.authorization.k8s.io",
    "deviceclasses.resource.k8s.io",
    "resourceclaims.resource.k8s.io",
    "resourceclaimtemplates.resource.k8s.io",
    "resourceslices.resource.k8s.io",
    "priorityclasses.scheduling.k8s.io",
    "csidrivers.storage.k8s.io",
    "csinodes.storage.k8s.io",
    "csistoragecapacities.storage.k8s.io",
    "storageclasses.storage.k8s.io",
    "volumeattachments.storage.k8s.io",
    "volumeattributesclasses.storage.k8s.io",
];
