//! The networking, scheduling and node kinds, PodTemplates and componentstatuses through the
//! real binary and the real kubectl, on the embedded store and on etcd: kubectl's own
//! generators (which send protobuf), upstream's defaults, Table columns and validation
//! messages.

mod support;

use std::time::Duration;

use serde_json::json;
use test_support::wait_until;

use support::{start, start_on_etcd, Kubectl, Server};

const CLASS_AND_POLICY: &str = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec:
  controller: k8s.io/ingress-nginx
  parameters: {kind: IngressParameters, apiGroup: k8s.example.com, name: external-lb}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from:
    - ipBlock: {cidr: 172.17.0.0/16, except: [172.17.1.0/24]}
    ports: [{port: 6379}]
  egress:
  - ports: [{port: 32000, endPort: 32768}]
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
---
apiVersion: v1
kind: PodTemplate
metadata: {name: web}
template:
  metadata: {labels: {app: web}}
  spec:
    containers: [{name: web, image: nginx}]
"#;

/// kubectl's stderr for a command that must fail.
fn refused(s: &Server, args: &[&str]) -> String {
    let out = s.kubectl_raw(args);
    assert!(!out.status.success(), "kubectl {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// kubectl's stderr for a JSON merge patch that must be refused.
fn refused_patch(s: &Server, kind: &str, name: &str, patch: &str) -> String {
    refused(s, &["patch", kind, name, "--type=merge", "-p", patch])
}

fn refused_manifest(s: &Server, manifest: &str) -> String {
    let out = s.manifest_output(&["apply", "-f", "-"], manifest);
    assert!(!out.status.success(), "apply succeeded: {manifest}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ingresses(s: &Server) {
    s.kubectl(&[
        "create",
        "ingress",
        "simple",
        "--class=nginx",
        "--rule=foo.com/bar=svc1:8080,tls=my-cert",
        "--rule=bar.com/*=svc2:http",
    ]);
    let ing = s.json(&["get", "ingress", "simple"]);
    let rules = &ing["spec"]["rules"];
    assert_eq!(rules[0]["host"], "foo.com", "{ing}");
    assert_eq!(rules[0]["http"]["paths"][0]["pathType"], "Exact", "{ing}");
    assert_eq!(
        rules[0]["http"]["paths"][0]["backend"]["service"]["port"]["number"], 8080,
        "{ing}"
    );
    assert_eq!(rules[1]["http"]["paths"][0]["pathType"], "Prefix", "{ing}");
    assert_eq!(
        rules[1]["http"]["paths"][0]["backend"]["service"]["port"]["name"], "http",
        "{ing}"
    );
    assert_eq!(ing["status"], serde_json::json!({"loadBalancer": {}}));
    assert_eq!(ing["metadata"]["generation"], 1);
    let table = s.kubectl(&["get", "ing"]);
    assert!(table.starts_with("NAME"), "{table}");
    for cell in [
        "CLASS",
        "HOSTS",
        "ADDRESS",
        "PORTS",
        "nginx",
        "foo.com,bar.com",
        "80, 443",
    ] {
        assert!(table.contains(cell), "{cell}: {table}");
    }

    let err = refused(
        s,
        &[
            "create",
            "ingress",
            "mismatch",
            "--class=a",
            "--annotation=kubernetes.io/ingress.class=b",
            "--rule=foo.com/=svc:80",
        ],
    );
    assert!(
        err.contains("annotations.kubernetes.io/ingress.class: Invalid value: \"b\": must match `ingressClassName` when both are specified"),
        "{err}"
    );
    let err = refused(
        s,
        &[
            "create",
            "ingress",
            "badport",
            "--rule=foo.com/=svc:web--ui",
        ],
    );
    assert!(
        err.contains("spec.rules[0].http.paths[0].backend.service.port.name: Invalid value: \"web--ui\": must not contain consecutive hyphens"),
        "{err}"
    );
    let err = refused_manifest(
        s,
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: empty}\nspec: {}\n",
    );
    assert!(
        err.contains("spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"),
        "{err}"
    );
    let err = refused_manifest(
        s,
        r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: rel}
spec:
  rules:
  - http:
      paths:
      - {path: "x//y", pathType: Prefix, backend: {service: {name: s, port: {number: 80}}}}
"#,
    );
    assert!(
        err.contains(
            "spec.rules[0].http.paths[0].path: Invalid value: \"x//y\": must be an absolute path"
        ) && err.contains("must not contain '//'"),
        "{err}"
    );
    // A spec change moves the generation on; the status subresource sets addresses.
    s.kubectl(&["annotate", "ingress", "simple", "note=kept"]);
    assert_eq!(
        s.json(&["get", "ingress", "simple"])["metadata"]["generation"],
        1
    );
    s.kubectl(&[
        "patch",
        "ingress",
        "simple",
        "--type=merge",
        "-p",
        r#"{"spec":{"ingressClassName":"other"}}"#,
    ]);
    assert_eq!(
        s.json(&["get", "ingress", "simple"])["metadata"]["generation"],
        2
    );
    s.kubectl(&[
        "patch",
        "ingress",
        "simple",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.9"}]}}}"#,
    ]);
    assert!(s.kubectl(&["get", "ing", "simple"]).contains("10.0.0.9"));
}

fn classes_policies_and_templates(s: &Server) {
    s.with_manifest("apply", CLASS_AND_POLICY);
    let classes = s.kubectl(&["get", "ingressclass"]);
    assert!(
        classes.contains("k8s.io/ingress-nginx")
            && classes.contains("IngressParameters.k8s.example.com/external-lb"),
        "{classes}"
    );
    // The parameters' scope is defaulted; the controller never changes.
    let class = s.json(&["get", "ingressclass", "nginx"]);
    assert_eq!(class["spec"]["parameters"]["scope"], "Cluster", "{class}");
    let err = refused_patch(
        s,
        "ingressclass",
        "nginx",
        r#"{"spec":{"controller":"example.com/other"}}"#,
    );
    assert!(
        err.contains("spec.controller: Invalid value: \"example.com/other\": field is immutable"),
        "{err}"
    );
    let err = refused_manifest(
        s,
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: bare}\nspec: {controller: nginx}\n",
    );
    assert!(
        err.contains("spec.controller: Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")"),
        "{err}"
    );

    // DefaultIngressClass: an Ingress naming no class gets the one marked default.
    s.kubectl(&["create", "ingress", "before", "--rule=x.com/=svc:80"]);
    s.kubectl(&[
        "annotate",
        "ingressclass",
        "nginx",
        "ingressclass.kubernetes.io/is-default-class=true",
    ]);
    s.kubectl(&["create", "ingress", "defaulted", "--rule=x.com/=svc:80"]);
    s.kubectl(&[
        "create",
        "ingress",
        "legacy",
        "--rule=x.com/=svc:80",
        "--annotation=kubernetes.io/ingress.class=haproxy",
    ]);
    let class_of =
        |name: &str| s.json(&["get", "ingress", name])["spec"]["ingressClassName"].clone();
    assert_eq!(class_of("defaulted"), "nginx");
    assert!(class_of("before").is_null());
    assert!(class_of("legacy").is_null());

    let policy = s.json(&["get", "netpol", "db"]);
    assert_eq!(
        policy["spec"]["policyTypes"],
        serde_json::json!(["Ingress", "Egress"])
    );
    assert_eq!(policy["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
    assert!(s.kubectl(&["get", "netpol"]).contains("app=db"));
    let err = refused_manifest(
        s,
        r#"
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: bad}
spec:
  podSelector: {}
  ingress:
  - from: [{ipBlock: {cidr: 10.0.0.0/16, except: [10.1.0.0/24]}}]
    ports: [{port: http, endPort: 90}]
"#,
    );
    assert!(
        err.contains("spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: \"10.1.0.0/24\": must be a strict subset of `cidr`")
            && err.contains("spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric"),
        "{err}"
    );

    assert!(s.kubectl(&["get", "runtimeclass"]).contains("runsc"));
    let err = refused_patch(s, "runtimeclass", "gvisor", r#"{"handler":"runc"}"#);
    assert!(
        err.contains("handler: Invalid value: \"runc\": field is immutable"),
        "{err}"
    );
    let err = refused_manifest(
        s,
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: bad}\nhandler: Run_C\n",
    );
    assert!(
        err.contains("handler: Invalid value: \"Run_C\": a lowercase RFC 1123 label"),
        "{err}"
    );

    let templates = s.kubectl(&["get", "podtemplates"]);
    assert!(
        templates.contains("CONTAINERS")
            && templates.contains("nginx")
            && templates.contains("app=web"),
        "{templates}"
    );
    // The template is defaulted like any pod's.
    let template = s.json(&["get", "podtemplate", "web"]);
    assert_eq!(
        template["template"]["spec"]["restartPolicy"], "Always",
        "{template}"
    );
}

fn priority_classes(s: &Server) {
    let listed = s.kubectl(&["get", "priorityclasses"]);
    for cell in [
        "PREEMPTIONPOLICY",
        "system-cluster-critical",
        "2000000000",
        "system-node-critical",
        "2000001000",
    ] {
        assert!(listed.contains(cell), "{cell}: {listed}");
    }
    s.kubectl(&[
        "create",
        "priorityclass",
        "high",
        "--value=1000",
        "--global-default=true",
        "--preemption-policy=Never",
        "--description=important",
    ]);
    let high = s.json(&["get", "pc", "high"]);
    assert_eq!(high["value"], 1000);
    assert_eq!(high["globalDefault"], true);
    assert_eq!(high["preemptionPolicy"], "Never");
    s.kubectl(&["create", "priorityclass", "low", "--value=10"]);
    assert_eq!(
        s.json(&["get", "pc", "low"])["preemptionPolicy"],
        "PreemptLowerPriority"
    );
    let err = refused(s, &["create", "priorityclass", "system-mine", "--value=5"]);
    assert!(
        err.contains("metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"),
        "{err}"
    );
    let err = refused(
        s,
        &["create", "priorityclass", "huge", "--value=1000000001"],
    );
    assert!(
        err.contains(
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
        ),
        "{err}"
    );
    let err = refused_patch(s, "pc", "low", r#"{"value":11}"#);
    assert!(
        err.contains("value: Forbidden: may not be changed in an update."),
        "{err}"
    );

    // The Priority admission plugin: one global default, and pods take their class's value.
    let err = refused(
        s,
        &[
            "create",
            "priorityclass",
            "second",
            "--value=5",
            "--global-default=true",
        ],
    );
    assert!(
        err.contains("PriorityClass high is already marked as default. Only one default can exist"),
        "{err}"
    );
    s.kubectl(&["run", "plain", "--image=busybox"]);
    let pod = s.json(&["get", "pod", "plain"]);
    assert_eq!(pod["spec"]["priorityClassName"], "high", "{pod}");
    assert_eq!(pod["spec"]["priority"], 1000, "{pod}");
    assert_eq!(pod["spec"]["preemptionPolicy"], "Never", "{pod}");
    s.with_manifest(
        "apply",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: critical}\nspec:\n  priorityClassName: system-cluster-critical\n  containers: [{name: c, image: busybox}]\n",
    );
    let pod = s.json(&["get", "pod", "critical"]);
    assert_eq!(pod["spec"]["priority"], 2_000_000_000, "{pod}");
    assert_eq!(
        pod["spec"]["preemptionPolicy"], "PreemptLowerPriority",
        "{pod}"
    );
    let err = refused_manifest(
        s,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: lost}\nspec:\n  priorityClassName: nowhere\n  containers: [{name: c, image: busybox}]\n",
    );
    assert!(
        err.contains("pods \"lost\" is forbidden: no PriorityClass with name nowhere was found"),
        "{err}"
    );
    let err = refused_manifest(
        s,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: greedy}\nspec:\n  priorityClassName: low\n  priority: 99\n  containers: [{name: c, image: busybox}]\n",
    );
    assert!(
        err.contains("the integer value of priority (99) must not be provided in pod spec; priority admission controller computed 10 from the given PriorityClass name"),
        "{err}"
    );
    // Without a default class, a pod gets priority 0.
    s.kubectl(&["delete", "pc", "high"]);
    s.kubectl(&["run", "later", "--image=busybox"]);
    let pod = s.json(&["get", "pod", "later"]);
    assert_eq!(pod["spec"]["priority"], 0, "{pod}");
    assert!(pod["spec"].get("priorityClassName").is_none(), "{pod}");
}

