//! The real binary on the embedded store when its disk fills up (a small tmpfs under
//! `--data-dir`, filled by a ballast file and then by the server's own writes): writes answer a
//! 500 InternalError Status with etcd's "mvcc: database space exceeded" wording, as
//! kube-apiserver passes on etcd's space alarm; reads and watches carry on; writes resume by
//! themselves once space returns; after a crash and restart every acknowledged write is there
//! and no refused one. Needs root for the mount: skipped with a message otherwise.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{start_embedded_in, Server};
use test_support::tmpfs::{fill, Tmpfs};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn configmap(name: &str) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"app": "disk-full"}},
        "data": {"payload": name.repeat(64 << 10 >> 4)},
    })
}

/// The names in a finished watch response's ADDED events.
fn added(body: &str) -> Vec<String> {
    body.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "ADDED")
        .filter_map(|e| e["object"]["metadata"]["name"].as_str().map(String::from))
        .collect()
}

fn watch_from(port: u16, rv: &str, seconds: u32) -> std::thread::JoinHandle<String> {
    let path = format!(
        "{CONFIGMAPS}?watch=true&resourceVersion={rv}&timeoutSeconds={seconds}&labelSelector=app%3Ddisk-full"
    );
    std::thread::spawn(move || Server::send(port, "GET", &path, &[], b"").body)
}

#[test]
fn full_disk_refuses_writes_keeps_reads_and_recovers() {
    // Declared first so it is dropped last, after the server has let go of its files.
    let Some(mut fs) = Tmpfs::mount("64m") else {
        return;
    };
    let mut s = start_embedded_in(fs.take_dir(), &support::NO_NODES);
    // The controllers' first writes (service accounts, leases, events) are done before the
    // disk is filled: one racing the ballast could take the room left for the test's own.
    let deadline = Instant::now() + Duration::from_secs(20);
    while s
        .get("/api/v1/namespaces/default/serviceaccounts/default")
        .status
        != 200
    {
        assert!(Instant::now() < deadline, "no default service account");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    let rv = s.get(CONFIGMAPS).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Watches the whole outage.
    let live = watch_from(s.port, &rv, 8);

    let ballast = fs.path().join("ballast");
    fill(&ballast, 2 << 20);
    let started = Instant::now();
    let mut acked = Vec::new();
    let mut refused = None;
    for i in 0..200 {
        let name = format!("cm-{i:03}");
        let r = s.send_json("POST", CONFIGMAPS, &configmap(&name));
        match r.status {
            201 => acked.push(name),
            500 => {
                let status = r.json();
                assert_eq!(status["kind"], "Status", "{}", r.body);
                assert_eq!(status["reason"], "InternalError", "{}", r.body);
                assert_eq!(status["code"], 500, "{}", r.body);
                let message = status["message"].as_str().unwrap_or_default();
                assert!(
                    message.contains("mvcc: database space exceeded"),
                    "{message}"
                );
                refused = Some(name);
                break;
            }
            other => panic!("creating {name}: {other} {}", r.body),
        }
    }
    let refused = refused.expect("the disk never filled");
    assert!(!acked.is_empty(), "nothing fitted beside the ballast");
    eprintln!(
        "{} configmaps acknowledged before the disk filled ({:?})",
        acked.len(),
        started.elapsed()
    );

    // Reads go on.
    for name in &acked {
        let r = s.get(&format!("{CONFIGMAPS}/{name}"));
        assert_eq!(r.status, 200, "reading {name} on a full disk: {}", r.body);
    }
    let list = s.get(&format!("{CONFIGMAPS}?labelSelector=app%3Ddisk-full"));
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(
        list.json()["items"].as_array().map_or(0, Vec::len),
        acked.len()
    );
    let r = s.get(&format!("{CONFIGMAPS}/{refused}"));
    assert_eq!(r.status, 404, "the refused write half-appeared: {}", r.body);

    // Space returns: writes resume by themselves.
    std::fs::remove_file(&ballast).expect("remove the ballast");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = s.send_json("POST", CONFIGMAPS, &configmap("after"));
        if r.status == 201 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "writes did not resume: {} {}",
            r.status,
            r.body
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    acked.push("after".into());

    // The watch that ran through the outage saw every write acknowledged during it, and a
    // new one from the same start sees the lot, the write after the outage too.
    let seen = added(&live.join().expect("watch thread"));
    for name in &acked[..acked.len() - 1] {
        assert!(seen.contains(name), "the live watch missed {name}");
    }
    assert!(!seen.contains(&refused), "the watch saw the refused write");
    let replay = added(&watch_from(s.port, &rv, 2).join().expect("watch thread"));
    assert_eq!(replay, acked);

    // A crash and restart on the same data: every acknowledged write is there.
    s.crash_and_restart();
    for name in &acked {
        let r = s.get(&format!("{CONFIGMAPS}/{name}"));
        assert_eq!(r.status, 200, "acknowledged {name} lost: {}", r.body);
        assert_eq!(r.json()["data"], configmap(name)["data"]);
    }
    assert_eq!(s.get(&format!("{CONFIGMAPS}/{refused}")).status, 404);
    drop(s);
}
