//! Monitors: one informer per resource the collector can act on (get, list, watch and delete),
//! feeding every add, update and delete into the graph builder's graphChanges. The set follows
//! the registry: resources installed later get a monitor, removed ones lose theirs.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use registry::{Registry, Store, Verb};
use serde_json::Value;
use tracing::{debug, info, warn};

use super::graph_builder::{EventType, GraphBuilder, GraphEvent};
use super::interned::Interned;
use client::informer::{DeltaObject, EventHandler, HandlerId, InformerFactory, SharedInformer};

/// The collector's subscription to the shared informer of one resource.
struct Monitor {
    store: Arc<Store>,
    informer: SharedInformer,
    handler: HandlerId,
}

impl Monitor {
    /// Ends the subscription; the informer itself is shared and keeps running.
    fn unsubscribe(&self) {
        self.informer.remove_event_handler(self.handler);
    }
}

/// Forwards an informer's notifications to graphChanges, tagged with the monitor's kind.
struct ToGraphChanges {
    builder: Arc<GraphBuilder>,
    api_version: Interned,
    kind: Interned,
}

impl ToGraphChanges {
    fn send(&self, kind: EventType, obj: Arc<Value>, old: Option<Arc<Value>>) {
        self.builder.enqueue(GraphEvent {
            kind,
            obj,
            old,
            api_version: self.api_version.clone(),
            object_kind: self.kind.clone(),
            is_virtual: false,
        });
    }
}

impl EventHandler for ToGraphChanges {
    fn on_add(&self, obj: &Arc<Value>) {
        self.send(EventType::Add, obj.clone(), None);
    }

    fn on_update(&self, old: &Arc<Value>, new: &Arc<Value>) {
        self.send(EventType::Update, new.clone(), Some(old.clone()));
    }

    fn on_delete(&self, obj: &DeltaObject) {
        match obj.object() {
            Some(last) => self.send(EventType::Delete, last.clone(), None),
            None => warn!(
                kind = %self.kind,
                key = obj.key().unwrap_or_default(),
                "missed deletion with no last state; the graph keeps the object"
            ),
        }
    }
}

/// How a sync changed the monitors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncSummary {
    pub added: usize,
    pub kept: usize,
    pub removed: usize,
}

pub struct Monitors {
    registry: Arc<Registry>,
    informers: Arc<InformerFactory>,
    builder: Arc<GraphBuilder>,
    /// (group, plural) never monitored.
    ignored: Vec<(String, String)>,
    /// By storage path: resources sharing storage are one set of objects, monitored once.
    running: Mutex<HashMap<String, Monitor>>,
    stopped: Mutex<bool>,
}

impl Monitors {
    pub fn new(
        informers: Arc<InformerFactory>,
        builder: Arc<GraphBuilder>,
        ignored: Vec<(String, String)>,
    ) -> Self {
        Self {
            registry: informers.registry().clone(),
            informers,
            builder,
            ignored,
            running: Mutex::new(HashMap::new()),
            stopped: Mutex::new(false),
        }
    }

