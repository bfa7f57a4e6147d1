//! The server as `apiserver::run` assembles it, on the embedded backend in a temp dir, served
//! on a loopback port of this process.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use apiserver::api::Api;
use apiserver::health::Health;
use axum::serve::ListenerExt;
use registry::options::WriteOptions;
use registry::{Catalogue, Registry};
use serde_json::json;
use storage::CacherConfig;
use test_support::TestBackend;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub const NAMESPACE: &str = "bench";

pub struct Server {
    pub addr: SocketAddr,
    pub registry: Arc<Registry>,
    /// Connections the server accepted: shows whether the clients kept theirs alive.
    pub connections: Arc<AtomicUsize>,
    shutdown: CancellationToken,
    serving: JoinHandle<()>,
    // Held so the store's directory outlives the server.
    _backend: TestBackend,
}

pub async fn start() -> Server {
    let test_backend = TestBackend::embedded().await;
    let backend = storage::backend::open(&test_backend.etcd_servers(), test_backend.data_dir())
        .await
        .expect("open the test backend");
    let registry = Registry::new(
        storage::KvStore::new(backend.clone(), "/registry"),
        Arc::new(Catalogue::builtin()),
        CacherConfig::default(),
    );
    // Writes are validated against the schemas, as in the server.
    registry.set_schemas(apiserver::openapi::for_validation());
    registry.bootstrap().await.expect("bootstrap");
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    registry
        .store("", "v1", "namespaces")
        .expect("namespaces store")
        .create(None, namespace, &WriteOptions::default())
        .await
        .expect("create namespace");
    let shutdown = CancellationToken::new();
    let authorization = apiserver::authz::Authorization::always_allow();
    let api = Api {
        registry: registry.clone(),
        shutdown: shutdown.clone(),
        creaters: apiserver::reviews::creaters(&authorization, &Default::default()),
        components: apiserver::api::component_status::Components {
            backend: Some(backend.clone()),
            controllers: false,
            scheduler: false,
        },
        aggregator: apiserver::aggregator::Aggregator::idle(registry.clone()),
    };
    let health = Health {
        backend,
        shutdown: shutdown.clone(),
        definitions: None,
        probes: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local address");
    let connections = Arc::new(AtomicUsize::new(0));
    let accepted = connections.clone();
    // Only counts: the sockets stay as `run` leaves them (no TCP_NODELAY on the server side).
    let listener = listener.tap_io(move |_| {
        accepted.fetch_add(1, Ordering::Relaxed);
    });
    let stop = shutdown.clone();
    let serving = tokio::spawn(async move {
        axum::serve(
            listener,
            apiserver::server::loopback(apiserver::server::router(
                health,
                api,
                Default::default(),
                Arc::new(openapi::OpenApi::new(Vec::new())),
                authorization,
                None,
            )),
        )
        .with_graceful_shutdown(stop.cancelled_owned())
        .await
        .expect("serve");
    });
    Server {
        addr,
        registry,
        connections,
        shutdown,
        serving,
        _backend: test_backend,
    }
}

impl Server {
    pub async fn stop(self) {
        self.shutdown.cancel();
        // Idle keep-alive connections close on shutdown; a stuck one must not hang the bench.
        if tokio::time::timeout(Duration::from_secs(5), self.serving)
            .await
            .is_err()
        {
            eprintln!("server did not stop within 5 s");
        }
    }
}