/// The Service ranges: the server's own `kubernetes` ServiceCIDR, and the address objects
/// (allocated addresses do not make them yet: the allocator's step).
fn service_cidrs(s: &Server) {
    let cidrs = s.kubectl(&["get", "servicecidrs"]);
    assert!(
        cidrs.contains("kubernetes") && cidrs.contains("10.96.0.0/12"),
        "{cidrs}"
    );
    let default = s.json(&["get", "servicecidr", "kubernetes"]);
    assert_eq!(
        default["status"]["conditions"][0]["type"], "Ready",
        "{default}"
    );
    assert_eq!(
        default["status"]["conditions"][0]["status"], "True",
        "{default}"
    );
    let err = refused_patch(
        s,
        "servicecidr",
        "kubernetes",
        r#"{"spec":{"cidrs":["10.0.0.0/16"]}}"#,
    );
    assert!(
        err.contains("spec.cidrs[0]: Invalid value: \"10.0.0.0/16\": field is immutable"),
        "{err}"
    );
    let err = refused_manifest(
        s,
        "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: odd}\nspec: {cidrs: [10.1.0.1/16]}\n",
    );
    assert!(
        err.contains("spec.cidrs[0]: Invalid value: \"10.1.0.1/16\": must be in canonical form (\"10.1.0.0/16\")"),
        "{err}"
    );
    s.with_manifest(
        "apply",
        "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata: {name: 10.96.100.100}\nspec:\n  parentRef: {group: \"\", resource: services, namespace: default, name: web}\n",
    );
    let ips = s.kubectl(&["get", "ipaddresses"]);
    assert!(ips.contains("services/default/web"), "{ips}");
    let err = refused_manifest(
        s,
        "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata: {name: not-an-ip}\nspec:\n  parentRef: {resource: services, name: web}\n",
    );
    assert!(
        err.contains("metadata.name: Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
        "{err}"
    );
}

/// componentstatuses: this process's controller manager and scheduler, and etcd when the
/// server stores there; every answer carries upstream's deprecation warning.
fn component_statuses(s: &Server, on_etcd: bool) {
    let out = s.kubectl_raw(&["get", "componentstatuses"]);
    let table = String::from_utf8_lossy(&out.stdout);
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{warnings}");
    assert!(
        warnings.contains("v1 ComponentStatus is deprecated in v1.19+"),
        "{warnings}"
    );
    assert!(table.starts_with("NAME"), "{table}");
    for component in ["controller-manager", "scheduler"] {
        let row = table
            .lines()
            .find(|l| l.starts_with(component))
            .unwrap_or_else(|| panic!("no {component}: {table}"));
        assert!(row.contains("Healthy") && row.contains("ok"), "{row}");
    }
    assert_eq!(table.contains("etcd-0"), on_etcd, "{table}");
    let one = s.json(&["get", "cs", "scheduler"]);
    assert_eq!(one["conditions"][0]["type"], "Healthy", "{one}");
    assert_eq!(one["conditions"][0]["status"], "True", "{one}");
}

/// Every cluster IP has its IPAddress, the Service its parent, as upstream's allocator keeps
/// them; it goes with the Service.
fn cluster_ip_addresses(s: &Server) {
    let address = |ip: &str| s.get(&format!("/apis/networking.k8s.io/v1/ipaddresses/{ip}"));
    wait_until(
        "the kubernetes Service's address",
        Duration::from_secs(20),
        || address("10.96.0.1").status == 200,
    );
    s.kubectl(&["create", "service", "clusterip", "addressed", "--tcp=80:80"]);
    let ip = s.kubectl(&[
        "get",
        "service",
        "addressed",
        "-o",
        "jsonpath={.spec.clusterIP}",
    ]);
    wait_until("the Service's address", Duration::from_secs(20), || {
        address(&ip).status == 200
    });
    let held = address(&ip).json();
    assert_eq!(
        held["spec"]["parentRef"],
        json!({"group": "", "resource": "services", "namespace": "default", "name": "addressed"})
    );
    assert_eq!(
        held["metadata"]["labels"],
        json!({"ipaddress.kubernetes.io/ip-family": "IPv4", "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"})
    );
    let listed = s.kubectl(&["get", "ipaddresses"]);
    assert!(listed.contains("services/default/addressed"), "{listed}");
    s.kubectl(&["delete", "service", "addressed"]);
    wait_until("the address released", Duration::from_secs(20), || {
        address(&ip).status == 404
    });
}

fn all(s: &Server) {
    cluster_ip_addresses(s);
    service_cidrs(s);
    ingresses(s);
    classes_policies_and_templates(s);
    priority_classes(s);
}

#[test]
fn networking_scheduling_and_node_kinds_on_embedded() {
    let s = start();
    component_statuses(&s, false);
    all(&s);
}

#[test]
fn networking_scheduling_and_node_kinds_on_etcd() {
    let s = start_on_etcd();
    component_statuses(&s, true);
    all(&s);
}
