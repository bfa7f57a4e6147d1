//! The bodies of the fuzz targets, one module per area a request reaches. Each `run` takes
//! the raw input, calls the server's real entry points and checks what must hold whatever
//! the input (no panic; refusals are 4xx; canonical forms re-read the same). The libFuzzer
//! binaries in `fuzz_targets/` and the stable replay test (`tests/replay.rs`) both call them.

pub mod mutate;

pub mod apply;
pub mod audit_policy;
pub mod authn;
pub mod body;
pub mod cel;
pub mod encryption_config;
pub mod list_options;
pub mod patch;
pub mod protobuf;
pub mod request_info;
pub mod selectors;

/// Every target by name, as `fuzz_targets/<name>.rs` and `corpus/<name>/` name it.
pub const TARGETS: [(&str, fn(&[u8])); 11] = [
    ("apply", apply::run),
    ("audit_policy", audit_policy::run),
    ("authn", authn::run),
    ("body", body::run),
    ("cel", cel::run),
    ("encryption_config", encryption_config::run),
    ("list_options", list_options::run),
    ("patch", patch::run),
    ("protobuf", protobuf::run),
    ("request_info", request_info::run),
    ("selectors", selectors::run),
];

/// A refusal of bad input must be a client error, never a 5xx.
pub fn assert_client_error(what: &str, e: &registry::RegistryError) {
    let code = e.code();
    assert!(
        (400..500).contains(&code),
        "{what}: bad input answered {code}: {e}"
    );
}

/// The input split at the first `\n%%\n` line: (before, after), or None without one. Targets
/// that take two documents (an object and a patch) read them so.
pub fn split_two(data: &[u8]) -> Option<(&[u8], &[u8])> {
    const SEP: &[u8] = b"\n%%\n";
    let at = data.windows(SEP.len()).position(|w| w == SEP)?;
    Some((&data[..at], &data[at + SEP.len()..]))
}
