//! The kubeconfig written at start, so `KUBECONFIG=<path> kubectl ...` works with no setup:
//! over HTTPS with the server's CA and the admin client certificate when the secure port
//! serves (kubectl then verifies the server, no insecure flag), else over the loopback HTTP
//! port. Written 0600: it holds a private key.

use std::net::SocketAddr;
use std::path::Path;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// How kubectl is to trust the server and prove who it is.
#[derive(Debug, Clone, Copy)]
pub struct Tls<'a> {
    /// PEM certificates that verify the server.
    pub ca_pem: &'a str,
    /// Client certificate and key (PEM), if any.
    pub client: Option<(&'a str, &'a str)>,
}

/// kubectl reaches a wildcard bind address through loopback.
fn server_url(addr: SocketAddr, https: bool) -> String {
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_string(),
        ip if ip.is_unspecified() => "[::1]".to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    let scheme = if https { "https" } else { "http" };
    format!("{scheme}://{host}:{}", addr.port())
}

pub fn render(addr: SocketAddr, tls: Option<Tls<'_>>) -> String {
    let server = server_url(addr, tls.is_some());
    let authority = tls
        .map(|t| {
            format!(
                "\n    certificate-authority-data: {}",
                STANDARD.encode(t.ca_pem)
            )
        })
        .unwrap_or_default();
    let user = match tls.and_then(|t| t.client) {
        Some((cert, key)) => format!(
            "\n    client-certificate-data: {}\n    client-key-data: {}",
            STANDARD.encode(cert),
            STANDARD.encode(key)
        ),
        None => " {}".to_string(),
    };
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: apiserver-rs
  cluster:
    server: {server}{authority}
contexts:
- name: apiserver-rs
  context:
    cluster: apiserver-rs
    user: apiserver-rs
    namespace: default
current-context: apiserver-rs
users:
- name: apiserver-rs
  user:{user}
"
    )
}

pub fn write(path: &Path, addr: SocketAddr, tls: Option<Tls<'_>>) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    crate::tls::certs::write_file(path, &render(addr, tls), true).map_err(|e| match e {
        crate::tls::certs::CertError::Io { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_at_the_listener() {
        let text = render("0.0.0.0:8080".parse().expect("addr"), None);
        assert!(text.contains("server: http://127.0.0.1:8080"));
        assert!(text.contains("user: {}"));
        assert!(render("[::1]:9".parse().expect("addr"), None).contains("server: http://[::1]:9"));
    }

    #[test]
    fn carries_the_ca_and_client_certificate() {
        let tls = Tls {
            ca_pem: "CA",
            client: Some(("CERT", "KEY")),
        };
        let text = render("0.0.0.0:6443".parse().expect("addr"), Some(tls));
        assert!(text.contains("server: https://127.0.0.1:6443"));
        assert!(text.contains(&format!(
            "certificate-authority-data: {}",
            STANDARD.encode("CA")
        )));
        assert!(text.contains(&format!(
            "client-certificate-data: {}",
            STANDARD.encode("CERT")
        )));
        assert!(text.contains(&format!("client-key-data: {}", STANDARD.encode("KEY"))));
        let parsed: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("yaml");
        assert_eq!(
            parsed["users"][0]["user"]["client-key-data"].as_str(),
            Some(STANDARD.encode("KEY").as_str())
        );
    }
}
