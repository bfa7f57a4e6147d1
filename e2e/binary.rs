//! The real `apiserver` binary: flags, health endpoints, version, on the embedded store and on
//! a real etcd that goes away and comes back.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::{start, start_on_etcd, Server};

/// Milliseconds the server took to start, from its serving line.
fn startup_ms(server: &Server) -> u64 {
    server
        .serving_line
        .split("startup_ms=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("startup_ms in the serving line")
}

fn get(port: u16, path: &str) -> (u16, String) {
    let r = Server::send(port, "GET", path, &[], b"");
    (r.status, r.body)
}

#[test]
fn embedded_server_starts_fast_and_answers_health_and_version() {
    let server = start();
    let startup = startup_ms(&server);
    assert!(startup < 1000, "startup took {startup} ms");
    for path in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(get(server.port, path), (200, "ok".to_string()), "{path}");
    }
    let (status, body) = get(server.port, "/readyz?verbose");
    assert_eq!(status, 200);
    assert!(body.contains("[+]storage ok"), "{body}");
    assert!(
        body.contains("[+]poststarthook/crd-informer-synced ok"),
        "{body}"
    );
    assert!(body.trim_end().ends_with("readyz check passed"), "{body}");
    assert_eq!(get(server.port, "/readyz/storage").0, 200);
    assert_eq!(get(server.port, "/readyz/nonexistent").0, 404);

    let (status, body) = get(server.port, "/version");
    assert_eq!(status, 200);
    // Indented without a trailing newline, as upstream's WriteRawJSON writes it.
    assert!(
        body.starts_with("{\n  \"major\": \"1\",\n  \"minor\": "),
        "{body}"
    );
    assert!(body.ends_with("\"\n}"), "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("version json");
    assert_eq!(v["major"], "1");
    // The release whose API it serves (1.35's discovery and OpenAPI), so kubectl's skew
    // check compares against the right one.
    assert_eq!(v["minor"], "35", "{body}");
    assert!(v["gitVersion"]
        .as_str()
        .is_some_and(|g| g.starts_with("v1.35.0+rs.")));
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
    let mut server = tokio::task::spawn_blocking(start_on_etcd)
        .await
        .expect("start");
    let port = server.port;
    let ask = move |path: &'static str| tokio::task::spawn_blocking(move || get(port, path));
    assert_eq!(ask("/readyz").await.expect("get").0, 200);
    let (_, verbose) = ask("/readyz?verbose").await.expect("get");
    assert!(verbose.contains("[+]etcd ok"), "{verbose}");
    assert!(verbose.contains("[+]etcd-readiness ok"), "{verbose}");

    server.etcd.as_mut().expect("etcd").stop();
    let started = Instant::now();
    // Each etcd check probes at most once a second, answering the last probe's result in
    // between, as upstream's; the next probe finds etcd gone.
    let (status, body) = loop {
        let (status, body) = ask("/readyz?verbose").await.expect("get");
        if status != 200 || started.elapsed() > Duration::from_secs(5) {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("[-]etcd failed"), "{body}");
    assert!(body.contains("[-]etcd-readiness failed"), "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "readyz took {:?}",
        started.elapsed()
    );
    // Liveness of the process itself is unaffected by the check filter.
    assert_eq!(ask("/livez?exclude=etcd").await.expect("get").0, 200);

    server.etcd.as_mut().expect("etcd").restart().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if ask("/readyz").await.expect("get").0 == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "server never became ready again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `--scheduler-config FILE`: a KubeSchedulerConfiguration the binary reads before it sets
/// anything up, refusing a bad one with the reason, and whose settings the in-process
/// scheduler starts with.
const SCHEDULER_CONFIG_HEAD: &str =
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

/// The file `name` in `dir` holding `text`, as a flag's value.
fn config_file(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the configuration");
    path.display().to_string()
}

#[test]
fn a_bad_configuration_is_refused_at_start_with_the_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out_of_range = config_file(
        dir.path(),
        "range.yaml",
        &format!("{SCHEDULER_CONFIG_HEAD}percentageOfNodesToScore: 101\n"),
    );
    let said = support::refused_start(dir.path(), &["--scheduler-config", &out_of_range]);
    assert!(
        said.contains("percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"),
        "{said}"
    );
    assert!(said.contains("--scheduler-config"), "{said}");

    let other_profile = config_file(
        dir.path(),
        "profile.yaml",
        &format!("{SCHEDULER_CONFIG_HEAD}profiles:\n- schedulerName: my-scheduler\n"),
    );
    let said = support::refused_start(dir.path(), &["--scheduler-config", &other_profile]);
    assert!(
        said.contains("only the default-scheduler profile is run, not \"my-scheduler\""),
        "{said}"
    );

    let missing = dir.path().join("missing.yaml").display().to_string();
    let said = support::refused_start(dir.path(), &["--scheduler-config", &missing]);
    assert!(said.contains("missing.yaml"), "{said}");
}

#[test]
fn a_good_configuration_reaches_the_scheduler() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = config_file(
        dir.path(),
        "good.json",
        r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "parallelism": 3, "percentageOfNodesToScore": 20,
            "profiles": [{"schedulerName": "default-scheduler", "percentageOfNodesToScore": 30}]}"#,
    );
    let server = support::start_embedded_with(&["--scheduler-config", &good]);
    let deadline = Instant::now() + Duration::from_secs(15);
    while server.logged("starting scheduler") == 0 {
        assert!(Instant::now() < deadline, "the scheduler did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let line = server
        .logs
        .lock()
        .map(|l| l.iter().find(|l| l.contains("starting scheduler")).cloned())
        .ok()
        .flatten()
        .unwrap_or_default();
    assert!(
        line.contains("workers=3") && line.contains("percentage_of_nodes_to_score=30"),
        "{line}"
    );
}

/// The controllers, the scheduler and the nodes run on a runtime of their own, apart from the
/// one serving requests (`apiserver/src/controllers/runtime.rs`), so that requests do not
/// queue behind their tasks: the server has threads of that name once they run.
#[test]
fn controllers_run_on_threads_apart_from_the_requests() {
    let server = start();
    let pid = server.child.id();
    let names = || -> Vec<String> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|tasks| {
                tasks
                    .filter_map(|t| t.ok())
                    .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                    .map(|n| n.trim().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !names().iter().any(|n| n == "controllers") {
        assert!(
            Instant::now() < deadline,
            "no controllers thread: {:?}",
            names()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The service account controller, running there, still serves the requests' needs (it
    // makes the default one in its own time).
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(
        server.port,
        "/api/v1/namespaces/default/serviceaccounts/default",
    )
    .0 != 200
    {
        assert!(Instant::now() < deadline, "no default service account");
        std::thread::sleep(Duration::from_millis(50));
    }
}
