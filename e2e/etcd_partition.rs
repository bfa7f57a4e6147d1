//! Slow and partitioned etcd: the real binary on one etcd inside a network namespace, reached
//! over a veth pair the test slows and cuts (`tools/test-support`'s `EtcdInNetns`), with
//! `--request-timeout=3s`.
//!
//! 0. Slow within the timeout: the link narrowed to 64 kbit/s (the tbf qdisc, which kernels
//!    without netem have): a create still succeeds, only later.
//! 1. Slow: etcd answers later than the timeout (netem delay; where the kernel has no netem,
//!    etcd stopped with SIGSTOP, which the kernel still accepts connections for). A GET and a
//!    POST end with upstream's 504 Timeout Status at the timeout; once etcd is fast again,
//!    requests succeed again by themselves.
//! 2. Partition: the link drops every packet (netem loss 100%, or the blackhole qdisc). A GET
//!    and a POST end with 504; `/readyz` fails on `etcd` and `etcd-readiness`, `/livez` on
//!    `etcd` (upstream's etcd check is on both); GETs still end with 504 after the client has
//!    dropped the dead connection. Once the link is back, `/readyz` turns green
//!    by itself, writes succeed, and a watch opened before the slowdown delivers every
//!    ConfigMap created since, each once, in resourceVersion order.
//!
//! Needs root and iproute2: without them the test says so and passes.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{start_with_args, Server, NO_NODES};
use test_support::EtcdInNetns;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const TIMEOUT: Duration = Duration::from_secs(3);
/// What a 504 may take beyond the timeout: the timeout runs from when the server reads the
/// request, and the answer has to be written.
const SLACK: Duration = Duration::from_millis(1500);
/// How long the server may take to be ready again once etcd is reachable: TCP's retransmit
/// back-off and the connection's keep-alive decide when the old connection recovers or is
/// replaced.
const RECOVERY: Duration = Duration::from_secs(30);
/// Longer than the client connection's keep-alive takes to drop a silent connection.
const PARTITION: Duration = Duration::from_secs(21);

fn create(server: &Server, name: &str) -> support::Response {
    create_sized(server, name, 0)
}

/// A ConfigMap with `bytes` of data.
fn create_sized(server: &Server, name: &str, bytes: usize) -> support::Response {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"filler": "x".repeat(bytes)}});
    server.send_json("POST", CONFIGMAPS, &body)
}

/// A request that must end with upstream's 504 Timeout Status near the timeout; how long it
/// took.
fn times_out(what: &str, request: impl FnOnce() -> support::Response) -> Duration {
    let started = Instant::now();
    let r = request();
    let took = started.elapsed();
    assert_eq!(r.status, 504, "{what}: {}", r.body);
    let status = r.json();
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["reason"], "Timeout", "{status}");
    assert_eq!(status["code"], 504, "{status}");
    assert!(
        took >= TIMEOUT - Duration::from_millis(100) && took < TIMEOUT + SLACK,
        "{what} took {took:?}"
    );
    took
}

/// Polls until `ok` holds; how long it took. Panics past `within`.
fn until(within: Duration, what: &str, mut ok: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !ok() {
        assert!(started.elapsed() < within, "{what} not within {within:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    started.elapsed()
}

/// A watch on one connection, its events collected as they arrive.
fn watch(port: u16, rv: &str) -> Arc<Mutex<Vec<Value>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let path = format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}&timeoutSeconds=300");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .expect("send watch");
    let sink = events.clone();
    std::thread::spawn(move || {
        // Chunk sizes and the head are lines too; each event is one JSON line.
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            if let Ok(event) = serde_json::from_str::<Value>(line.trim()) {
                sink.lock().expect("events").push(event);
            }
        }
    });
    events
}

fn ready(server: &Server) -> bool {
    server.get("/readyz").status == 200
}

