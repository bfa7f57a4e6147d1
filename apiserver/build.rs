//! Compiles the Kubernetes API's protobuf definitions into a descriptor set, so the server can
//! decode the protobuf request bodies client-go's typed clients send (kubectl create ...) and
//! encode protobuf answers (`api/protobuf/encode.rs`).
//!
//! The definitions ship inside the `k8s-rs-pb` package (a build dependency); cargo metadata
//! says where cargo unpacked it, and the protoc of `protoc-bin-vendored` compiles them.
//!
//! It also asks the linker for packed relative relocations (DT_RELR) in the server binary.

use std::path::PathBuf;
use std::process::Command;

/// The Kubernetes release whose API definitions we decode.
const API_RELEASE: &str = "v1_35";

/// Every group-version the server serves (their imports come along).
const PROTOS: &[&str] = &[
    "api/core/v1",
    "api/apps/v1",
    "api/batch/v1",
    "api/autoscaling/v1",
    "api/autoscaling/v2",
    "api/networking/v1",
    "api/rbac/v1",
    "api/authentication/v1",
    "api/authorization/v1",
    "api/coordination/v1",
    "api/events/v1",
    "api/policy/v1",
    "api/storage/v1",
    "api/scheduling/v1",
    "api/discovery/v1",
    "api/node/v1",
    "api/certificates/v1",
    "api/admissionregistration/v1",
    // Aggregated discovery documents (APIGroupDiscoveryList).
    "api/apidiscovery/v2",
    "api/apidiscovery/v2beta1",
    "api/flowcontrol/v1",
    "apiextensions_apiserver/pkg/apis/apiextensions/v1",
    "apimachinery/pkg/apis/meta/v1",
    // PartialObjectMetadataList of meta.k8s.io/v1beta1 (metadata clients may ask for it).
    "apimachinery/pkg/apis/meta/v1beta1",
    "apimachinery/pkg/runtime",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    pack_relative_relocations();
    let root = package_dirs::package_dir("k8s-rs-pb")
        .join("src")
        .join(API_RELEASE);
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let protoc = protoc_bin_vendored::protoc_bin_path().expect("protoc-bin-vendored has a protoc");
    let include = protoc_bin_vendored::include_path().expect("protoc-bin-vendored has includes");
    let status = Command::new(protoc)
        .arg("--include_imports")
        .arg(format!(
            "--descriptor_set_out={}",
            out.join("kubernetes.fds").display()
        ))
        .arg(format!("-I{}", root.display()))
        .arg(format!("-I{}", include.display()))
        .args(PROTOS.iter().map(|p| format!("{p}/generated.proto")))
        .status()
        .expect("run protoc");
    assert!(
        status.success(),
        "protoc failed on the Kubernetes API definitions"
    );
}

/// A position-independent binary's pointers in tables (vtables, string tables) are fixed up
/// by the loader from its relocation section, which is read whole at every start: 2.2 MB of
/// the server's resident memory as 24-byte entries, about 30 KB packed. glibc 2.36 and GNU ld
/// 2.38 know the packed form; an older ld ignores the option (with a warning) and an ld that
/// finds no support in the C library leaves the relocations unpacked.
fn pack_relative_relocations() {
    let var = |name| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bin=apiserver=-Wl,-z,pack-relative-relocs");
    }
}
