//! For build scripts: where cargo unpacked the sources of dependencies whose data files
//! (not their code) a build reads, such as the Kubernetes API `.proto` definitions.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The source directory of each named package, in the order asked.
pub fn package_dirs(names: &[&str]) -> Vec<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("manifest dir"))
        .join("Cargo.toml");
    // Only this platform's packages: the others may never have been downloaded.
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .arg("--filter-platform")
        .arg(target)
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    names
        .iter()
        .map(|name| {
            let package = packages
                .iter()
                .find(|p| p["name"] == *name)
                .unwrap_or_else(|| panic!("{name} is not a dependency"));
            let path = package["manifest_path"].as_str().expect("manifest_path");
            Path::new(path)
                .parent()
                .expect("a manifest lives in a directory")
                .to_path_buf()
        })
        .collect()
}

/// The source directory of one package.
pub fn package_dir(name: &str) -> PathBuf {
    package_dirs(&[name]).remove(0)
}
