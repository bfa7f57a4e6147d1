//! What the tests and benchmarks of every crate need to run on real storage: a real etcd or
//! the embedded store in a temp dir ([`TestBackend`]), etcd behind a link a test can slow or
//! cut ([`EtcdInNetns`]), the same tests generated for both
//! ([`both_backends!`]), polling for a condition ([`eventually`], [`wait_until`]), the
//! figures benchmarks report ([`stats`]), a keep-alive HTTPS client with a bearer token
//! ([`https`]) and the noisy-neighbour measurement of priority and fairness
//! ([`noisy_neighbour`]), the soak under mixed churn ([`soak`]), and the real binary started
//! for a benchmark or a soak ([`server`]).
//!
//! None of the project's crates is a dependency, so that any crate's tests can use this one;
//! what a crate builds on the storage (a backend, a `Registry`) stays in that crate's
//! `tests/support`, as a [`FromBackend`] harness.

mod backend;
mod etcd;
mod etcd_cluster;
mod etcd_netns;
pub mod https;
mod macros;
pub mod noisy_neighbour;
pub mod server;
pub mod soak;
pub mod stats;
pub mod tmpfs;
mod wait;

use std::future::Future;
use std::net::TcpListener;

pub use backend::{BackendKind, TestBackend};
pub use etcd::EtcdServer;
pub use etcd_cluster::EtcdCluster;
pub use etcd_netns::{CutBy, EtcdInNetns};
pub use wait::{eventually, wait_until};

/// A crate's test harness, built over a backend it then owns. The tests [`both_backends!`]
/// generates get theirs from [`embedded`](Self::embedded) and [`etcd`](Self::etcd).
pub trait FromBackend: Sized {
    fn from_backend(backend: TestBackend) -> impl Future<Output = Self>;

    fn embedded() -> impl Future<Output = Self> {
        async { Self::from_backend(TestBackend::embedded().await).await }
    }

    fn etcd() -> impl Future<Output = Self> {
        async { Self::from_backend(TestBackend::etcd().await).await }
    }
}

/// A loopback port free at the time of asking; whoever binds it must cope with losing it to
/// another test in between.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("free port")
}

/// The names of the items of a list object, in its order.
pub fn names(list: &serde_json::Value) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
