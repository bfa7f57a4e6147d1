//! The soak: the release binary with three simulated nodes under a steady mixed churn
//! (ConfigMaps, custom resources, bare pods, Deployments rolled and scaled, namespaces made
//! with content and deleted, watches opened, ended and dropped) for an hour by default, on
//! each backend. Anonymous memory, alive tasks, threads and open fds are sampled every few
//! seconds; the table gives their spread, slope and quarter medians after warm-up, and the
//! requests, errors and races. Exits non-zero on any error or when memory or tasks are not
//! flat (the tolerances and why: `tools/test-support/src/soak/report.rs`).
//!
//! `cargo bench -p apiserver --bench soak -- --minutes 60 --backend both` (`embedded`,
//! `etcd`); the server binary from `APISERVER_BIN`, default the one cargo built.

use std::process::ExitCode;
use std::time::Duration;

use test_support::soak::{self, Config, Report};
use test_support::BackendKind;

fn usage(why: &str) -> ExitCode {
    eprintln!("{why}\nusage: soak [--minutes <n>] [--backend embedded|etcd|both]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let (mut minutes, mut backends) = (60.0, vec![BackendKind::Embedded, BackendKind::Etcd]);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--minutes" => match args.next().and_then(|m| m.parse::<f64>().ok()) {
                Some(m) if m > 0.0 && m.is_finite() => minutes = m,
                _ => return usage("--minutes takes a positive number"),
            },
            "--backend" => {
                backends = match args.next().as_deref() {
                    Some("embedded") => vec![BackendKind::Embedded],
                    Some("etcd") => vec![BackendKind::Etcd],
                    Some("both") => vec![BackendKind::Embedded, BackendKind::Etcd],
                    _ => return usage("--backend takes embedded, etcd or both"),
                }
            }
            // What `cargo bench` adds for harness-less benches.
            "--bench" => {}
            other => return usage(&format!("unknown argument {other}")),
        }
    }
    let bin = test_support::server::binary(env!("CARGO_BIN_EXE_apiserver"));
    let duration = Duration::from_secs_f64(minutes * 60.0);
    let reports: Vec<Report> = backends
        .into_iter()
        .map(|backend| {
            eprintln!("soak {}: {minutes} min", backend.name());
            soak::run(&Config::new(&bin, backend, duration))
        })
        .collect();
    println!();
    println!("{}", soak::table(&reports));
    for report in &reports {
        print!("{}", report.warnings());
    }
    let mut failed = false;
    for report in &reports {
        for failure in report.failures() {
            failed = true;
            println!("{}: FAILED: {failure}", report.backend.name());
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        println!(
            "no errors; memory and tasks flat after warm-up; tasks back to idle after the drain"
        );
        ExitCode::SUCCESS
    }
}
