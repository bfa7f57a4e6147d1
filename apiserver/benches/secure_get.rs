//! What secure serving costs: the same GET of one ConfigMap, N times over one keep-alive
//! connection, first over the loopback plain HTTP port (no authentication, the
//! privileged loopback user), then over HTTPS with a bearer token (static token file) whose
//! user RBAC allows the read through a RoleBinding. Prints the server process's CPU time
//! (user + system, from /proc/<pid>/stat) per request for each, and their ratio (goal
//! <= 1.3).
//!
//! `cargo bench -p apiserver --bench secure_get` (N from `SECURE_GET_REQUESTS`, default
//! 20000; the server binary from `APISERVER_BIN`, default the one cargo built).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

const PATH: &str = "/api/v1/namespaces/default/configmaps/bench";
const TOKEN: &str = "bench-token";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One request on a keep-alive connection; the status and body.
fn exchange<S: Read + Write>(
    stream: &mut BufReader<S>,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (u16, String) {
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream
        .get_mut()
        .write_all(request.as_bytes())
        .expect("write request");
    let mut line = String::new();
    stream.read_line(&mut line).expect("status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut length = 0usize;
    loop {
        line.clear();
        stream.read_line(&mut line).expect("header");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().expect("content-length");
            }
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).expect("body");
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The server's user + system CPU time so far.
fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc stat");
    // Fields after the command (which may hold spaces): state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    Duration::from_secs_f64(ticks as f64 / clock_ticks() as f64)
}

fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

struct Measured {
    cpu_per_request: Duration,
    wall_per_request: Duration,
}

fn measure<S: Read + Write>(pid: u32, stream: S, headers: &str, n: usize) -> Measured {
    let mut stream = BufReader::new(stream);
    for _ in 0..n / 10 {
        let (status, body) = exchange(&mut stream, "GET", PATH, headers, "");
        assert_eq!(status, 200, "{body}");
    }
    let (cpu_before, wall_before) = (cpu(pid), Instant::now());
    for _ in 0..n {
        let (status, body) = exchange(&mut stream, "GET", PATH, headers, "");
        assert_eq!(status, 200, "{body}");
    }
    Measured {
        cpu_per_request: (cpu(pid) - cpu_before) / n as u32,
        wall_per_request: wall_before.elapsed() / n as u32,
    }
}

fn tls_stream(ca: &Path, port: u16) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).expect("CA file") {
        roots
            .add(cert.expect("CA certificate"))
            .expect("trusted CA");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from("127.0.0.1").expect("server name");
    let connection = rustls::ClientConnection::new(Arc::new(config), name).expect("TLS connection");
    let tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect TLS");
    tcp.set_nodelay(true).expect("nodelay");
    rustls::StreamOwned::new(connection, tcp)
}

fn plain(port: u16) -> TcpStream {
    let tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    tcp
}

struct Stop(Child);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    let n: usize = std::env::var("SECURE_GET_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let bin = std::env::var("APISERVER_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_apiserver").to_string());
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, format!("{TOKEN},bench,uid-bench\n")).expect("token file");
    let (port, secure_port) = (free_port(), free_port());
    let server = Stop(
        Command::new(&bin)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--port", &port.to_string()])
            .args(["--secure-port", &secure_port.to_string()])
            .arg("--token-auth-file")
            .arg(&tokens)
            .args(["--nodes", "0", "--disable-controllers"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("start the server"),
    );
    let pid = server.0.id();
    let ready = Instant::now();
    loop {
        if let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) {
            let (status, _) = exchange(&mut BufReader::new(stream), "GET", "/readyz", "", "");
            if status == 200 {
                break;
            }
        }
        assert!(
            ready.elapsed() < Duration::from_secs(60),
            "server not ready"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut admin = BufReader::new(plain(port));
    for (path, body) in [
        (
            "/api/v1/namespaces/default/configmaps",
            r#"{"metadata":{"name":"bench"},"data":{"k":"v"}}"#,
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            r#"{"metadata":{"name":"bench"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}"#,
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            r#"{"metadata":{"name":"bench"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"bench"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"bench"}]}"#,
        ),
    ] {
        let (status, answer) = exchange(&mut admin, "POST", path, "", body);
        assert_eq!(status, 201, "{path}: {answer}");
    }
    let ca = dir.path().join("data/pki/ca.crt");
    let bearer = format!("Authorization: Bearer {TOKEN}\r\n");
    // The binding reaches the authorizer through its watch.
    let allowed = Instant::now();
    loop {
        let mut stream = BufReader::new(tls_stream(&ca, secure_port));
        if exchange(&mut stream, "GET", PATH, &bearer, "").0 == 200 {
            break;
        }
        assert!(allowed.elapsed() < Duration::from_secs(10), "never allowed");
        std::thread::sleep(Duration::from_millis(50));
    }

    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!("secure_get: {n} GETs of one ConfigMap per mode, one keep-alive connection each");
    // Two rounds, alternating: the first also pays for whatever the server still does after
    // start; the second is the figure.
    for round in 1..=2 {
        let http = measure(pid, plain(port), "", n);
        let https = measure(pid, tls_stream(&ca, secure_port), &bearer, n);
        println!("round {round}:");
        println!(
            "  plain HTTP (loopback user):   {:8.1} µs CPU/request  {:8.1} µs wall/request",
            micros(http.cpu_per_request),
            micros(http.wall_per_request)
        );
        println!(
            "  HTTPS + bearer token + RBAC:  {:8.1} µs CPU/request  {:8.1} µs wall/request",
            micros(https.cpu_per_request),
            micros(https.wall_per_request)
        );
        println!(
            "  ratio (CPU): {:.2}x (goal <= 1.3x)",
            https.cpu_per_request.as_secs_f64() / http.cpu_per_request.as_secs_f64().max(1e-9)
        );
    }
    drop(server);
}
