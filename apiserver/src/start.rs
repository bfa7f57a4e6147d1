//! Starting the server: storage, registry, the HTTP listener, the kubeconfig; and a graceful
//! stop on SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::controllers::informer::{InformerConfig, InformerFactory};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::controllers::{self, ControllerOptions};
use crate::health::Health;
use crate::options::Options;
use crate::{api, kubeconfig, server};

#[derive(Debug, Error)]
pub enum StartError {
    #[error("storage: {0}")]
    Storage(#[from] storage::StorageError),
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("serving: {0}")]
    Serve(std::io::Error),
    #[error("registry: {0}")]
    Registry(#[from] registry::RegistryError),
    #[error("writing kubeconfig {path}: {source}")]
    Kubeconfig {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// How long start waits for the stored definitions before serving without them.
const DEFINITIONS_SYNC: Duration = Duration::from_secs(10);

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(options: Options) -> Result<(), StartError> {
    let started = Instant::now();
    let backend = storage::backend::open(&options.etcd_servers, &options.data_dir).await?;
    if !options.etcd_compaction_interval.is_zero() {
        storage::spawn_compactor(backend.clone(), options.etcd_compaction_interval);
    }
    let root = storage::KvStore::new(backend.clone(), &options.etcd_prefix);
    let registry = registry::Registry::with_config(
        root,
        Arc::new(registry::Catalogue::builtin()),
        storage::CacherConfig::default(),
        registry::strategy::StrategyConfig {
            event_ttl: options.event_ttl,
            services: registry::service::ServiceNetwork {
                cluster_ips: options.service_cluster_ip_range,
                node_ports: options.service_node_port_range,
            },
        },
    );
    apiextensions::install(&registry);
    registry.set_schemas(crate::openapi::for_validation());
    registry.bootstrap().await?;
    if let Err(e) = crate::storage_class::ensure_default(&registry).await {
        tracing::warn!(error = %e, "could not create the default storage class");
    }
    // The server's one cancellation: watches, the controllers and readiness all follow it.
    let shutdown = CancellationToken::new();
    // One informer per resource for every controller in the process.
    let informers = InformerFactory::new(registry.clone(), InformerConfig::default());
    let controllers = controllers::start(
        informers.clone(),
        ControllerOptions {
            enabled: !options.disable_controllers,
            leader_elect: options.leader_elect,
            lease_duration: options.leader_elect_lease_duration,
            renew_deadline: options.leader_elect_renew_deadline,
            retry_period: options.leader_elect_retry_period,
            scheduler: options.scheduler,
            nodes: kubelet::NodeConfig {
                count: options.nodes,
                name_prefix: options.node_name_prefix.clone(),
                cpu: options.node_cpu.clone(),
                memory: options.node_memory.clone(),
                pods: options.node_pods,
                cluster_cidr: options.cluster_cidr.clone(),
                network: kubelet::network::NetworkPluginSettings {
                    conf_dir: options.cni_conf_dir.clone(),
                    bin_dirs: kubelet::network::split_dirs(&options.cni_bin_dir),
                    ..Default::default()
                },
                ..Default::default()
            },
        },
        shutdown.clone(),
    );
    let openapi = crate::openapi::for_catalogue(registry.catalogue());
    let definitions = crate::custom_resources::start(&informers, openapi.clone(), shutdown.clone());
    if let Some(definitions) = &definitions {
        // Serve custom resources from the first request, as upstream's readiness does.
        let synced = tokio::time::timeout(DEFINITIONS_SYNC, definitions.wait_for_sync()).await;
        if synced.is_err() {
            tracing::warn!("custom resource definitions not synced yet; starting without them");
        }
    }
    let api = api::Api {
        registry: registry.clone(),
        shutdown: shutdown.clone(),
    };
    let health = Health {
        backend: backend.clone(),
        shutdown: shutdown.clone(),
        definitions,
    };
    let addr = SocketAddr::new(options.bind_address, options.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Listen { addr, source })?;
    let local = listener.local_addr().unwrap_or(addr);
    let advertise = options
        .advertise_address
        .or(Some(options.bind_address).filter(|a| !a.is_unspecified()))
        .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
    crate::kubernetes_service::start(registry, advertise, local.port(), shutdown.clone());
    let kubeconfig = options
        .write_kubeconfig
        .clone()
        .unwrap_or_else(|| options.data_dir.join("kubeconfig"));
    kubeconfig::write(&kubeconfig, local).map_err(|source| StartError::Kubeconfig {
        path: kubeconfig.clone(),
        source,
    })?;
    info!(
        address = %local,
        storage = backend.name(),
        etcd_servers = ?options.etcd_servers,
        data_dir = %options.data_dir.display(),
        prefix = %options.etcd_prefix,
        kubeconfig = %kubeconfig.display(),
        startup_ms = started.elapsed().as_millis() as u64,
        "serving"
    );
    // Watch events are small writes; without TCP_NODELAY one can wait behind the previous.
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        let _ = stream.set_nodelay(true);
    });
    let served = axum::serve(
        listener,
        server::router(health, api, controllers.clone(), openapi),
    )
    .with_graceful_shutdown(async move {
        shutdown_signal().await;
        // Fails readiness, ends open watches and stops the controllers, so graceful shutdown
        // does not wait on them.
        shutdown.cancel();
        info!("shutting down");
    })
    .await
    .map_err(StartError::Serve);
    controllers.stopped(Duration::from_secs(5)).await;
    informers.stop().await;
    served
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
