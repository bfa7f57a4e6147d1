//! A registry over a real backend: the embedded store in a temp dir, or a real etcd.

#![allow(dead_code)]

pub mod workloads;

use std::sync::Arc;

use registry::options::{DeleteOptions, DryRun, ListOptions, WriteOptions};
use registry::{Catalogue, Registry, Store};
use storage::backend::DynBackend;
use storage::CacherConfig;
use test_support::{FromBackend, TestBackend};

pub struct Harness {
    pub registry: Arc<Registry>,
    pub test_backend: TestBackend,
}

impl FromBackend for Harness {
    async fn from_backend(test_backend: TestBackend) -> Self {
        let backend = storage::backend::open(&test_backend.etcd_servers(), test_backend.data_dir())
            .await
            .expect("open the test backend");
        Self::over(test_backend, backend, CacherConfig::default()).await
    }
}

impl Harness {
    /// A registry over `backend`, which may wrap the test backend's (a fault injector).
    pub async fn over(test_backend: TestBackend, backend: DynBackend, cache: CacherConfig) -> Self {
        let root = storage::KvStore::new(backend, "/registry");
        let registry = Registry::new(root, Arc::new(Catalogue::builtin()), cache);
        // Writes are checked against the built-in schemas, as the server checks them.
        registry.set_schemas(Arc::new(openapi::OpenApi::new(Vec::new())));
        registry.bootstrap().await.expect("bootstrap");
        Self {
            registry,
            test_backend,
        }
    }

    pub fn store(&self, group: &str, plural: &str) -> Arc<Store> {
        // Every resource served so far is at v1 of its group.
        self.registry
            .store(group, "v1", plural)
            .unwrap_or_else(|| panic!("no store for {group}/{plural}"))
    }

    pub async fn namespace(&self, name: &str) {
        self.store("", "namespaces")
            .create(
                None,
                serde_json::json!({"metadata": {"name": name}}),
                &WriteOptions::default(),
            )
            .await
            .expect("create namespace");
    }
}

pub fn write() -> WriteOptions {
    WriteOptions::default()
}

pub fn dry_run() -> WriteOptions {
    WriteOptions {
        dry_run: DryRun::All,
        ..Default::default()
    }
}

pub fn list() -> ListOptions {
    ListOptions::default()
}

pub fn delete() -> DeleteOptions {
    DeleteOptions::default()
}