#[test]
fn slow_and_partitioned_etcd_end_in_504_and_recover_by_themselves() {
    let mut etcd = match EtcdInNetns::start() {
        Ok(etcd) => etcd,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let mut args = vec!["--request-timeout=3s"];
    args.extend(NO_NODES);
    let server = start_with_args(None, Some(etcd.endpoint()), &args);
    until(Duration::from_secs(20), "ready at start", || ready(&server));

    assert_eq!(create(&server, "before").status, 201);
    let list = server.get(CONFIGMAPS);
    assert_eq!(list.status, 200, "{}", list.body);
    let listed = test_support::names(&list.json());
    let rv = list.json()["metadata"]["resourceVersion"]
        .as_str()
        .expect("list resourceVersion")
        .to_string();
    let events = watch(server.port, &rv);
    // The watch is live (the cache has caught up with its resourceVersion) before any fault.
    assert_eq!(create(&server, "watched").status, 201);
    until(Duration::from_secs(10), "the watch to start", || {
        events
            .lock()
            .expect("events")
            .iter()
            .any(|e| e["object"]["metadata"]["name"] == "watched")
    });

    // 0. Slow, within the timeout: a narrow link (tbf) makes every write's exchange with etcd
    // take longer, and requests still succeed, only later. The object carries 8 KB so that its
    // put is bigger than the bucket's burst (1,600 bytes): a small one would pass on the
    // tokens the bucket starts with, as fast as before.
    let started = Instant::now();
    assert_eq!(create_sized(&server, "on-a-fast-link", 8192).status, 201);
    let fast = started.elapsed();
    etcd.throttle(256).expect("tbf qdisc");
    let started = Instant::now();
    let created = create_sized(&server, "on-a-narrow-link", 8192);
    let narrow = started.elapsed();
    assert_eq!(created.status, 201, "{}", created.body);
    assert!(
        narrow >= fast + Duration::from_millis(50) && narrow < TIMEOUT,
        "a create took {fast:?} on the fast link and {narrow:?} on the narrow one"
    );
    etcd.restore();
    eprintln!("narrow link (256 kbit/s): a create took {narrow:?}, {fast:?} before");

    // 1. Slow.
    let slowed_by = if etcd.has_netem() {
        etcd.delay(5_000).expect("netem delay");
        "netem delay 5s"
    } else {
        etcd.pause();
        "SIGSTOP (no netem in this kernel)"
    };
    let get_504 = times_out("GET", || server.get(&format!("{CONFIGMAPS}/before")));
    let post_504 = times_out("POST", || create(&server, "while-slow"));
    if etcd.has_netem() {
        etcd.restore();
    } else {
        etcd.resume();
    }
    let slow_recovery = until(RECOVERY, "requests after the slowdown", || {
        server.get(&format!("{CONFIGMAPS}/before")).status == 200
    });
    assert_eq!(create(&server, "after-slow").status, 201);
    eprintln!(
        "slow ({slowed_by}): GET 504 after {get_504:?}, POST 504 after {post_504:?}; \
         requests succeed again {slow_recovery:?} after etcd is fast"
    );

    // 2. Partition.
    let cut_by = etcd.cut();
    let cut_at = Instant::now();
    let get_504 = times_out("GET", || server.get(&format!("{CONFIGMAPS}/before")));
    let post_504 = times_out("POST", || create(&server, "while-cut"));
    let readyz = server.get("/readyz?verbose");
    assert_eq!(readyz.status, 500, "{}", readyz.body);
    assert!(readyz.body.contains("[-]etcd failed"), "{}", readyz.body);
    assert!(
        readyz.body.contains("[-]etcd-readiness failed"),
        "{}",
        readyz.body
    );
    assert!(readyz.body.contains("[+]ping ok"), "{}", readyz.body);
    let livez = server.get("/livez?verbose");
    assert_eq!(livez.status, 500, "{}", livez.body);
    assert!(livez.body.contains("[-]etcd failed"), "{}", livez.body);
    assert_eq!(server.get("/livez?exclude=etcd").status, 200);
    // The failing check's reason, in the log, names the member and its state.
    assert!(
        server.logged(&format!("{} unhealthy", etcd.endpoint())) > 0,
        "no per-endpoint state logged"
    );
    // Past the connection's keep-alive (a ping every 10 s, 5 s to answer) the dead connection
    // is dropped and new ones time out: requests still wait for a member, as upstream's client
    // waits for a connection, and end at the timeout.
    let mut late = 0;
    while cut_at.elapsed() < PARTITION {
        times_out("GET late in the partition", || {
            server.get(&format!("{CONFIGMAPS}/before"))
        });
        late += 1;
    }
    let cut_for = cut_at.elapsed();
    etcd.restore();
    let ready_again = until(RECOVERY, "/readyz after the partition", || ready(&server));
    let after: Vec<String> = (0..3).map(|i| format!("after-cut-{i}")).collect();
    for name in &after {
        let r = create(&server, name);
        assert_eq!(r.status, 201, "{name}: {}", r.body);
    }
    eprintln!(
        "partition ({cut_by:?}, {cut_for:?}): GET 504 after {get_504:?}, POST 504 after \
         {post_504:?}, {late} more GETs 504; /readyz green {ready_again:?} after the link is back"
    );

    // The watch opened before both faults saw every ConfigMap created since (the writes that
    // timed out may or may not have been applied), once each, in order.
    let stored: Vec<String> = test_support::names(&server.get(CONFIGMAPS).json())
        .into_iter()
        .filter(|n| !listed.contains(n))
        .collect();
    let caught_up = |seen: &[Value]| {
        stored.iter().all(|n| {
            seen.iter()
                .any(|e| e["type"] == "ADDED" && e["object"]["metadata"]["name"] == *n)
        })
    };
    let started = Instant::now();
    while !caught_up(&events.lock().expect("events")) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the watch did not deliver {stored:?} within 20s; it delivered {:?}",
            events.lock().expect("events")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let delivered = started.elapsed();
    let seen = events.lock().expect("events").clone();
    let added: Vec<&str> = seen
        .iter()
        .filter(|e| e["type"] == "ADDED")
        .filter_map(|e| e["object"]["metadata"]["name"].as_str())
        .collect();
    let mut unique = added.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), added.len(), "a duplicate event: {added:?}");
    for e in &seen {
        assert_ne!(e["type"], "ERROR", "watch error: {e}");
    }
    let rvs: Vec<u64> = seen
        .iter()
        .filter(|e| e["type"] != "BOOKMARK")
        .filter_map(|e| e["object"]["metadata"]["resourceVersion"].as_str())
        .filter_map(|rv| rv.parse().ok())
        .collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "out of order: {rvs:?}");
    for name in &after {
        assert!(added.contains(&name.as_str()), "{name} missing: {added:?}");
    }
    eprintln!("the watch delivered {added:?} ({delivered:?} after the last write was checked)");
}
