//! Generates two tables from the sources of our Kubernetes API dependencies, so the library
//! knows every built-in kind and the x-kubernetes-* extensions without a hand-kept list:
//!
//! - `kinds.rs`: every type k8s-openapi marks as a Resource, with whether it has a list kind;
//! - `markers.rs`: the +patchStrategy / +listType / ... markers and the List kinds' comments,
//!   read from the `.proto` definitions k8s-rs-pb ships (k8s-openapi's schemas drop them).

#[path = "build/kinds.rs"]
mod kinds;
#[path = "build/locate.rs"]
mod locate;
#[path = "build/protos.rs"]
mod protos;

use std::path::PathBuf;

/// The Kubernetes release whose API we describe; the same as k8s-openapi's `v1_35` feature
/// and the apiserver's protobuf definitions.
const API_RELEASE: &str = "v1_35";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dirs = locate::package_dirs(&["k8s-openapi", "k8s-rs-pb"]);

    let types = dirs[0].join("src").join(API_RELEASE);
    let kinds = kinds::generate(&types);
    std::fs::write(out.join("kinds.rs"), kinds).expect("write kinds.rs");

    let protos = dirs[1].join("src").join(API_RELEASE);
    let markers = protos::generate(&protos);
    std::fs::write(out.join("markers.rs"), markers).expect("write markers.rs");
}
