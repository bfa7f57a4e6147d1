//! The `Available` condition of every APIService (upstream's local and remote availability
//! controllers). A local one is always available (`Local`). A remote one is checked as
//! upstream checks it: its Service exists (`ServiceNotFound`), a ClusterIP Service listens on
//! the APIService's port (`ServicePortError`), has EndpointSlices (`EndpointsNotFound`) with
//! a ready endpoint for that port (`MissingEndpoints`), and the server answers a GET of
//! `/apis/<group>/<version>` within 5 s, one of five tries at once (`FailedDiscoveryCheck`);
//! then `Passed`. Checked on every APIService change and every period (upstream: 30 s); the
//! status is written only when it changed, the transition time moving only with the status.

use std::sync::Arc;
use std::time::Duration;

use registry::auth::UserInfo;
use registry::options::{ListOptions, WriteOptions};
use registry::{RegistryError, Subresource};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::proxy;
use super::tls::Trust;
use super::{Aggregator, ApiService, Backend};

const MANAGER: &str = "kube-apiserver";
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// The condition's status, reason and message.
#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

fn not_available(reason: &'static str, message: String) -> Verdict {
    Verdict {
        status: "False",
        reason,
        message,
    }
}

fn cached() -> ListOptions {
    ListOptions {
        resource_version: Some("0".into()),
        ..Default::default()
    }
}

/// Go's %q of a plain string.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

pub async fn check(aggregator: &Aggregator, service: &ApiService) -> Verdict {
    let Some(backend) = &service.backend else {
        return Verdict {
            status: "True",
            reason: "Local",
            message: "Local APIServices are always available".into(),
        };
    };
    let registry = aggregator.registry();
    let (ns, name) = (backend.namespace.as_str(), backend.name.as_str());
    let where_ = format!("service/{name} in {}", quoted(ns));
    let Some(services) = registry.store("", "v1", "services") else {
        return not_available("ServiceNotFound", format!("{where_} is not present"));
    };
    let svc = match services.get(Some(ns), name, &cached()).await {
        Ok(svc) => svc,
        Err(RegistryError::NotFound { .. }) => {
            return not_available("ServiceNotFound", format!("{where_} is not present"))
        }
        Err(e) => {
            return Verdict {
                status: "Unknown",
                reason: "ServiceAccessError",
                message: format!("{where_} cannot be checked due to: {e}"),
            }
        }
    };
    let cluster_ip = matches!(svc["spec"]["type"].as_str(), None | Some("ClusterIP"));
    if cluster_ip {
        if let Some(verdict) = check_endpoints(aggregator, backend, &svc, &where_).await {
            return verdict;
        }
    }
    match discovery_check(aggregator, service, backend).await {
        Ok(()) => Verdict {
            status: "True",
            reason: "Passed",
            message: "all checks passed".into(),
        },
        Err(e) => not_available("FailedDiscoveryCheck", e),
    }
}

