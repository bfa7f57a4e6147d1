//! For unit tests: a bootstrapped registry over the test backend (the embedded store in a temp
//! dir, or etcd), as the server builds it, without HTTP.

use std::sync::Arc;

use registry::{Catalogue, Registry};
use storage::CacherConfig;
use test_support::TestBackend;

pub async fn registry(backend: &TestBackend) -> Arc<Registry> {
    let kv = storage::backend::open(&backend.etcd_servers(), backend.data_dir())
        .await
        .expect("open the test backend");
    let root = storage::KvStore::new(kv, "/registry");
    let registry = Registry::new(
        root,
        Arc::new(Catalogue::builtin()),
        CacherConfig::default(),
    );
    registry.set_schemas(Arc::new(openapi::OpenApi::new(Vec::new())));
    registry.bootstrap().await.expect("bootstrap");
    registry
}
