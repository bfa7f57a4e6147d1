//! What secure serving costs: the same GET of one ConfigMap, N times over one keep-alive
//! connection, first over the loopback plain HTTP port (no authentication, the
//! privileged loopback user), then over HTTPS with a bearer token (static token file) whose
//! user RBAC allows the read through a RoleBinding. Prints the server process's CPU time
//! (user + system, from /proc/<pid>/stat) per request for each, and their ratio (goal
//! <= 1.3).
//!
//! `cargo bench -p apiserver --bench secure_get` (N from `SECURE_GET_REQUESTS`, default
//! 20000; the server binary from `APISERVER_BIN`, default the one cargo built).

use std::time::{Duration, Instant};

use test_support::https::Connection;
use test_support::server::{self, Launch};

const PATH: &str = "/api/v1/namespaces/default/configmaps/bench";
const TOKEN: &str = "bench-token";

/// One GET of the ConfigMap; panics unless it is a 200.
fn get(c: &mut Connection) {
    let r = c.exchange("GET", PATH, b"").expect("GET");
    assert_eq!(r.status, 200, "{}", r.text());
}

/// The server's user + system CPU time so far.
fn cpu(pid: u32) -> Duration {
    server::cpu_time(pid).expect("/proc stat")
}

struct Measured {
    cpu_per_request: Duration,
    wall_per_request: Duration,
}

fn measure(pid: u32, mut c: Connection, n: usize) -> Measured {
    for _ in 0..n / 10 {
        get(&mut c);
    }
    let (cpu_before, wall_before) = (cpu(pid), Instant::now());
    for _ in 0..n {
        get(&mut c);
    }
    Measured {
        cpu_per_request: (cpu(pid) - cpu_before) / n as u32,
        wall_per_request: wall_before.elapsed() / n as u32,
    }
}

fn main() {
    let n: usize = std::env::var("SECURE_GET_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let server = Launch::new(server::binary(env!("CARGO_BIN_EXE_apiserver")))
        .token_file(&format!("{TOKEN},bench,uid-bench\n"))
        .args(["--nodes", "0", "--disable-controllers"])
        .start();
    let pid = server.pid();
    let mut admin = server.plain().expect("connect");
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
        let r = admin.exchange("POST", path, body.as_bytes()).expect("POST");
        assert_eq!(r.status, 201, "{path}: {}", r.text());
    }
    // The binding reaches the authorizer through its watch.
    let allowed = Instant::now();
    loop {
        let allowed_now = server
            .secure(TOKEN)
            .and_then(|mut c| c.exchange("GET", PATH, b""))
            .is_ok_and(|r| r.status == 200);
        if allowed_now {
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
        let http = measure(pid, server.plain().expect("connect"), n);
        let https = measure(pid, server.secure(TOKEN).expect("connect over TLS"), n);
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
