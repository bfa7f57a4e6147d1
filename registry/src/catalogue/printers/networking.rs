//! networking.k8s.io: Ingresses, IngressClasses and NetworkPolicies.

use std::collections::BTreeSet;

use serde_json::Value;

use super::format::label_selector;
use super::zero_values::{get, items, text};
use super::{age, name, text_column, TableColumn};

pub(in crate::catalogue) fn ingress_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Class", "The name of the IngressClass resource that should be used for additional configuration", ingress_class),
        text_column("Hosts", "Hosts that incoming requests are matched against before the ingress rule", ingress_hosts),
        text_column("Address", "Address is a list containing ingress points for the load-balancer", ingress_address),
        text_column("Ports", "Ports of TLS configurations that open", ingress_ports),
        age(),
    ]
}

pub(in crate::catalogue) fn ingressclass_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column(
            "Controller",
            "Controller that is responsible for handling this class",
            |c| Value::String(text(c, &["spec", "controller"]).to_string()),
        ),
        text_column(
            "Parameters",
            "A reference to a resource with additional parameters",
            class_parameters,
        ),
        age(),
    ]
}

pub(in crate::catalogue) fn networkpolicy_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Pod-Selector", "podSelector selects the pods to which this NetworkPolicy object applies. The array of rules is applied to any pods selected by this field. An empty selector matches all pods in the policy's namespace. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is optional. If it is not specified, it defaults to an empty selector.", |p| {
            Value::String(label_selector(get(p, &["spec", "podSelector"])))
        }),
        age(),
    ]
}

pub(in crate::catalogue) fn servicecidr_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("CIDRs", "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable.", |c| {
            let cidrs: Vec<&str> = items(c, &["spec", "cidrs"]).iter().filter_map(Value::as_str).collect();
            Value::String(cidrs.join(","))
        }),
        age(),
    ]
}

pub(in crate::catalogue) fn ipaddress_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("ParentRef", "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object.", parent_ref),
        age(),
    ]
}

/// `resource[.group]/[namespace/]name`, lower-cased, or `<none>`.
fn parent_ref(ip: &Value) -> Value {
    let Some(parent) = get(ip, &["spec", "parentRef"]).filter(|p| p.is_object()) else {
        return Value::String("<none>".into());
    };
    let mut shown = match text(parent, &["group"]) {
        "" => text(parent, &["resource"]).to_lowercase(),
        group => format!("{}.{group}", text(parent, &["resource"])).to_lowercase(),
    };
    let namespace = text(parent, &["namespace"]);
    if !namespace.is_empty() {
        shown = format!("{shown}/{namespace}");
    }
    Value::String(format!("{shown}/{}", text(parent, &["name"])))
}

fn ingress_class(ing: &Value) -> Value {
    let class = get(ing, &["spec", "ingressClassName"]).and_then(Value::as_str);
    Value::String(class.unwrap_or("<none>").to_string())
}

/// The first three rule hosts, then how many rules more (upstream's formatHosts); `*` when
/// no rule names a host.
fn ingress_hosts(ing: &Value) -> Value {
    const SHOWN: usize = 3;
    let rules = items(ing, &["spec", "rules"]);
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        // Any rule after the third host counts, named or not.
        if hosts.len() == SHOWN {
            more = true;
            break;
        }
        let host = text(rule, &["host"]);
        if !host.is_empty() {
            hosts.push(host);
        }
    }
    if hosts.is_empty() {
        return Value::String("*".to_string());
    }
    let shown = hosts.join(",");
    if more {
        return Value::String(format!("{shown} + {} more...", rules.len() - SHOWN));
    }
    Value::String(shown)
}

/// The load balancer's addresses, IPs before host names per entry, sorted and unique.
fn ingress_address(ing: &Value) -> Value {
    let addresses: BTreeSet<&str> = items(ing, &["status", "loadBalancer", "ingress"])
        .iter()
        .map(|i| match text(i, &["ip"]) {
            "" => text(i, &["hostname"]),
            ip => ip,
        })
        .filter(|a| !a.is_empty())
        .collect();
    Value::String(addresses.into_iter().collect::<Vec<_>>().join(","))
}

fn ingress_ports(ing: &Value) -> Value {
    let tls = !items(ing, &["spec", "tls"]).is_empty();
    Value::String(if tls { "80, 443" } else { "80" }.to_string())
}

/// `Kind[.group]/name`, or `<none>`.
fn class_parameters(class: &Value) -> Value {
    let Some(params) = get(class, &["spec", "parameters"]).filter(|p| p.is_object()) else {
        return Value::String("<none>".to_string());
    };
    let mut shown = text(params, &["kind"]).to_string();
    if let Some(group) = params.get("apiGroup").and_then(Value::as_str) {
        shown = format!("{shown}.{group}");
    }
    Value::String(format!("{shown}/{}", text(params, &["name"])))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn hosts_show_three_then_the_rules_left() {
        let ing = |hosts: &[&str]| {
            let rules: Vec<Value> = hosts.iter().map(|h| json!({"host": h})).collect();
            json!({"spec": {"rules": rules}})
        };
        assert_eq!(ingress_hosts(&ing(&[])), "*");
        assert_eq!(ingress_hosts(&ing(&[""])), "*");
        assert_eq!(ingress_hosts(&ing(&["a", "b"])), "a,b");
        assert_eq!(ingress_hosts(&ing(&["a", "b", "c"])), "a,b,c");
        assert_eq!(
            ingress_hosts(&ing(&["a", "b", "c", "d", "e"])),
            "a,b,c + 2 more..."
        );
    }

    #[test]
    fn addresses_ports_and_parameters() {
        let ing = json!({
            "spec": {"tls": [{"hosts": ["a"]}]},
            "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example"}, {"ip": "10.0.0.1"}]}}
        });
        assert_eq!(ingress_address(&ing), "10.0.0.1,lb.example");
        assert_eq!(ingress_ports(&ing), "80, 443");
        assert_eq!(ingress_class(&ing), "<none>");
        let class = json!({"spec": {"parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}});
        assert_eq!(
            class_parameters(&class),
            "IngressParameters.k8s.example.com/external-lb"
        );
        assert_eq!(class_parameters(&json!({})), "<none>");
    }
}
