//! A blocking HTTP/1.1 keep-alive client over TLS with a bearer token, for tests that measure
//! latency or drive many connections at once (curl and kubectl start a process a request).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// One kept-alive connection to the secure port.
pub struct Connection {
    stream: BufReader<Tls>,
    token: String,
}

/// An answer: status, headers (names lower-cased) and body.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Connection {
    /// Connects to `port`, trusting the CA certificate in `ca`.
    pub fn open(ca: &Path, port: u16, token: &str) -> std::io::Result<Self> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(ca).map_err(std::io::Error::other)? {
            roots
                .add(cert.map_err(std::io::Error::other)?)
                .map_err(std::io::Error::other)?;
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = ServerName::try_from("127.0.0.1").map_err(std::io::Error::other)?;
        let connection =
            rustls::ClientConnection::new(Arc::new(config), name).map_err(std::io::Error::other)?;
        let tcp = TcpStream::connect(("127.0.0.1", port))?;
        tcp.set_nodelay(true)?;
        tcp.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Self {
            stream: BufReader::new(rustls::StreamOwned::new(connection, tcp)),
            token: token.to_string(),
        })
    }

    /// One request on the connection; the whole answer (chunked bodies joined).
    pub fn exchange(&mut self, method: &str, path: &str, body: &[u8]) -> std::io::Result<Reply> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.token,
            body.len()
        );
        let out = self.stream.get_mut();
        out.write_all(head.as_bytes())?;
        out.write_all(body)?;
        out.flush()?;
        let mut line = String::new();
        self.stream.read_line(&mut line)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("no status line: {line:?}")))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.stream.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
        }
        let length = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok());
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.stream.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim(), 16).map_err(std::io::Error::other)?;
                if size == 0 {
                    line.clear();
                    self.stream.read_line(&mut line)?;
                    break;
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.stream.read_exact(&mut body[start..])?;
                let mut crlf = [0u8; 2];
                self.stream.read_exact(&mut crlf)?;
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            self.stream.read_exact(&mut body)?;
        }
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}
