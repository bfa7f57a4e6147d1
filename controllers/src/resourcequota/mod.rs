//! The resource quota controller (upstream's pkg/controller/resourcequota): each quota's
//! `status.hard` follows its `spec.hard`, and `status.used` is recounted from the objects in
//! its namespace, when the quota is made or its limits change, when an object it counts goes
//! or stops costing (a pod turning terminal: upstream's replenishment), and every five
//! minutes. Admission charges each create as it happens; this is what corrects the charges of
//! writes that failed after admission, and returns what deleted objects used.
//!
//! The objects of every resource a quota names are watched through shared informers started
//! when a quota first names them (upstream's quota monitor starts them from discovery).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use chrono::Utc;
use registry::options::WriteOptions;
use registry::quota::{self, Evaluator, ResourceList};
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use client::controller::Controller;
use client::informer::{
    dispatch, FactoryError, InformerFactory, Notification, SharedInformer, NAMESPACE_INDEX,
};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

const NAME: &str = "resourcequota-controller";
const MANAGER: &str = "kube-controller-manager";
/// upstream's --concurrent-resource-quota-syncs.
const WORKERS: usize = 5;
/// upstream's --resource-quota-sync-period.
const FULL_RESYNC: Duration = Duration::from_secs(300);

#[derive(Debug, Error)]
pub enum ResourceQuotaError {
    #[error(transparent)]
    Informer(#[from] FactoryError),
    #[error(transparent)]
    Write(#[from] RegistryError),
}

pub struct ResourceQuotaController {
    informers: Arc<InformerFactory>,
    quotas: SharedInformer,
    store: Arc<Store>,
    /// `namespace/name` of quotas.
    queue: RateLimitingQueue<String>,
    /// The watched resources by (group, plural).
    monitors: Mutex<HashMap<(String, String), SharedInformer>>,
    /// The controller's stop, which ends the monitors' handlers too.
    stop: OnceLock<CancellationToken>,
}

impl ResourceQuotaController {
    pub fn new(informers: &Arc<InformerFactory>) -> Result<Arc<Self>, ResourceQuotaError> {
        let store = informers.store("", "v1", "resourcequotas")?;
        Ok(Arc::new(Self {
            quotas: informers.informer_for(&store),
            informers: informers.clone(),
            store,
            queue: RateLimitingQueue::with_default_rate_limiter("resourcequota_primary"),
            monitors: Mutex::default(),
            stop: OnceLock::new(),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let _ = self.stop.set(stop.clone());
        Controller::new(NAME, self.clone(), self.queue.clone())
            .workers(WORKERS)
            .handles(&self.quotas, |rq, n| match n {
                Notification::Add(q) => rq.enqueue(&q),
                // Its own usage writes change nothing to recount; new limits do.
                Notification::Update { old, new } => {
                    let hard = |q: &Value| quota::parse_list(q.pointer("/spec/hard"));
                    let status_hard = quota::parse_list(new.pointer("/status/hard"));
                    if !quota::equals(&hard(&old), &hard(&new))
                        || !quota::equals(&hard(&new), &status_hard)
                    {
                        rq.enqueue(&new);
                    }
                }
                Notification::Delete(_) => {}
            })
            .spawns(|rq, stop| async move {
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(FULL_RESYNC) => {}
                    }
                    for q in rq.quotas.indexer().list() {
                        rq.enqueue(&q);
                    }
                }
            })
            .run(stop, |rq, key| async move {
                Next::after_sync(rq.sync(&key).await, |e| {
                    warn!(quota = %key, error = %e, "syncing a resource quota failed; retrying")
                })
            })
            .await
    }

    fn enqueue(&self, q: &Value) {
        self.queue
            .add(format!("{}/{}", object::namespace(q), object::name(q)));
    }

    /// Every quota of `namespace` that limits something `evaluator` counts is recounted.
    fn replenish(&self, namespace: &str, evaluator: &Evaluator) {
        let quotas = self
            .quotas
            .indexer()
            .by_index(NAMESPACE_INDEX, namespace)
            .unwrap_or_default();
        for q in quotas {
            let hard = quota::names(&quota::parse_list(q.pointer("/spec/hard")));
            if !evaluator.matching_resources(&hard).is_empty() {
                self.enqueue(&q);
            }
        }
    }

    /// The informer of `group`/`plural`, started (with its replenishment handler) at the
    /// first quota that names it; None when the resource is not served.
    fn monitor(self: &Arc<Self>, group: &str, plural: &str) -> Option<SharedInformer> {
        let key = (group.to_string(), plural.to_string());
        let mut monitors = self.monitors.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(informer) = monitors.get(&key).filter(|i| !i.is_stopped()) {
            return Some(informer.clone());
        }
        let registry = self.informers.registry();
        let info = registry
            .catalogue()
            .all()
            .iter()
            .find(|i| i.group == group && i.plural == plural && i.namespaced)
            .cloned()?;
        let informer = self
            .informers
            .informer(&info.group, &info.version, &info.plural)
            .ok()?;
        let evaluator = Evaluator::for_resource(group, plural);
        let weak = Arc::downgrade(self);
        let stop = self.stop.get().cloned().unwrap_or_default();
        dispatch(informer.subscribe(), stop, move |n| {
            let Some(rq) = weak.upgrade() else {
                return;
            };
            let changed = match &n {
                Notification::Add(_) => None,
                Notification::Update { old, new } => {
                    evaluator.replenishes(old, new, Utc::now()).then_some(new)
                }
                Notification::Delete(gone) => gone.object(),
            };
            if let Some(obj) = changed {
                rq.replenish(object::namespace(obj), &evaluator);
            }
        });
        debug!(group, plural, "resource quota monitor started");
        monitors.insert(key, informer.clone());
        Some(informer)
    }

    /// upstream's syncResourceQuota: status.hard from spec.hard, status.used recounted for
    /// what the controller can count, the rest kept.
    async fn sync(self: &Arc<Self>, key: &str) -> Result<(), ResourceQuotaError> {
        let Some(q) = self.quotas.indexer().get(key) else {
            return Ok(());
        };
        let namespace = object::namespace(&q).to_string();
        let hard = quota::parse_list(q.pointer("/spec/hard"));
        let names = quota::names(&hard);
        let selectors = quota::scope_selectors(&q);
        let resources: BTreeSet<(String, String)> = names
            .iter()
            .filter_map(|n| quota::resource_for(n))
            .collect();
        let now = Utc::now();
        let mut counted = ResourceList::new();
        let mut matched = BTreeSet::new();
        for (group, plural) in resources {
            let Some(informer) = self.monitor(&group, &plural) else {
                continue;
            };
            if !informer.wait_for_sync().await {
                continue;
            }
            let evaluator = Evaluator::for_resource(&group, &plural);
            let matching = evaluator.matching_resources(&names);
            let objects = informer
                .indexer()
                .by_index(NAMESPACE_INDEX, &namespace)
                .unwrap_or_default();
            let stats =
                evaluator.usage_stats(objects.iter().map(|o| &**o), &selectors, &matching, now);
            counted = quota::add(&counted, &stats);
            matched.extend(matching);
        }
        let before = quota::parse_list(q.pointer("/status/used"));
        let mut used = before.clone();
        used.extend(quota::mask(&counted, &matched));
        let used = quota::mask(&used, &names);
        let status_hard = quota::parse_list(q.pointer("/status/hard"));
        let dirty = q.pointer("/status/hard").is_none()
            || q.pointer("/status/used").is_none()
            || !quota::equals(&hard, &status_hard)
            || !quota::equals(&used, &before);
        if !dirty {
            return Ok(());
        }
        let mut updated = (*q).clone();
        updated["status"] = json!({"hard": quota::to_json(&hard), "used": quota::to_json(&used)});
        match self
            .store
            .update(
                Some(&namespace),
                object::name(&q),
                updated,
                Subresource::Status,
                &WriteOptions::by(MANAGER),
            )
            .await
        {
            Ok(_) => Ok(()),
            // Gone: nothing to count.
            Err(RegistryError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