/// The port and endpoint checks of a ClusterIP Service; None when they pass.
async fn check_endpoints(
    aggregator: &Aggregator,
    backend: &Backend,
    svc: &Value,
    where_: &str,
) -> Option<Verdict> {
    let port = svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["port"].as_i64() == Some(backend.port));
    let Some(port) = port else {
        return Some(not_available(
            "ServicePortError",
            format!("{where_} is not listening on port {}", backend.port),
        ));
    };
    let port_name = port["name"].as_str().unwrap_or_default();
    let slices = aggregator
        .registry()
        .store("discovery.k8s.io", "v1", "endpointslices")?;
    let selected = ListOptions {
        label_selector: Some(format!("kubernetes.io/service-name={}", backend.name)),
        ..cached()
    };
    let list = match slices.list(Some(&backend.namespace), &selected).await {
        Ok(list) => list,
        Err(e) => {
            return Some(Verdict {
                status: "Unknown",
                reason: "EndpointsAccessError",
                message: format!("{where_} cannot be checked due to: {e}"),
            })
        }
    };
    let items = list["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return Some(not_available(
            "EndpointsNotFound",
            format!("cannot find endpointslices for {where_}"),
        ));
    }
    let available = items.iter().any(|slice| {
        let ready = slice["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| e["conditions"]["ready"] != false);
        let ported = slice["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["name"].as_str().unwrap_or_default() == port_name && p["port"].is_i64());
        ready && ported
    });
    (!available).then(|| {
        not_available(
            "MissingEndpoints",
            format!(
                "endpointslices for {where_} have no addresses with port name {}",
                quoted(port_name)
            ),
        )
    })
}

/// Upstream's discovery check tries this many times at once; one answer is enough.
const ATTEMPTS: usize = 5;

/// A GET the aggregated server must answer, as system:masters, not verifying its
/// certificate (upstream's: the check says nothing a network owner could abuse).
async fn discovery_check(
    aggregator: &Aggregator,
    service: &ApiService,
    backend: &Backend,
) -> Result<(), String> {
    let attempts = (0..ATTEMPTS).map(|_| attempt(aggregator, service, backend));
    let results = futures::future::join_all(attempts).await;
    if results.iter().any(Result::is_ok) {
        return Ok(());
    }
    results
        .into_iter()
        .last()
        .unwrap_or_else(|| Err("no attempt made".into()))
}

async fn attempt(
    aggregator: &Aggregator,
    service: &ApiService,
    backend: &Backend,
) -> Result<(), String> {
    let address = proxy::endpoint(aggregator.registry(), backend).await?;
    let path = if service.group.is_empty() {
        format!("/api/{}", service.version)
    } else {
        format!("/apis/{}/{}", service.group, service.version)
    };
    let url = format!("https://{address}{path}");
    let user = UserInfo {
        name: "system:kube-aggregator".into(),
        groups: vec!["system:masters".into()],
        ..Default::default()
    };
    let peer = proxy::Peer {
        address: &address,
        backend,
        trust: Trust::Insecure,
        front_proxy: &aggregator.front_proxy,
    };
    let fetched = proxy::get(peer, &user, &path, "application/json, */*", CHECK_TIMEOUT)
        .await
        .map_err(|e| format!("failing or missing response from {url}: {e}"))?;
    if !(200..300).contains(&fetched.status) {
        return Err(format!(
            "failing or missing response from {url}: bad status from {url}: {}",
            fetched.status
        ));
    }
    Ok(())
}

/// The APIService with its Available condition set to `verdict`; None when nothing changes.
pub fn with_condition(obj: &Value, verdict: &Verdict, now: &str) -> Option<Value> {
    let mut next = obj.clone();
    let conditions = &mut next["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut()?;
    let at = list.iter().position(|c| c["type"] == "Available");
    let old = at.map(|i| list[i].clone());
    if let Some(old) = &old {
        if old["status"] == verdict.status
            && old["reason"] == verdict.reason
            && old["message"] == verdict.message.as_str()
        {
            return None;
        }
    }
    let transition = match &old {
        Some(old) if old["status"] == verdict.status => old["lastTransitionTime"].clone(),
        _ => json!(now),
    };
    let condition = json!({"type": "Available", "status": verdict.status,
        "lastTransitionTime": transition, "reason": verdict.reason, "message": verdict.message});
    match at {
        Some(i) => list[i] = condition,
        None => list.push(condition),
    }
    Some(next)
}

/// Checks every APIService now.
async fn check_all(aggregator: &Aggregator) {
    let Some(store) = aggregator
        .registry()
        .store(super::GROUP, "v1", super::PLURAL)
    else {
        return;
    };
    let Ok(list) = store.list(None, &cached()).await else {
        return;
    };
    for obj in list["items"].as_array().into_iter().flatten() {
        let Some(service) = ApiService::from_object(obj) else {
            continue;
        };
        let verdict = check(aggregator, &service).await;
        let now = registry::object::now();
        let Some(next) = with_condition(obj, &verdict, &now) else {
            continue;
        };
        if verdict.status != "True" || !service.available {
            info!(apiservice = %service.name, status = verdict.status, reason = verdict.reason,
                message = %verdict.message, "changing APIService availability");
        }
        let written = store
            .update(
                None,
                &service.name,
                next,
                Subresource::Status,
                &WriteOptions::by(MANAGER),
            )
            .await;
        match written {
            Ok(_) | Err(RegistryError::Conflict { .. } | RegistryError::NotFound { .. }) => {}
            Err(e) => warn!(apiservice = %service.name, error = %e, "writing APIService status"),
        }
    }
}

/// Runs the checks every `period`, and soon after any APIService changes.
pub fn start(
    aggregator: Arc<Aggregator>,
    informers: &client::informer::InformerFactory,
    period: Duration,
    stop: CancellationToken,
) {
    let changed = Arc::new(tokio::sync::Notify::new());
    if let Ok(informer) = informers.informer(super::GROUP, "v1", super::PLURAL) {
        let notifications = informer.subscribe();
        let notify = changed.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let _ =
                client::informer::dispatch(notifications, stop, move |_| notify.notify_one()).await;
        });
    }
    tokio::spawn(async move {
        loop {
            check_all(&aggregator).await;
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(period) => {}
                () = changed.notified() => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_moves_its_time_only_with_its_status() {
        let passed = Verdict {
            status: "True",
            reason: "Passed",
            message: "all checks passed".into(),
        };
        let obj = json!({"metadata": {"name": "v1.x.example.com"}, "status": {}});
        let first = with_condition(&obj, &passed, "2026-01-01T00:00:00Z").expect("set");
        assert_eq!(first["status"]["conditions"][0]["reason"], "Passed");
        assert!(with_condition(&first, &passed, "2026-01-01T00:01:00Z").is_none());
        let failed = not_available("FailedDiscoveryCheck", "failing".into());
        let second = with_condition(&first, &failed, "2026-01-01T00:02:00Z").expect("set");
        let condition = &second["status"]["conditions"][0];
        assert_eq!(condition["lastTransitionTime"], "2026-01-01T00:02:00Z");
        assert_eq!(condition["status"], "False");
        let other = not_available("ServiceNotFound", "gone".into());
        let third = with_condition(&second, &other, "2026-01-01T00:03:00Z").expect("set");
        assert_eq!(
            third["status"]["conditions"][0]["lastTransitionTime"],
            "2026-01-01T00:02:00Z"
        );
        assert_eq!(quoted("kube-system"), "\"kube-system\"");
    }
}
