//! `--scheduler-config FILE`: a KubeSchedulerConfiguration the binary reads before it sets
//! anything up, refusing a bad one with the reason, and whose settings the in-process
//! scheduler starts with.

#[path = "../../e2e/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

/// The file `name` in `dir` holding `text`, as a flag's value.
fn file(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the configuration");
    path.display().to_string()
}

#[test]
fn a_bad_configuration_is_refused_at_start_with_the_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out_of_range = file(
        dir.path(),
        "range.yaml",
        &format!("{HEAD}percentageOfNodesToScore: 101\n"),
    );
    let said = support::refused_start(dir.path(), &["--scheduler-config", &out_of_range]);
    assert!(
        said.contains("percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"),
        "{said}"
    );
    assert!(said.contains("--scheduler-config"), "{said}");

    let other_profile = file(
        dir.path(),
        "profile.yaml",
        &format!("{HEAD}profiles:\n- schedulerName: my-scheduler\n"),
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
    let good = file(
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
