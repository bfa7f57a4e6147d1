//! The fuzz targets on stable, as CI runs them (`.ci/run`): every committed corpus input,
//! then `FUZZ_REPLAY_ITERATIONS` (default 2000) deterministic mutations of them per target.
//! A failure names the input, in the form `cargo fuzz run <target> <file>` takes back.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use request_fuzz::mutate::{mutate, Rng};

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect()
}

fn replay(target: &str) {
    let run = request_fuzz::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, run)| *run)
        .expect("a known target");
    let seeds = corpus(target);
    assert!(!seeds.is_empty(), "{target} has a corpus");
    let iterations: usize = std::env::var("FUZZ_REPLAY_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let mut rng = Rng::new(target);
    let mutated = (0..iterations).map(|_| {
        let seed = &seeds[rng.below(seeds.len())];
        mutate(&mut rng, seed, &seeds)
    });
    for input in seeds.clone().into_iter().chain(mutated) {
        if catch_unwind(AssertUnwindSafe(|| run(&input))).is_err() {
            let file = std::env::temp_dir().join(format!("crash-{target}"));
            let _ = std::fs::write(&file, &input);
            panic!(
                "{target} failed on {:?} (written to {})",
                String::from_utf8_lossy(&input),
                file.display()
            );
        }
    }
}

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(#[test]
        fn $name() {
            replay(stringify!($name));
        })*

        #[test]
        fn every_target_is_replayed() {
            let replayed = [$(stringify!($name)),*];
            let all: Vec<&str> = request_fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
            assert_eq!(all, replayed);
        }
    };
}

targets!(
    apply,
    audit_policy,
    authn,
    body,
    cel,
    encryption_config,
    list_options,
    patch,
    protobuf,
    request_info,
    selectors,
);
