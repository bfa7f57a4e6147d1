//! Upstream's messages for the networking kinds' validation and their defaults.

use serde_json::{json, Value};

use super::{IngressClassStrategy, IngressStrategy, NetworkPolicyStrategy};
use crate::strategy::Strategy;

fn messages(causes: Vec<crate::error::Cause>) -> Vec<String> {
    causes.iter().map(|c| c.full_message()).collect()
}

fn ingress(spec: Value) -> Value {
    json!({"metadata": {"name": "i"}, "spec": spec})
}

#[test]
fn ingress_backends_name_a_service_port_or_a_resource() {
    let backend =
        |b: Value| messages(IngressStrategy.validate(&ingress(json!({"defaultBackend": b}))));
    assert!(backend(json!({"service": {"name": "web", "port": {"number": 80}}})).is_empty());
    assert!(backend(json!({"service": {"name": "web", "port": {"name": "http"}}})).is_empty());
    assert!(backend(
        json!({"resource": {"apiGroup": "k8s.example.com", "kind": "Bucket", "name": "b"}})
    )
    .is_empty());
    assert_eq!(
        backend(json!({})),
        ["spec.defaultBackend: Invalid value: \"\": resource or service backend is required"]
    );
    assert_eq!(
        backend(json!({"service": {"name": "web", "port": {}}, "resource": {"kind": "B", "name": "b"}})),
        ["spec.defaultBackend: Invalid value: \"\": cannot set both resource and service backends"]
    );
    assert_eq!(
        backend(json!({"service": {"name": "web", "port": {"name": "http", "number": 80}}})),
        ["spec.defaultBackend: Invalid value: \"\": cannot set both port name & port number"]
    );
    assert_eq!(
        backend(json!({"service": {"name": "", "port": {}}})),
        [
            "spec.defaultBackend.service.name: Required value",
            "spec.defaultBackend: Required value: port name or number is required"
        ]
    );
    assert_eq!(
        backend(json!({"service": {"name": "web", "port": {"number": 70000}}})),
        ["spec.defaultBackend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive"]
    );
    assert_eq!(
        backend(json!({"resource": {"name": "a/b"}})),
        [
            "spec.defaultBackend.resource.kind: Required value",
            "spec.defaultBackend.resource.name: Invalid value: \"a/b\": may not contain '/'"
        ]
    );
}

