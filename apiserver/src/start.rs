//! Starting the server: storage, registry, the HTTPS listener (secure port) and the loopback
//! HTTP one, the kubeconfig; and a graceful stop on SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::informer::{InformerConfig, InformerFactory};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::controllers::{self, ControllerOptions};
use crate::health::Health;
use crate::options::Options;
use crate::tls::certs::CertError;
use crate::tls::serving::TlsListener;
use crate::{api, authn, authz, kubeconfig, reviews, server, service_account_keys, tls};

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
    #[error("TLS: {0}")]
    Tls(#[from] CertError),
    #[error("authentication: {0}")]
    Authentication(#[from] authn::TokenFileError),
    #[error("service account tokens: {0}")]
    ServiceAccountKeys(#[from] service_account_keys::KeyError),
    #[error("--encryption-provider-config: {0}")]
    Encryption(storage::StorageError),
    #[error("audit: {0}")]
    Audit(#[from] crate::audit::AuditError),
    #[error("--authorization-mode: {0}")]
    AuthorizationMode(#[from] authz::ModeError),
    #[error("admission: {0}")]
    Admission(#[from] registry::admission::PluginConfigError),
    #[error("--scheduler-config {path}: {source}")]
    SchedulerConfigFile {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("--scheduler-config {path}: {source}")]
    SchedulerConfig {
        path: std::path::PathBuf,
        source: scheduler::SchedulerError,
    },
    #[error("--controllers: {0}")]
    Controllers(#[from] controllers::UnknownController),
    #[error(
        "--bind-address {address} is not a loopback address, and plain HTTP (--port {port}) serves \
         without authentication: it is only served on loopback. Pass --port 0 to serve only \
         HTTPS (--secure-port) on {address}, or bind a loopback address"
    )]
    InsecureBind {
        address: std::net::IpAddr,
        port: u16,
    },
    #[error("--port 0 and --secure-port 0: nothing to serve")]
    NoPort,
    #[error("writing kubeconfig {path}: {source}")]
    Kubeconfig {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// How long start waits for the stored definitions before serving without them.
const DEFINITIONS_SYNC: Duration = Duration::from_secs(10);

/// The scheduler's configuration: the defaults, or what the `--scheduler-config` file says.
fn scheduler_config(
    path: Option<&std::path::Path>,
) -> Result<scheduler::SchedulerConfig, StartError> {
    let Some(path) = path else {
        return Ok(scheduler::SchedulerConfig::default());
    };
    let text = std::fs::read_to_string(path).map_err(|source| StartError::SchedulerConfigFile {
        path: path.to_path_buf(),
        source,
    })?;
    scheduler::SchedulerConfig::from_config_file(&text).map_err(|source| {
        StartError::SchedulerConfig {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(options: Options) -> Result<(), StartError> {
    let started = Instant::now();
    if options.port != 0 && !options.bind_address.is_loopback() {
        return Err(StartError::InsecureBind {
            address: options.bind_address,
            port: options.port,
        });
    }
    if options.port == 0 && options.secure_port == 0 {
        return Err(StartError::NoPort);
    }
    // A bad --token-auth-file fails at once, before anything is set up.
    let mut authenticator = authn::Authenticator::from_options(&options)?;
    let auditor = crate::audit::Auditor::from_options(&options)?;
    let authorization_modes = authz::Mode::parse_list(&options.authorization_mode)?;
    let admission = registry::admission::resolve(
        &options.enable_admission_plugins,
        &options.disable_admission_plugins,
    )?;
    let admission_config = registry::admission::configure(
        options.admission_control_config_file.as_deref(),
        &admission.enabled,
    )?;
    let selection = controllers::Selection::parse(&options.controllers)?;
    // A bad --encryption-provider-config too.
    let encryption = match &options.encryption_provider_config {
        Some(path) => Some(
            storage::encryption::EncryptionConfig::load(path).map_err(StartError::Encryption)?,
        ),
        None => None,
    };
    // A bad --scheduler-config too.
    let scheduler_config = scheduler_config(options.scheduler_config.as_deref())?;
    // Certificates first: a bad --tls-cert-file fails at once, before storage opens.
    let secure = tls::prepare(&options)?;
    let front_proxy = tls::front_proxy::prepare(&options)?;
    let service_account_tokens = service_account_keys::prepare(&options)?;
    let backend = storage::backend::open(&options.etcd_servers, &options.data_dir).await?;
    if !options.etcd_compaction_interval.is_zero() {
        storage::spawn_compactor(backend.clone(), options.etcd_compaction_interval);
    }
    let mut root = storage::KvStore::new(backend.clone(), &options.etcd_prefix);
    if let Some(config) = encryption {
        root = root.with_encryption(Arc::new(storage::encryption::Routes::new(config)));
    }
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
    registry.set_service_account_tokens(service_account_tokens);
    authenticator.service_accounts = Some(registry.clone());
    let authenticator = Arc::new(authenticator);
    registry.set_schemas(crate::openapi::for_validation());
    registry.bootstrap().await?;
    if let Err(e) = ::controllers::volume::ensure_default_class(&registry).await {
        tracing::warn!(error = %e, "could not create the default storage class");
    }
    // Upstream's rbac/bootstrap-roles post-start hook, finished before anything is served, so
    // the first request (and readiness) finds the default roles and bindings in place.
    let rbac = registry::rbac::bootstrap::reconcile(&registry).await?;
    if !rbac.failures.is_empty() {
        tracing::error!(failures = ?rbac.failures, "the bootstrap RBAC policy is incomplete");
    }
    // The configured chain takes over once the server's own initial state (system
    // namespaces, bootstrap policy, default class) is written, so that a chain refusing
    // writes (AlwaysDeny) still leaves a server that starts and answers.
    if !admission.unavailable.is_empty() {
        tracing::info!(plugins = ?admission.unavailable, "default admission plugins not built in this server");
    }
    registry.set_admission_configuration(admission_config);
    // The webhook plugins are built here (they call out over HTTPS) and handed to the chain;
    // they follow their configurations once the informers run.
    let webhooks = crate::webhooks::Webhooks::provide(&registry);
    let policies = crate::policies::Policies::provide(&registry);
    registry.set_admission_plugins(&admission.enabled);
    // The server's one cancellation: watches, the controllers and readiness all follow it.
    let shutdown = CancellationToken::new();
    // API Priority and Fairness' configuration producer keeps its objects after the first
    // pass (made in bootstrap) for as long as the server runs.
    let producer = registry.clone();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            () = producer.keep_flow_control() => {}
        }
    });
    let authorization = start_authorization(&registry, &authorization_modes, &shutdown).await?;
    // Admission plugins that ask authorization (CertificateApproval) ask this chain.
    registry.set_authorizer(authorization.authorizer.clone());
    // One informer per resource for every controller in the process.
    let informers = InformerFactory::new(registry.clone(), InformerConfig::default());
    for plugin in &webhooks {
        plugin.watch(&informers, shutdown.clone());
    }
    policies.watch(&informers, shutdown.clone());
    if let Some(consumer) = crate::flow_control::DanglingConditions::new(&informers) {
        tokio::spawn(consumer.run(shutdown.clone()));
    }
    // With API Priority and Fairness the two in-flight limits add up to the server's seats
    // (upstream's total concurrency), shared among the priority levels.
    let flow_control = options.enable_priority_and_fairness.then(|| {
        let seats = options.max_requests_inflight + options.max_mutating_requests_inflight;
        let timeout = Some(options.request_timeout).filter(|t| !t.is_zero());
        let flow_control = crate::flow_control::FlowControl::new(
            u32::try_from(seats).unwrap_or(u32::MAX),
            timeout,
        );
        flow_control.run(&informers, shutdown.clone());
        flow_control
    });
    // The aggregator before the controllers: the autoscaler reads the metrics API through it.
    let aggregator = crate::aggregator::Aggregator::new(registry.clone(), front_proxy);
    publish_authentication_info(&options, secure.is_some(), &aggregator).await;
    aggregator.serve_locally(crate::metrics_api::MetricsApi::new(registry.clone()));
    let resource_metrics = ::controllers::podautoscaler::source::MetricsClient(
        crate::metrics_api::client::AggregatedMetrics::new(aggregator.clone()),
    );
    let controllers = controllers::start(
        informers.clone(),
        ControllerOptions {
            enabled: !options.disable_controllers,
            selection,
            leader_elect: options.leader_elect,
            lease_duration: options.leader_elect_lease_duration,
            renew_deadline: options.leader_elect_renew_deadline,
            retry_period: options.leader_elect_retry_period,
            scheduler: options.scheduler,
            scheduler_config,
            root_ca: secure.as_ref().map(|s| s.trusted_pem.clone()),
            signing: signing_ca(&options, secure.as_ref())?,
            hpa_sync_period: options.horizontal_pod_autoscaler_sync_period,
            resource_metrics: Some(resource_metrics),
            nodes: kubelet::NodeConfig {
                count: options.nodes,
                name_prefix: options.node_name_prefix.clone(),
                cpu: options.node_cpu.clone(),
                memory: options.node_memory.clone(),
                pods: options.node_pods,
                devices: options.node_devices,
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
    aggregator.start(
        &informers,
        options.apiservice_check_period,
        shutdown.clone(),
    );
    crate::aggregator::available::start(
        aggregator.clone(),
        &informers,
        options.apiservice_check_period,
        shutdown.clone(),
    );
    let api = api::Api {
        registry: registry.clone(),
        shutdown: shutdown.clone(),
        creaters: reviews::creaters(&authorization, &authenticator),
        components: api::component_status::Components {
            backend: Some(backend.clone()),
            controllers: !options.disable_controllers,
            scheduler: !options.disable_controllers && options.scheduler,
        },
        aggregator,
    };
    let health = Health {
        backend: backend.clone(),
        shutdown: shutdown.clone(),
        definitions,
        probes: Default::default(),
    };
    let plain = match options.port {
        0 => None,
        port => Some(bind(SocketAddr::new(options.bind_address, port)).await?),
    };
    let tls = match (&secure, options.secure_port) {
        (Some(_), port) if port != 0 => {
            Some(bind(SocketAddr::new(options.bind_address, port)).await?)
        }
        _ => None,
    };
    let local = |l: &tokio::net::TcpListener, port| {
        l.local_addr()
            .unwrap_or(SocketAddr::new(options.bind_address, port))
    };
    let plain_addr = plain.as_ref().map(|l| local(l, options.port));
    let secure_addr = tls.as_ref().map(|l| local(l, options.secure_port));
    let advertise = options
        .advertise_address
        .or(Some(options.bind_address).filter(|a| !a.is_unspecified()))
        .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
    // The `kubernetes` Service leads to the secure port, as upstream's; to the loopback HTTP
    // one only when HTTPS is off.
    let service_port = secure_addr.or(plain_addr).map(|a| a.port()).unwrap_or(0);
    crate::kubernetes_service::start(registry, advertise, service_port, shutdown.clone());
    let kubeconfig = options
        .write_kubeconfig
        .clone()
        .unwrap_or_else(|| options.data_dir.join("kubeconfig"));
    let written = match (&secure, secure_addr, plain_addr) {
        (Some(secure), Some(addr), _) => {
            let client = secure
                .admin
                .as_ref()
                .map(|(cert, key)| (cert.as_str(), key.as_str()));
            if client.is_none() {
                tracing::warn!(
                    "--client-ca-file is not the server's CA: the written kubeconfig has no client certificate (anonymous)"
                );
            }
            let tls = kubeconfig::Tls {
                ca_pem: &secure.trusted_pem,
                client,
            };
            kubeconfig::write(&kubeconfig, addr, Some(tls))
        }
        (_, _, Some(addr)) => kubeconfig::write(&kubeconfig, addr, None),
        _ => Ok(()),
    };
    written.map_err(|source| StartError::Kubeconfig {
        path: kubeconfig.clone(),
        source,
    })?;
    info!(
        address = ?plain_addr,
        secure_address = ?secure_addr,
        storage = backend.name(),
        etcd_servers = ?options.etcd_servers,
        data_dir = %options.data_dir.display(),
        prefix = %options.etcd_prefix,
        kubeconfig = %kubeconfig.display(),
        startup_ms = started.elapsed().as_millis() as u64,
        "serving"
    );
    // The max-in-flight gates only without API Priority and Fairness, as upstream.
    let (read_only, mutating) = match &flow_control {
        Some(_) => (0, 0),
        None => (
            options.max_requests_inflight,
            options.max_mutating_requests_inflight,
        ),
    };
    let limits = crate::limits::Limits::new(
        read_only,
        mutating,
        options.request_timeout,
        api.registry.clone(),
    );
    let router = limits.layer(server::router(
        health,
        api,
        controllers.clone(),
        openapi,
        authorization,
        flow_control,
    ));
    // Audit right after authentication (the listeners' layers), as upstream: it sees the
    // authenticated user, and requests the in-flight limits refuse.
    let router = match &auditor {
        Some(auditor) => auditor.layer(router),
        None => router,
    };
    // One stop for both listeners: it fails readiness, ends open watches and stops the
    // controllers, so graceful shutdown does not wait on them.
    let signalled = shutdown.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        signalled.cancel();
        info!("shutting down");
    });
    let plain_served = async {
        let Some(listener) = plain else {
            return Ok(());
        };
        // Watch events are small writes; without TCP_NODELAY one can wait behind the previous.
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
            let _ = stream.set_nodelay(true);
        });
        axum::serve(
            listener,
            server::loopback(router.clone()).into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(shutdown.clone().cancelled_owned())
        .await
    };
    let secure_served = async {
        let (Some(listener), Some(secure)) = (tls, &secure) else {
            return Ok(());
        };
        let listener = TlsListener::spawn(listener, secure.config.clone(), shutdown.clone());
        axum::serve(
            listener,
            server::secure(router.clone(), authenticator.clone())
                .into_make_service_with_connect_info::<authn::Peer>(),
        )
        .with_graceful_shutdown(shutdown.clone().cancelled_owned())
        .await
    };
    let served = tokio::try_join!(plain_served, secure_served)
        .map(|_| ())
        .map_err(StartError::Serve);
    controllers.stopped(Duration::from_secs(5)).await;
    informers.stop().await;
    if let Some(auditor) = &auditor {
        auditor.stop().await;
    }
    served
}

/// The ConfigMap aggregated servers read their trust from: the client CA (the flag's, or
/// the server's own with secure serving) and the front proxy's.
async fn publish_authentication_info(
    options: &Options,
    secure: bool,
    aggregator: &crate::aggregator::Aggregator,
) {
    let client_ca = match &options.client_ca_file {
        Some(path) => tls::certs::read(path).ok(),
        None if secure => {
            let pki = tls::certs::Pki::in_dir(options.data_dir.join("pki"));
            tls::certs::read(&pki.ca_cert()).ok()
        }
        None => None,
    };
    if let Err(e) = crate::aggregator::authentication_info::publish(
        aggregator.registry(),
        client_ca.as_deref(),
        &aggregator.front_proxy,
    )
    .await
    {
        tracing::warn!(error = %e, "could not publish kube-system/extension-apiserver-authentication");
    }
}

/// How long start waits for the RBAC authorizer's first list of roles and bindings.
const RBAC_SYNC: Duration = Duration::from_secs(30);

/// The authorizer chain of `--authorization-mode`, and the RBAC escalation checks on role and
/// binding writes. RBAC's index runs whatever the modes, as upstream's escalation checks
/// resolve the writer's rules from RBAC alone; it is in the chain only with mode RBAC.
/// The CA the certificate signers issue with: --cluster-signing-cert-file's, else the
/// server's own.
fn signing_ca(
    options: &Options,
    secure: Option<&tls::SecureServing>,
) -> Result<Option<(String, String, std::time::Duration)>, StartError> {
    let duration = options.cluster_signing_duration;
    if let (Some(cert), Some(key)) = (
        &options.cluster_signing_cert_file,
        &options.cluster_signing_key_file,
    ) {
        return Ok(Some((
            tls::certs::read(cert)?,
            tls::certs::read(key)?,
            duration,
        )));
    }
    Ok(secure
        .and_then(|s| s.own_ca.clone())
        .map(|(cert, key)| (cert, key, duration)))
}

async fn start_authorization(
    registry: &Arc<registry::Registry>,
    modes: &[authz::Mode],
    shutdown: &CancellationToken,
) -> Result<authz::Authorization, StartError> {
    let rbac = registry::rbac::RbacAuthorizer::new(registry)?;
    tokio::spawn(rbac.clone().run(shutdown.clone()));
    if tokio::time::timeout(RBAC_SYNC, rbac.synced())
        .await
        .is_err()
    {
        tracing::warn!("RBAC roles and bindings not listed yet; serving without them");
    }
    let in_chain = modes
        .contains(&authz::Mode::Rbac)
        .then(|| rbac.clone() as Arc<dyn registry::auth::Authorizer>);
    let authorization = authz::Authorization::new(modes, in_chain);
    registry::rbac::install_escalation_checks(registry, rbac, authorization.authorizer.clone());
    info!(modes = ?modes, "authorization");
    Ok(authorization)
}

async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, StartError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Listen { addr, source })
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
