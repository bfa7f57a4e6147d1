//! The etcd leader dies under load: three etcd members on loopback, two API servers given all
//! three endpoints, eight writers creating ConfigMaps through both. The leader is killed
//! (SIGKILL) at ~5 s and restarted at ~12 s. No acknowledged write is lost, errors come only
//! to requests sent around the election after the kill, both servers are ready at the end, and a watcher on one
//! server sees every created ConfigMap exactly once.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{start_with_args, Server};
use test_support::EtcdCluster;

const WRITERS: usize = 8;
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const KILL_AT: Duration = Duration::from_secs(5);
const RESTART_AT: Duration = Duration::from_secs(12);
const STOP_AT: Duration = Duration::from_secs(16);
/// Errors are expected only for requests sent while a new leader is elected. A write in flight
/// at the kill may fail later: etcd answers a proposal lost with its leader only at its own
/// request timeout (~7 s), as it does for upstream's servers.
const ERROR_WINDOW: Duration = Duration::from_secs(3);
/// The longest a request already in flight at the kill may have been sent before it.
const IN_FLIGHT: Duration = Duration::from_secs(1);

/// What one writer saw: names acknowledged (201), and each failed request's start and end.
#[derive(Default)]
struct Written {
    acked: Vec<String>,
    errors: Vec<(Instant, Instant, String)>,
}

fn writer(port: u16, id: usize, stop: Arc<AtomicBool>) -> Written {
    let mut out = Written::default();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let name = format!("w{id}-{n}");
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"n": n.to_string()}});
        let started = Instant::now();
        let r = Server::send(
            port,
            "POST",
            CONFIGMAPS,
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        );
        match r.status {
            201 => out.acked.push(name),
            // The create may have been applied though its answer was lost: a retry under
            // the same name tells.
            409 => out.acked.push(name),
            status => {
                out.errors
                    .push((started, Instant::now(), format!("{status} {}", r.body)));
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        }
        n += 1;
    }
    out
}

/// Follows the ConfigMaps' watch on one server from a list's resourceVersion, resuming from
/// the last one seen, counting ADDED events per name.
fn watcher(
    port: u16,
    mut rv: String,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeMap<String, usize>>>,
) {
    while !stop.load(Ordering::Relaxed) {
        let path = format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}&timeoutSeconds=1");
        let r = Server::send(port, "GET", &path, &[], b"");
        assert_ne!(
            r.status, 410,
            "watch could not resume from {rv}: {}",
            r.body
        );
        if r.status != 200 {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        for event in r
            .body
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        {
            assert_ne!(event["type"], "ERROR", "watch error: {event}");
            if event["type"] == "ADDED" {
                let name = event["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                *seen.lock().expect("seen").entry(name).or_default() += 1;
            }
            if let Some(v) = event["object"]["metadata"]["resourceVersion"].as_str() {
                rv = v.to_string();
            }
        }
    }
}

fn names_in(server: &Server) -> BTreeSet<String> {
    let r = server.get(CONFIGMAPS);
    assert_eq!(r.status, 200, "list: {}", r.body);
    r.json()["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn wait_ready(server: &Server, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if server.get("/readyz").status == 200 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn killing_the_etcd_leader_loses_no_acknowledged_write() {
    let mut cluster = EtcdCluster::start();
    let endpoints = cluster.endpoints();
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| start_with_args(None, Some(endpoints.clone()), &[]));
        let b = s.spawn(|| start_with_args(None, Some(endpoints.clone()), &[]));
        (a.join().expect("server a"), b.join().expect("server b"))
    });
    assert!(wait_ready(&a, Duration::from_secs(20)) && wait_ready(&b, Duration::from_secs(20)));

    // What exists before the writers start; the watcher follows every change after it.
    let list = a.get(CONFIGMAPS);
    assert_eq!(list.status, 200, "list: {}", list.body);
    let rv = list.json()["metadata"]["resourceVersion"]
        .as_str()
        .expect("list resourceVersion")
        .to_string();
    let before = names_in(&a);
    let stop_watch = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let watch = {
        let (stop, seen, port) = (stop_watch.clone(), seen.clone(), a.port);
        std::thread::spawn(move || watcher(port, rv, stop, seen))
    };
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|id| {
            let port = if id % 2 == 0 { a.port } else { b.port };
            let stop = stop.clone();
            std::thread::spawn(move || writer(port, id, stop))
        })
        .collect();

    std::thread::sleep(KILL_AT.saturating_sub(start.elapsed()));
    let leader = cluster.leader().expect("an etcd leader before the kill");
    let killed = Instant::now();
    cluster.kill(leader);
    std::thread::sleep(RESTART_AT.saturating_sub(start.elapsed()));
    cluster.restart(leader);
    std::thread::sleep(STOP_AT.saturating_sub(start.elapsed()));
    stop.store(true, Ordering::Relaxed);
    let written: Vec<Written> = writers
        .into_iter()
        .map(|w| w.join().expect("writer"))
        .collect();

    let acked: BTreeSet<String> = written.iter().flat_map(|w| w.acked.clone()).collect();
    let errors: Vec<_> = written.iter().flat_map(|w| w.errors.iter()).collect();
    let late: Vec<_> = errors
        .iter()
        .filter(|(began, _, _)| *began + IN_FLIGHT < killed || *began > killed + ERROR_WINDOW)
        .map(|(began, ended, why)| {
            format!(
                "{:?}..{:?} after the kill: {why}",
                began.checked_duration_since(killed),
                ended.checked_duration_since(killed)
            )
        })
        .collect();
    eprintln!(
        "{} writes acknowledged, {} failed (all sent within {ERROR_WINDOW:?} of the kill: {}), \
         last error {:?} after the kill",
        acked.len(),
        errors.len(),
        late.is_empty(),
        errors
            .iter()
            .map(|(_, ended, _)| ended.saturating_duration_since(killed))
            .max()
    );
    assert!(
        late.is_empty(),
        "errors outside the election window: {late:#?}"
    );

    assert!(
        cluster.wait_all_healthy(Duration::from_secs(15)),
        "etcd member did not rejoin"
    );
    assert!(
        wait_ready(&a, Duration::from_secs(10)),
        "server a not ready at the end"
    );
    assert!(
        wait_ready(&b, Duration::from_secs(10)),
        "server b not ready at the end"
    );

    for (server, name) in [(&a, "a"), (&b, "b")] {
        let stored = names_in(server);
        let lost: Vec<_> = acked.difference(&stored).collect();
        assert!(
            lost.is_empty(),
            "server {name} lost acknowledged writes: {lost:?}"
        );
    }

    // The watcher catches up with everything stored, each exactly once.
    let stored: BTreeSet<String> = names_in(&b).difference(&before).cloned().collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let caught_up = {
            let seen = seen.lock().expect("seen");
            stored.iter().all(|n| seen.contains_key(n))
        };
        if caught_up {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop_watch.store(true, Ordering::Relaxed);
    watch.join().expect("watcher");
    let seen = seen.lock().expect("seen");
    let missed: Vec<_> = stored.iter().filter(|n| !seen.contains_key(*n)).collect();
    let twice: Vec<_> = seen.iter().filter(|(_, c)| **c != 1).collect();
    assert!(missed.is_empty(), "watcher missed {missed:?}");
    assert!(twice.is_empty(), "watcher saw more than once: {twice:?}");
    assert!(
        acked.len() > 100,
        "too few writes to mean anything: {}",
        acked.len()
    );
}
