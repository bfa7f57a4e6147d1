//! Services and endpoints.

use std::collections::BTreeSet;

use serde_json::Value;

use super::format::labels;
use super::zero_values::{get, int, items, object, text};
use super::{age, name, text_column, wide, TableColumn};

pub(in crate::catalogue) fn service_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Type", "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types", service_type),
        text_column("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies", cluster_ip),
        text_column("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.", external_ip),
        text_column("Port(s)", "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies", ports),
        age(),
        wide(text_column("Selector", "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/", service_selector)),
    ]
}

pub(in crate::catalogue) fn endpoints_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("Endpoints", "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.", endpoints),
        age(),
    ]
}

/// spec.type; defaulting makes an unset type ClusterIP.
fn kind(svc: &Value) -> &str {
    match get(svc, &["spec", "type"]).and_then(Value::as_str) {
        Some(t) => t,
        None => "ClusterIP",
    }
}

fn service_type(svc: &Value) -> Value {
    Value::String(kind(svc).to_string())
}

fn cluster_ip(svc: &Value) -> Value {
    let first = items(svc, &["spec", "clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .unwrap_or("");
    let ip = if first.is_empty() {
        text(svc, &["spec", "clusterIP"])
    } else {
        first
    };
    Value::String(if ip.is_empty() { "<none>" } else { ip }.to_string())
}

fn external_ip(svc: &Value) -> Value {
    let external: Vec<&str> = items(svc, &["spec", "externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let shown = match kind(svc) {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            // The server prints the wide form, which does not clip the ingress list.
            let ingress: BTreeSet<&str> = items(svc, &["status", "loadBalancer", "ingress"])
                .iter()
                .map(|i| match text(i, &["ip"]) {
                    "" => text(i, &["hostname"]),
                    ip => ip,
                })
                .filter(|s| !s.is_empty())
                .collect();
            let all: Vec<&str> = ingress.into_iter().chain(external).collect();
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => text(svc, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    };
    Value::String(shown)
}

fn ports(svc: &Value) -> Value {
    let shown: Vec<String> = items(svc, &["spec", "ports"])
        .iter()
        .map(|p| {
            let port = int(p, &["port"]).unwrap_or(0);
            let protocol = match text(p, &["protocol"]) {
                "" => "TCP",
                proto => proto,
            };
            match int(p, &["nodePort"]).unwrap_or(0) {
                node_port if node_port > 0 => format!("{port}:{node_port}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    let joined = shown.join(",");
    Value::String(if joined.is_empty() {
        "<none>".to_string()
    } else {
        joined
    })
}

fn service_selector(svc: &Value) -> Value {
    Value::String(labels(object(svc, &["spec", "selector"])))
}

/// Up to three `ip:port` endpoints, then how many more there are.
fn endpoints(obj: &Value) -> Value {
    const SHOWN: usize = 3;
    let subsets = items(obj, &["subsets"]);
    if subsets.is_empty() {
        return Value::String("<none>".to_string());
    }
    let mut list: Vec<String> = Vec::new();
    let mut total = 0;
    for subset in subsets {
        let addresses = items(subset, &["addresses"]);
        let subset_ports = items(subset, &["ports"]);
        let ips = addresses.iter().map(|a| text(a, &["ip"]));
        if subset_ports.is_empty() {
            // Headless services may publish addresses without ports.
            total += addresses.len();
            list.extend(ips.map(str::to_string).take(SHOWN - list.len()));
            continue;
        }
        for port in subset_ports {
            total += addresses.len();
            let number = int(port, &["port"]).unwrap_or(0);
            let joined = ips.clone().map(|ip| join_host_port(ip, number));
            list.extend(joined.take(SHOWN - list.len()));
        }
    }
    let mut shown = list.join(",");
    if total > SHOWN {
        shown = format!("{shown} + {} more...", total - SHOWN);
    }
    Value::String(shown)
}

pub(in crate::catalogue) fn endpointslice_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column("AddressType", "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics are defined for the \"FQDN\" type.", |s| Value::String(text(s, &["addressType"]).to_string())),
        text_column("Ports", "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list.", slice_ports),
        text_column("Endpoints", "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.", slice_endpoints),
        age(),
    ]
}

/// Up to three items, then how many more (upstream's formatDiscoveryPorts / Endpoints);
/// `<unset>` for none.
fn three_then_count(all: Vec<String>) -> Value {
    const SHOWN: usize = 3;
    if all.is_empty() {
        return Value::String("<unset>".to_string());
    }
    let mut shown = all[..all.len().min(SHOWN)].join(",");
    if all.len() > SHOWN {
        shown = format!("{shown} + {} more...", all.len() - SHOWN);
    }
    Value::String(shown)
}

fn slice_ports(slice: &Value) -> Value {
    let ports = items(slice, &["ports"]).iter();
    three_then_count(
        ports
            .map(|p| int(p, &["port"]).map_or("<unset>".into(), |n| n.to_string()))
            .collect(),
    )
}

fn slice_endpoints(slice: &Value) -> Value {
    let endpoints = items(slice, &["endpoints"]).iter();
    three_then_count(
        endpoints
            .flat_map(|e| items(e, &["addresses"]).iter())
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
    )
}

/// net.JoinHostPort: IPv6 hosts get brackets.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn cluster_ip_service() {
        let svc = json!({"spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"], "selector": {"k8s-app": "kube-dns"},
            "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"},
                      {"port": 9153}]}});
        assert_eq!(service_type(&svc), "ClusterIP");
        assert_eq!(cluster_ip(&svc), "10.96.0.10");
        assert_eq!(external_ip(&svc), "<none>");
        assert_eq!(ports(&svc), "53/UDP,53/TCP,9153/TCP");
        assert_eq!(service_selector(&svc), "k8s-app=kube-dns");
    }

    #[test]
    fn load_balancer_and_node_port_services() {
        let mut svc = json!({"spec": {"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"],
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}});
        assert_eq!(external_ip(&svc), "<pending>");
        assert_eq!(ports(&svc), "80:30080/TCP");
        svc["status"] = json!({"loadBalancer": {"ingress": [
            {"ip": "203.0.113.9"}, {"hostname": "lb.example.com"}, {"ip": "203.0.113.9"}]}});
        svc["spec"]["externalIPs"] = json!(["198.51.100.1"]);
        assert_eq!(external_ip(&svc), "203.0.113.9,lb.example.com,198.51.100.1");
        let external = json!({"spec": {"type": "ExternalName", "externalName": "db.example.com"}});
        assert_eq!(external_ip(&external), "db.example.com");
        assert_eq!(cluster_ip(&external), "<none>");
        assert_eq!(ports(&external), "<none>");
    }

    #[test]
    fn endpoints_list_three_then_count() {
        let ep = json!({"subsets": [{
            "addresses": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.2"}, {"ip": "fd00::3"}],
            "ports": [{"port": 80}, {"port": 443}],
        }]});
        assert_eq!(
            endpoints(&ep),
            "10.1.0.1:80,10.1.0.2:80,[fd00::3]:80 + 3 more..."
        );
        assert_eq!(endpoints(&json!({})), "<none>");
        let headless = json!({"subsets": [{"addresses": [{"ip": "10.1.0.1"}]}]});
        assert_eq!(endpoints(&headless), "10.1.0.1");
    }
}
