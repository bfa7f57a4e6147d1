//! A registry over a real backend: the embedded store in a temp dir, or a real etcd.

#![allow(dead_code)]

use std::sync::Arc;

use registry::options::{DeleteOptions, DryRun, ListOptions, WriteOptions};
use registry::{Catalogue, Registry, Store};
use serde_json::Value;
use storage::backend::DynBackend;
use storage::embedded::EmbeddedBackend;
use storage::testing::EtcdServer;
use storage::CacherConfig;

pub struct Harness {
    pub registry: Arc<Registry>,
    pub etcd: Option<EtcdServer>,
    pub dir: Option<tempfile::TempDir>,
}

impl Harness {
    async fn over(backend: DynBackend) -> Arc<Registry> {
        let root = storage::KvStore::new(backend, "/registry");
        let registry = Registry::new(
            root,
            Arc::new(Catalogue::builtin()),
            CacherConfig::default(),
        );
        // Writes are checked against the built-in schemas, as the server checks them.
        registry.set_schemas(Arc::new(openapi::OpenApi::new(Vec::new())));
        registry.bootstrap().await.expect("bootstrap");
        registry
    }

    pub async fn embedded() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let backend: DynBackend = Arc::new(EmbeddedBackend::open(dir.path()).expect("open"));
        Self {
            registry: Self::over(backend).await,
            etcd: None,
            dir: Some(dir),
        }
    }

    pub async fn etcd() -> Self {
        let etcd = EtcdServer::start().await;
        let backend: DynBackend = Arc::new(etcd.backend().await);
        Self {
            registry: Self::over(backend).await,
            etcd: Some(etcd),
            dir: None,
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

pub fn names(list: &Value) -> Vec<String> {
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

/// Runs each named test on both backends.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(&$crate::support::Harness::embedded().await).await;
                }
            )*
        }
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(&$crate::support::Harness::etcd().await).await;
                }
            )*
        }
    };
}

/// Runs each named test on the embedded backend.
#[macro_export]
macro_rules! embedded_only {
    ($($name:ident),* $(,)?) => {
        mod embedded_only {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(&$crate::support::Harness::embedded().await).await;
                }
            )*
        }
    };
}
