//! The kubeconfig written at start, so `KUBECONFIG=<path> kubectl ...` works with no setup.

use std::net::SocketAddr;
use std::path::Path;

/// kubectl reaches a wildcard bind address through loopback.
fn server_url(addr: SocketAddr) -> String {
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_string(),
        ip if ip.is_unspecified() => "[::1]".to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    format!("http://{host}:{}", addr.port())
}

pub fn render(addr: SocketAddr) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: apiserver-rs
  cluster:
    server: {}
contexts:
- name: apiserver-rs
  context:
    cluster: apiserver-rs
    user: apiserver-rs
    namespace: default
current-context: apiserver-rs
users:
- name: apiserver-rs
  user: {{}}
",
        server_url(addr)
    )
}

pub fn write(path: &Path, addr: SocketAddr) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, render(addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_at_the_listener() {
        let text = render("0.0.0.0:8080".parse().expect("addr"));
        assert!(text.contains("server: http://127.0.0.1:8080"));
        assert!(render("[::1]:9".parse().expect("addr")).contains("server: http://[::1]:9"));
    }
}