#[test]
fn ingress_rules_hosts_and_paths() {
    let rules =
        |rules: Value| messages(IngressStrategy.validate(&ingress(json!({"rules": rules}))));
    let path = |p: Value| json!([{"http": {"paths": [p]}}]);
    let service = json!({"service": {"name": "web", "port": {"number": 80}}});
    assert!(rules(json!([{"host": "*.example.com"}])).is_empty());
    assert_eq!(
        rules(json!([{"host": "10.0.0.1"}])),
        ["spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address"]
    );
    assert_eq!(rules(json!([{"host": "a.*.com"}])).len(), 1);
    assert_eq!(
        rules(json!([{"http": {"paths": []}}])),
        ["spec.rules[0].http.paths: Required value"]
    );
    assert_eq!(
        rules(path(json!({"path": "/", "backend": service}))),
        ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"]
    );
    assert_eq!(
        rules(path(
            json!({"path": "/a/..", "pathType": "Prefix", "backend": service})
        )),
        ["spec.rules[0].http.paths[0].path: Invalid value: \"/a/..\": cannot end with '/..'"]
    );
    assert_eq!(
        rules(path(json!({"path": "/", "pathType": "Regex", "backend": service}))),
        ["spec.rules[0].http.paths[0].pathType: Unsupported value: \"Regex\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""]
    );
    assert!(rules(path(
        json!({"pathType": "ImplementationSpecific", "backend": service})
    ))
    .is_empty());
    assert_eq!(
        messages(IngressStrategy.validate(&ingress(json!({"rules": []})))),
        ["spec: Invalid value: []networking.IngressRule{}: either `defaultBackend` or `rules` must be specified"]
    );
    // The class annotation is checked on create only.
    let both = json!({"metadata": {"name": "i", "annotations": {"kubernetes.io/ingress.class": "a"}},
        "spec": {"ingressClassName": "b", "defaultBackend": service}});
    assert_eq!(IngressStrategy.validate(&both).len(), 1);
    assert!(IngressStrategy.validate_update(&both, &both).is_empty());
}

#[test]
fn ingress_status_addresses() {
    let status = json!({"status": {"loadBalancer": {"ingress": [
        {"ip": "10.0.0.1"}, {"ip": "nope"}, {"hostname": "10.0.0.2"}, {"hostname": "lb.example.com"}
    ]}}});
    assert_eq!(
        messages(IngressStrategy.validate_status_update(&status, &json!({}))),
        [
            "status.loadBalancer.ingress[1].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "status.loadBalancer.ingress[2].hostname: Invalid value: \"10.0.0.2\": must be a DNS name, not an IP address"
        ]
    );
}

#[test]
fn ingress_class_parameters_and_scope() {
    let class = |params: Value| {
        let mut c = json!({"spec": {"controller": "example.com/ingress", "parameters": params}});
        IngressClassStrategy.prepare_for_create(&mut c);
        (c.clone(), messages(IngressClassStrategy.validate(&c)))
    };
    let (defaulted, problems) = class(json!({"kind": "P", "name": "p"}));
    assert_eq!(defaulted["spec"]["parameters"]["scope"], "Cluster");
    assert!(problems.is_empty());
    assert_eq!(
        class(json!({"kind": "P", "name": "p", "scope": "Namespace"})).1,
        ["spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"]
    );
    assert_eq!(
        class(json!({"kind": "P", "name": "p", "scope": "Cluster", "namespace": "x"})).1,
        ["spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"]
    );
    assert_eq!(
        class(json!({"kind": "P", "name": "p", "scope": "Global"})).1,
        ["spec.parameters.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespace\""]
    );
    let long = json!({"spec": {"controller": format!("example.com/{}", "a".repeat(250))}});
    assert_eq!(
        messages(IngressClassStrategy.validate(&long)),
        ["spec.controller: Too long: may not be more than 250 bytes"]
    );
    assert_eq!(
        messages(IngressClassStrategy.validate(&json!({"spec": {}}))),
        ["spec.controller: Required value"]
    );
}

#[test]
fn network_policy_defaults_and_rules() {
    let mut policy = json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}});
    NetworkPolicyStrategy.prepare_for_create(&mut policy);
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    assert_eq!(policy["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
    let spec = |spec: Value| messages(NetworkPolicyStrategy.validate(&json!({"spec": spec})));
    assert_eq!(
        spec(json!({"ingress": [{"ports": [{"port": 90, "endPort": 80, "protocol": "ICMP"}]}]})),
        [
            "spec.ingress[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\"",
            "spec.ingress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal to `port`"
        ]
    );
    assert_eq!(
        spec(json!({"egress": [{"ports": [{"endPort": 80}], "to": [{}]}]})),
        [
            "spec.egress[0].ports[0].endPort: Invalid value: 80: may not be specified when `port` is not specified",
            "spec.egress[0].to[0]: Required value: must specify a peer"
        ]
    );
    assert_eq!(
        spec(
            json!({"ingress": [{"from": [{"podSelector": {}, "ipBlock": {"cidr": "10.0.0.0/8"}}]}]})
        ),
        ["spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer"]
    );
    assert_eq!(
        spec(json!({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0"}}]}]})),
        ["spec.ingress[0].from[0].ipBlock.cidr: Invalid value: \"10.0.0.0\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    );
    assert_eq!(
        spec(json!({"policyTypes": ["Ingress", "Sideways"]})),
        ["spec.policyTypes[1]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\""]
    );
    // A CIDR already stored stays acceptable on update.
    let old = json!({"spec": {"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0"}}]}]}});
    assert!(NetworkPolicyStrategy.validate_update(&old, &old).is_empty());
}
