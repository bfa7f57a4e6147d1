//! Storage for one test or benchmark: the embedded store's temp dir or a real etcd, both
//! removed on drop. The crate under test opens its backend on it with
//! `storage::backend::open(&t.etcd_servers(), t.data_dir())`, as the server opens its own
//! from its flags; this crate knows nothing of the storage layer.

use std::path::Path;

use tempfile::TempDir;

use crate::EtcdServer;

/// Which backend: benchmarks run on those the environment names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Embedded,
    Etcd,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Embedded => "embedded",
            Self::Etcd => "etcd",
        }
    }

    /// Those of `kinds`, in their order, that the environment variable `var` names
    /// (comma-separated); all of them when it is unset.
    pub fn chosen(var: &str, kinds: &[BackendKind]) -> Vec<BackendKind> {
        let wanted = std::env::var(var).ok();
        kinds
            .iter()
            .copied()
            .filter(|kind| wanted.as_deref().is_none_or(|w| w.contains(kind.name())))
            .collect()
    }
}

pub enum TestBackend {
    Embedded(TempDir),
    Etcd(EtcdServer),
}

impl TestBackend {
    /// A fresh temp dir for the embedded store.
    pub async fn embedded() -> Self {
        Self::Embedded(tempfile::tempdir().expect("temp dir"))
    }

    /// A real etcd of its own, started on free loopback ports.
    pub async fn etcd() -> Self {
        Self::Etcd(EtcdServer::start().await)
    }

    pub async fn open(kind: BackendKind) -> Self {
        match kind {
            BackendKind::Embedded => Self::embedded().await,
            BackendKind::Etcd => Self::etcd().await,
        }
    }

    /// `--etcd-servers`: the etcd's endpoint, none for the embedded store.
    pub fn etcd_servers(&self) -> Vec<String> {
        match self {
            Self::Etcd(etcd) => vec![etcd.endpoint()],
            Self::Embedded(_) => Vec::new(),
        }
    }

    /// `--data-dir`: where the embedded store keeps its file (for etcd, a dir of its own
    /// that nothing uses).
    pub fn data_dir(&self) -> &Path {
        match self {
            Self::Embedded(dir) => dir.path(),
            Self::Etcd(etcd) => etcd.dir(),
        }
    }

    pub fn etcd_server(&self) -> Option<&EtcdServer> {
        match self {
            Self::Etcd(etcd) => Some(etcd),
            Self::Embedded(_) => None,
        }
    }

    /// For stopping and restarting etcd under a backend, whose client reconnects by itself.
    pub fn etcd_server_mut(&mut self) -> Option<&mut EtcdServer> {
        match self {
            Self::Etcd(etcd) => Some(etcd),
            Self::Embedded(_) => None,
        }
    }
}