    fn running(&self) -> MutexGuard<'_, HashMap<String, Monitor>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The Store to monitor for each storage path (upstream's GetDeletableResources).
    fn wanted(&self) -> BTreeMap<String, Arc<Store>> {
        let mut stores: Vec<Arc<Store>> = self
            .registry
            .stores()
            .into_iter()
            .filter(|s| {
                let info = &s.info;
                [Verb::Delete, Verb::List, Verb::Watch]
                    .into_iter()
                    .all(|v| info.has_verb(v))
                    && !self
                        .ignored
                        .iter()
                        .any(|(g, p)| *g == info.group && *p == info.plural)
            })
            .collect();
        // Which of several resources sharing a path is watched must not depend on
        // installation order.
        stores.sort_by(|a, b| {
            (&a.info.group, &a.info.version, &a.info.plural).cmp(&(
                &b.info.group,
                &b.info.version,
                &b.info.plural,
            ))
        });
        let mut wanted = BTreeMap::new();
        for store in stores {
            wanted
                .entry(store.info.storage_path.clone())
                .or_insert(store);
        }
        wanted
    }

    /// Starts monitors for new resources and stops those of removed ones (upstream's
    /// syncMonitors + startMonitors). Does nothing once stopped.
    pub async fn sync(&self) -> SyncSummary {
        let wanted = self.wanted();
        let mut summary = SyncSummary::default();
        let removed: Vec<Monitor> = {
            let stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
            if *stopped {
                return summary;
            }
            let mut running = self.running();
            let stale: Vec<String> = running
                .iter()
                .filter(|(path, m)| wanted.get(*path).is_none_or(|s| !Arc::ptr_eq(s, &m.store)))
                .map(|(path, _)| path.clone())
                .collect();
            let removed: Vec<Monitor> = stale.iter().filter_map(|p| running.remove(p)).collect();
            for (path, store) in wanted {
                if running.contains_key(&path) {
                    summary.kept += 1;
                    continue;
                }
                running.insert(path, self.start(store));
                summary.added += 1;
            }
            removed
        };
        summary.removed = removed.len();
        for monitor in &removed {
            debug!(resource = %describe(&monitor.store), "stopping monitor");
            monitor.unsubscribe();
        }
        if !removed.is_empty() {
            self.informers.forget_removed().await;
        }
        if summary.added + summary.removed > 0 {
            info!(
                added = summary.added,
                kept = summary.kept,
                removed = summary.removed,
                "garbage collector monitors synced"
            );
        }
        summary
    }

    fn start(&self, store: Arc<Store>) -> Monitor {
        debug!(resource = %describe(&store), "starting monitor");
        let informer = self.informers.informer_for(&store);
        let handler = informer.add_event_handler(Arc::new(ToGraphChanges {
            builder: self.builder.clone(),
            api_version: store.info.api_version().into(),
            kind: store.info.kind.as_str().into(),
        }));
        Monitor {
            store,
            informer,
            handler,
        }
    }

    /// Whether every monitor has received the changes up to `revision` (revisions are global
    /// across resources, so a monitor past it has seen every object created before it).
    pub fn observed(&self, revision: i64) -> bool {
        self.running().values().all(|m| {
            m.informer
                .last_sync_resource_version()
                .parse::<i64>()
                .is_ok_and(|rv| rv >= revision)
        })
    }

    /// Whether there are monitors and all of them have listed their resource.
    pub fn is_synced(&self) -> bool {
        let running = self.running();
        !running.is_empty() && running.values().all(|m| m.informer.has_synced())
    }

    /// Waits up to `timeout` for every current monitor to sync; false if some did not.
    pub async fn wait_for_sync(&self, timeout: Duration) -> bool {
        let informers: Vec<SharedInformer> = self
            .running()
            .values()
            .map(|m| m.informer.clone())
            .collect();
        let all = futures::future::join_all(informers.iter().map(|i| i.wait_for_sync()));
        match tokio::time::timeout(timeout, all).await {
            Ok(results) => results.into_iter().all(|synced| synced),
            Err(_) => {
                let pending: Vec<String> = self
                    .running()
                    .values()
                    .filter(|m| !m.informer.has_synced())
                    .map(|m| describe(&m.store))
                    .collect();
                warn!(?pending, "garbage collector monitors not synced in time");
                false
            }
        }
    }

    /// group/version/plural of every monitored resource, sorted.
    pub fn resources(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .running()
            .values()
            .map(|m| describe(&m.store))
            .collect();
        out.sort();
        out
    }

    /// Ends every monitor's subscription; later syncs start nothing.
    pub fn stop_all(&self) {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        let monitors: Vec<Monitor> = self.running().drain().map(|(_, m)| m).collect();
        for monitor in &monitors {
            monitor.unsubscribe();
        }
        debug!(count = monitors.len(), "garbage collector monitors stopped");
    }
}

fn describe(store: &Store) -> String {
    let info = &store.info;
    if info.group.is_empty() {
        format!("{}/{}", info.version, info.plural)
    } else {
        format!("{}/{}/{}", info.group, info.version, info.plural)
    }
}
