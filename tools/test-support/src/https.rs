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
    /// Empty when the body was only counted.
    pub body: Vec<u8>,
    /// The body's length in bytes, kept or not.
    pub length: u64,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (null when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The body as text, for messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A loopback connection to `port`, without Nagle's delay, reads waiting 90 s at most.
pub(crate) fn tcp(port: u16) -> std::io::Result<TcpStream> {
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

    /// One JSON request on the connection; the whole answer (chunked bodies joined).
    pub fn exchange(&mut self, method: &str, path: &str, body: &[u8]) -> std::io::Result<Reply> {
        self.request(method, path, "application/json", body, true)
    }

    /// [`exchange`](Self::exchange) with another `Content-Type` (a merge patch, say).
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> std::io::Result<Reply> {
        self.request(method, path, content_type, body, true)
    }

    /// [`exchange`](Self::exchange) whose 2xx body is read and counted ([`Reply::length`])
    /// but not kept: a list of megabytes measured, not held (an error's body is kept: it
    /// says why).
    pub fn exchange_counted(&mut self, method: &str, path: &str) -> std::io::Result<Reply> {
        self.request(method, path, "application/json", b"", false)
    }

    fn request(
        &mut self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
        keep: bool,
    ) -> std::io::Result<Reply> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n{}Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
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
            .and_then(|(_, v)| v.parse::<u64>().ok());
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
            length: 0,
        };
        let keep = keep || !(200..300).contains(&status);
        if chunked {
            loop {
                self.read_line(&mut line)?;
                let size = line.trim().split(';').next().unwrap_or_default();
                let size = u64::from_str_radix(size, 16).map_err(std::io::Error::other)?;
                if size == 0 {
                    // No trailers are sent: the empty line that ends the body.
                    self.read_line(&mut line)?;
                    break;
                }
                self.body(size, keep, &mut reply)?;
                let mut crlf = [0u8; 2];
                self.stream.read_exact(&mut crlf)?;
            }
        } else if let Some(length) = length {
            self.body(length, keep, &mut reply)?;
        }
        Ok(reply)
    }

    /// `size` bytes of the body, kept in the reply or dropped, and counted.
    fn body(&mut self, size: u64, keep: bool, reply: &mut Reply) -> std::io::Result<()> {
        let mut part = (&mut self.stream).take(size);
        let read = if keep {
            part.read_to_end(&mut reply.body)? as u64
        } else {
            std::io::copy(&mut part, &mut std::io::sink())?
        };
        if read < size {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        reply.length += read;
        Ok(())
    }

    /// How long one read may wait (90 s unless set; `None`: for ever).
    pub fn set_read_timeout(&mut self, limit: Option<Duration>) -> std::io::Result<()> {
        match self.stream.get_ref() {
            Stream::Plain(s) => s.set_read_timeout(limit),
            Stream::Tls(s) => s.sock.set_read_timeout(limit),
        }
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

/// A kept-alive connection to the plain loopback port that is opened again when the server
/// closed it, every failure a message: for clients that count failures rather than stop on
/// them (the soak).
pub struct Redial {
    port: u16,
    read_timeout: Duration,
    connection: Option<Connection>,
}

impl Redial {
    /// Nothing is connected until the first request; each read waits `read_timeout` at most.
    pub fn new(port: u16, read_timeout: Duration) -> Self {
        Self {
            port,
            read_timeout,
            connection: None,
        }
    }

    /// One request; a kept connection the server closed meanwhile fails at once, so the
    /// request is tried once more on a new one.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> Result<Reply, String> {
        let reused = self.connection.is_some();
        let request = |c: &mut Connection| c.send(method, path, content_type, body);
        match self.send_once(request) {
            Err(_) if reused => self.send_once(request),
            other => other,
        }
    }

    /// `request` on the kept connection (opened first when there is none), which is dropped
    /// when it failed or the server said it closes it.
    fn send_once(
        &mut self,
        request: impl FnOnce(&mut Connection) -> std::io::Result<Reply>,
    ) -> Result<Reply, String> {
        let connection = match &mut self.connection {
            Some(c) => c,
            None => {
                let mut c = Connection::plain(self.port).map_err(|e| format!("connect: {e}"))?;
                c.set_read_timeout(Some(self.read_timeout))
                    .map_err(|e| format!("read timeout: {e}"))?;
                self.connection.insert(c)
            }
        };
        let result = request(connection);
        let closing = result.as_ref().is_ok_and(|r| {
            r.header("connection")
                .is_some_and(|v| v.eq_ignore_ascii_case("close"))
        });
        if result.is_err() || closing {
            self.connection = None;
        }
        result.map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::time::Duration;

    use super::{Connection, Redial};

    /// A loopback server answering each request on a connection with `answers`, in turn, then
    /// closing it; its port.
    fn serve(answers: &'static [&'static str]) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let mut reader = BufReader::new(stream);
                for answer in answers {
                    // The request's head (the tests send no body).
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let _ = reader.get_mut().write_all(answer.as_bytes());
                }
            }
        });
        port
    }

    const CHUNKED: &str = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=1\r\n world\r\n0\r\n\r\n";
    const REFUSED: &str =
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 4\r\n\r\nbusy";

    #[test]
    fn chunked_bodies_are_joined_or_only_counted() {
        let port = serve(&[CHUNKED, CHUNKED, REFUSED]);
        let mut c = Connection::plain(port).expect("connect");
        let kept = c.exchange("GET", "/", b"").expect("kept");
        assert_eq!(
            (kept.status, kept.text(), kept.length),
            (200, "hello world".into(), 11)
        );
        let counted = c.exchange_counted("GET", "/").expect("counted");
        assert_eq!((counted.status, counted.length), (200, 11));
        assert!(counted.body.is_empty(), "a counted 2xx body is not kept");
        let refused = c.exchange_counted("GET", "/").expect("refused");
        assert_eq!(refused.status, 429);
        assert_eq!(refused.header("retry-after"), Some("1"));
        assert_eq!(refused.text(), "busy", "an error's body is kept");
    }

    #[test]
    fn redial_opens_a_new_connection_when_the_server_closed_one() {
        // One answer per connection: the server closes it after each.
        let port = serve(&[CHUNKED]);
        let mut client = Redial::new(port, Duration::from_secs(5));
        for _ in 0..3 {
            let reply = client
                .send("GET", "/", "application/json", b"")
                .expect("answer");
            assert_eq!(reply.text(), "hello world");
        }
    }

    #[test]
    fn redial_says_what_failed() {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a port")
            .port();
        let said = Redial::new(port, Duration::from_secs(1))
            .send("GET", "/", "application/json", b"")
            .err()
            .unwrap_or_default();
        assert!(said.starts_with("connect: "), "{said}");
    }
}
