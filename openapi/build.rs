//! Generates the definitions of every built-in kind at build time, into `builtin.json`, which
//! the library embeds: k8s-openapi and schemars run here only, compiled unoptimized as build
//! dependencies are, and the server parses a ready document instead of linking them.
//!
//! The schemas come from k8s-openapi; the x-kubernetes-* extensions they lack
//! (+patchStrategy, +listType, ... markers) and the List kinds' descriptions come from the
//! comments of the `.proto` definitions k8s-rs-pb ships, which also give every type's JSON
//! field order (the Go struct's, which upstream's responses follow).

#[path = "build/discover.rs"]
mod discover;
#[path = "build/kinds.rs"]
mod kinds;
#[path = "build/lists.rs"]
mod lists;
#[path = "build/markers.rs"]
mod markers;
#[path = "build/patch_meta.rs"]
mod patch_meta;
#[path = "build/protos.rs"]
mod protos;
#[path = "build/schemas.rs"]
mod schemas;
#[path = "build/wire_order.rs"]
mod wire_order;

use std::path::PathBuf;

/// The Kubernetes release whose API we describe; the same as k8s-openapi's `v1_35` feature
/// and the apiserver's protobuf definitions.
const API_RELEASE: &str = "v1_35";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dirs = package_dirs::package_dirs(&["k8s-openapi", "k8s-rs-pb"]);

    discover::check(&dirs[0].join("src").join(API_RELEASE));
    let tables = protos::read(&dirs[1].join("src").join(API_RELEASE));
    let builtin = schemas::generate(&tables);
    let json = serde_json::to_vec(&builtin).expect("a Value serializes");
    std::fs::write(out.join("builtin.json"), json).expect("write builtin.json");

    let kinds: Vec<(String, String, String, String)> =
        serde_json::from_value(builtin["kinds"].clone()).expect("kinds are 4-tuples of strings");
    let definitions = builtin["definitions"]
        .as_object()
        .expect("definitions are a map");
    let patch_meta = patch_meta::generate(definitions, &kinds);
    std::fs::write(out.join("patch_meta.rs"), patch_meta).expect("write patch_meta.rs");
    let wire = wire_order::generate(&dirs[1].join("src").join(API_RELEASE), definitions, &kinds);
    std::fs::write(out.join("wire_order.rs"), wire).expect("write wire_order.rs");
}
