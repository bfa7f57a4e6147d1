//! The soak's short form: the same mixed churn as `cargo bench --bench soak` (ConfigMaps,
//! custom resources, pods, Deployments rolled and scaled, namespaces made and deleted,
//! watches ended and dropped) for a minute on each backend against the real binary with
//! simulated nodes. No request may fail, the server may log no error, and once the churn has
//! stopped and its namespaces are gone the server's tasks must be back near their idle
//! count (a leaked watch or connection keeps its task). Memory is printed, not judged: a
//! minute says little about a slope (the bench judges it over an hour).

use std::time::Duration;

use test_support::soak::{self, Config};
use test_support::BackendKind;

fn short_soak(backend: BackendKind) {
    let config = Config::new(
        env!("CARGO_BIN_EXE_apiserver"),
        backend,
        Duration::from_secs(60),
    );
    let report = soak::run(&config);
    println!("{}", soak::table(std::slice::from_ref(&report)));
    print!("{}", report.warnings());
    let mut failures = report.error_failures();
    failures.extend(report.drain_failures());
    assert!(failures.is_empty(), "{failures:#?}");
    // The churn did its work: requests, watches both ended and dropped, namespaces gone.
    let c = &report.counts;
    assert!(c.requests > 500, "{c:?}");
    assert!(
        c.watches_abandoned > 0 && c.watches > c.watches_abandoned,
        "{c:?}"
    );
    assert!(c.namespaces_gone > 0, "{c:?}");
}

#[test]
fn soak_embedded() {
    short_soak(BackendKind::Embedded);
}

#[test]
fn soak_etcd() {
    short_soak(BackendKind::Etcd);
}
