//! The real `apiserver` binary: flags, health endpoints, version, on the embedded store and on
//! a real etcd that goes away and comes back.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use storage::testing::EtcdServer;

struct Server {
    child: Child,
    port: u16,
    startup_ms: u64,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Starts the binary and waits for its "serving" log line.
fn start(extra: &[String]) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args(["--port", &port.to_string()])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(extra)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start apiserver");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("serving") {
                let _ = tx.send(line.clone());
            }
            println!("apiserver: {line}");
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("apiserver logged that it is serving");
    let startup_ms = line
        .split("startup_ms=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("startup_ms in the serving line");
    Server {
        child,
        port,
        startup_ms,
        _dir: dir,
    }
}

/// A plain HTTP/1.1 GET; returns status and body.
fn get(port: u16, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("http response");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, body)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

#[test]
fn embedded_server_starts_fast_and_answers_health_and_version() {
    let server = start(&[]);
    assert!(
        server.startup_ms < 1000,
        "startup took {} ms",
        server.startup_ms
    );
    for path in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(get(server.port, path), (200, "ok".to_string()), "{path}");
    }
    let (status, body) = get(server.port, "/readyz?verbose");
    assert_eq!(status, 200);
    assert!(body.contains("[+]storage ok"), "{body}");
    assert!(body.trim_end().ends_with("readyz check passed"), "{body}");
    assert_eq!(get(server.port, "/readyz/storage").0, 200);
    assert_eq!(get(server.port, "/readyz/nonexistent").0, 404);

    let (status, body) = get(server.port, "/version");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).expect("version json");
    assert_eq!(v["major"], "1");
    assert!(v["minor"]
        .as_str()
        .is_some_and(|m| m.parse::<u32>().is_ok()));
    assert!(v["gitVersion"]
        .as_str()
        .is_some_and(|g| g.starts_with("v1.")));
    for field in [
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    ] {
        assert!(v[field].is_string(), "{field} missing: {body}");
    }

    let (status, body) = get(server.port, "/api/v1/nothing");
    assert_eq!(status, 404);
    let s: serde_json::Value = serde_json::from_str(&body).expect("status json");
    assert_eq!(
        (s["kind"].as_str(), s["reason"].as_str()),
        (Some("Status"), Some("NotFound"))
    );
}

#[test]
fn bad_flags_fail_with_a_message() {
    let out = Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args(["--port", "not-a-port"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--port"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_server_is_ready_only_while_etcd_answers() {
    let mut etcd = EtcdServer::start().await;
    let server = start(&["--etcd-servers".to_string(), etcd.endpoint()]);
    let port = server.port;
    let ask = move |path: &'static str| tokio::task::spawn_blocking(move || get(port, path));
    assert_eq!(ask("/readyz").await.expect("get").0, 200);
    let (_, verbose) = ask("/readyz?verbose").await.expect("get");
    assert!(verbose.contains("[+]etcd ok"), "{verbose}");

    etcd.stop();
    let started = Instant::now();
    let (status, body) = ask("/readyz").await.expect("get");
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("[-]etcd failed"), "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "readyz took {:?}",
        started.elapsed()
    );
    // Liveness of the process itself is unaffected by the check filter.
    assert_eq!(ask("/livez?exclude=etcd").await.expect("get").0, 200);

    etcd.restart().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if ask("/readyz").await.expect("get").0 == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "server never became ready again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
