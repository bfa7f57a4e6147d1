//! Dialing a backend (a node's kubelet, a pod's port) as kube-apiserver's Go dialer does,
//! failing with its words (`dial tcp 10.244.0.5:80: connect: connection refused`), so a
//! client reads what it would read from kube-apiserver.
//!
//! Pod addresses belong to the simulated pod network (the nodes' podCIDRs), which this host
//! does not route: the simulated runtime runs no processes, so no pod port has a listener,
//! and a dial there is refused as a real pod's kernel refuses a port nothing listens on.
//! Every other address (a node's InternalIP, 127.1.0.N) is dialed for real.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use kubelet::network::Ipv4Cidr;
use registry::options::ListOptions;
use registry::Registry;
use tokio::net::TcpStream;

/// kube-apiserver's dialer timeout for kubelets and proxied backends.
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// A failed dial, displayed as Go's net.OpError.
#[derive(Debug, PartialEq, Eq)]
pub struct DialError(String);

impl std::fmt::Display for DialError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `host:port` as Go's net.JoinHostPort writes it (IPv6 in brackets).
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The simulated pod network: every node's podCIDRs.
pub struct PodNetwork(Vec<Ipv4Cidr>);

impl PodNetwork {
    pub async fn of(registry: &Registry) -> Self {
        let Some(nodes) = registry.store("", "v1", "nodes") else {
            return Self(Vec::new());
        };
        let list = match nodes.list(None, &ListOptions::default()).await {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!(error = %e, "listing nodes for their pod CIDRs");
                return Self(Vec::new());
            }
        };
        let cidrs = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|node| node["spec"]["podCIDRs"].as_array().into_iter().flatten())
            .filter_map(|cidr| cidr.as_str()?.parse().ok())
            .collect();
        Self(cidrs)
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(v4) => self.0.iter().any(|cidr| cidr.contains(v4)),
            IpAddr::V6(_) => false,
        }
    }
}

/// Opens a TCP connection to `host:port` (`host` an IP address, or a name to resolve).
pub async fn tcp(host: &str, port: u16, network: &PodNetwork) -> Result<TcpStream, DialError> {
    let addr = join_host_port(host, port);
    let failed = |err: &std::io::Error| DialError(format!("dial tcp {addr}: {}", go_error(err)));
    let target: SocketAddr = match host.parse::<IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, port),
        Err(_) => match tokio::net::lookup_host((host, port)).await {
            Ok(mut found) => match found.next() {
                Some(target) => target,
                None => return Err(no_such_host(host)),
            },
            Err(_) => return Err(no_such_host(host)),
        },
    };
    if network.contains(target.ip()) {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        return Err(failed(&refused));
    }
    match tokio::time::timeout(DIAL_TIMEOUT, TcpStream::connect(target)).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => Err(failed(&e)),
        Err(_) => Err(DialError(format!("dial tcp {addr}: i/o timeout"))),
    }
}

fn no_such_host(host: &str) -> DialError {
    DialError(format!("dial tcp: lookup {host}: no such host"))
}

/// The syscall error of a failed connect as Go words it: `connect: ` and the lowercase
/// strerror text (`connection refused`, `no route to host`, ...).
fn go_error(err: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let text = match err.kind() {
        ErrorKind::ConnectionRefused => "connection refused".to_string(),
        ErrorKind::HostUnreachable => "no route to host".to_string(),
        ErrorKind::NetworkUnreachable => "network is unreachable".to_string(),
        ErrorKind::TimedOut => "connection timed out".to_string(),
        ErrorKind::AddrNotAvailable => "cannot assign requested address".to_string(),
        _ => {
            let full = err.to_string();
            let text = full.split(" (os error").next().unwrap_or_default();
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => full,
            }
        }
    };
    format!("connect: {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refused_dial_reads_as_go_writes_it() {
        // A port just released on loopback: nothing listens there.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let err = tcp("127.0.0.1", port, &PodNetwork(Vec::new()))
            .await
            .expect_err("refused");
        assert_eq!(
            err.to_string(),
            format!("dial tcp 127.0.0.1:{port}: connect: connection refused")
        );
    }

    #[tokio::test]
    async fn the_simulated_pod_network_has_no_listeners() {
        let network = PodNetwork(vec!["10.244.0.0/24".parse().expect("cidr")]);
        let err = tcp("10.244.0.7", 8080, &network)
            .await
            .expect_err("no pod listens");
        assert_eq!(
            err.to_string(),
            "dial tcp 10.244.0.7:8080: connect: connection refused"
        );
        assert_eq!(join_host_port("fd00::1", 80), "[fd00::1]:80");
    }
}
