//! A backend for one test or benchmark, with what it runs on: the embedded store's temp dir
//! or a real etcd, both removed on drop.

use std::path::Path;
use std::sync::Arc;

use storage::backend::etcd::EtcdBackend;
use storage::backend::DynBackend;
use storage::embedded::EmbeddedBackend;
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

pub struct TestBackend {
    backend: DynBackend,
    home: Home,
}

enum Home {
    Dir(TempDir),
    Etcd(EtcdServer),
}

impl TestBackend {
    /// The embedded store in a fresh temp dir.
    pub async fn embedded() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let backend = EmbeddedBackend::open(dir.path()).expect("open embedded");
        Self {
            backend: Arc::new(backend),
            home: Home::Dir(dir),
        }
    }

    /// A real etcd of its own, started on free loopback ports.
    pub async fn etcd() -> Self {
        let etcd = EtcdServer::start().await;
        Self {
            backend: Arc::new(etcd.backend().await),
            home: Home::Etcd(etcd),
        }
    }

    pub async fn open(kind: BackendKind) -> Self {
        match kind {
            BackendKind::Embedded => Self::embedded().await,
            BackendKind::Etcd => Self::etcd().await,
        }
    }

    pub fn backend(&self) -> DynBackend {
        self.backend.clone()
    }

    /// The embedded store's directory.
    pub fn dir(&self) -> Option<&Path> {
        match &self.home {
            Home::Dir(dir) => Some(dir.path()),
            Home::Etcd(_) => None,
        }
    }

    pub fn etcd_server(&self) -> Option<&EtcdServer> {
        match &self.home {
            Home::Etcd(etcd) => Some(etcd),
            Home::Dir(_) => None,
        }
    }

    /// For stopping and restarting etcd under the backend, whose client reconnects by itself.
    pub fn etcd_server_mut(&mut self) -> Option<&mut EtcdServer> {
        match &mut self.home {
            Home::Etcd(etcd) => Some(etcd),
            Home::Dir(_) => None,
        }
    }

    /// A second client of the etcd, for what the backend does not expose (its raw client).
    pub async fn etcd_backend(&self) -> Option<EtcdBackend> {
        match self.etcd_server() {
            Some(etcd) => Some(etcd.backend().await),
            None => None,
        }
    }
}
