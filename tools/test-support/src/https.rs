//! A blocking HTTP/1.1 keep-alive client, over TLS with a bearer token or over the plain
//! loopback port, for tests and benchmarks that measure latency or drive many connections at
//! once (curl and kubectl start a process a request, and their start-up would be the figure).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// The socket under a [`Connection`].
enum Stream {
    Plain(TcpStream),
    Tls(Box<Tls>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(s) => s.read(buf),
            Self::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(s) => s.write(buf),
            Self::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Plain(s) => s.flush(),
            Self::Tls(s) => s.flush(),
        }
    }
}

/// One kept-alive connection to the server.
pub struct Connection {
    stream: BufReader<Stream>,
    /// The `Authorization` header line, when there is a token.
    authorization: String,
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

    /// The body as text, for messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn tcp(port: u16) -> std::io::Result<TcpStream> {
    let tcp = TcpStream::connect(("127.0.0.1", port))?;
    tcp.set_nodelay(true)?;
    tcp.set_read_timeout(Some(Duration::from_secs(90)))?;
    Ok(tcp)
}

/// Large bodies (lists of megabytes) are read in few system calls.
const BUFFER: usize = 1 << 16;

impl Connection {
    /// Connects to the secure `port` on loopback, trusting the CA certificate in `ca`, and
    /// sends `token` as a bearer token with every request.
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
        let tls = rustls::StreamOwned::new(connection, tcp(port)?);
        Ok(Self {
            stream: BufReader::with_capacity(BUFFER, Stream::Tls(Box::new(tls))),
            authorization: format!("Authorization: Bearer {token}\r\n"),
        })
    }

    /// Connects to the plain loopback `port` (no authentication: the privileged loopback
    /// user).
    pub fn plain(port: u16) -> std::io::Result<Self> {
        Ok(Self {
            stream: BufReader::with_capacity(BUFFER, Stream::Plain(tcp(port)?)),
            authorization: String::new(),
        })
    }

    /// One request on the connection; the whole answer (chunked bodies joined).
    pub fn exchange(&mut self, method: &str, path: &str, body: &[u8]) -> std::io::Result<Reply> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n{}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.authorization,
            body.len()
        );
        let out = self.stream.get_mut();
        out.write_all(head.as_bytes())?;
        out.write_all(body)?;
        out.flush()?;
        let mut line = String::new();
        self.read_line(&mut line)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("no status line: {line:?}")))?;
        let mut headers = Vec::new();
        loop {
            self.read_line(&mut line)?;
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
                self.read_line(&mut line)?;
                let size = line.trim().split(';').next().unwrap_or_default();
                let size = usize::from_str_radix(size, 16).map_err(std::io::Error::other)?;
                if size == 0 {
                    // No trailers are sent: the empty line that ends the body.
                    self.read_line(&mut line)?;
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

    /// The next line into `line` (cleared first); a closed connection is an error.
    fn read_line(&mut self, line: &mut String) -> std::io::Result<()> {
        line.clear();
        if self.stream.read_line(line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }
}
