//! The event recorder every controller reports through (client-go's record.EventRecorder with
//! its EventCorrelator): core/v1 Events about an involved object, a repeat of the same event
//! bumping `count` and `lastTimestamp` of the one already written rather than writing another.
//! Recording never blocks a controller: writes go to a few writer tasks, in order per event.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use registry::options::WriteOptions;
use registry::patch::PatchType;
use registry::{object, Registry, RegistryError, Subresource};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

/// Events remembered for aggregation; past this the memory is dropped and starts over, as
/// upstream's LRU cache of 4096 entries forgets the oldest.
const CACHE_SIZE: usize = 4096;
/// Writers: events about one object are written in order by the same one.
const WRITERS: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// The object an event is about (core/v1 ObjectReference).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct InvolvedObject {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl InvolvedObject {
    /// The reference to a stored object (which carries its apiVersion and kind).
    pub fn of(obj: &Value) -> Self {
        Self {
            api_version: obj["apiVersion"].as_str().unwrap_or_default().to_string(),
            kind: obj["kind"].as_str().unwrap_or_default().to_string(),
            namespace: object::namespace(obj).to_string(),
            name: object::name(obj).to_string(),
            uid: object::uid(obj).to_string(),
        }
    }
}

/// One write for a writer task: the event as it should now stand. Sent boxed: a channel
/// reserves its slots 32 at a time, and every recorder has its writers' channels.
struct Write {
    name: String,
    namespace: String,
    event: Value,
    count: u64,
}

#[derive(Clone)]
pub struct EventRecorder {
    inner: Arc<Inner>,
}

struct Inner {
    component: String,
    /// Aggregation key → (event name, count so far).
    seen: Mutex<HashMap<String, (String, u64)>>,
    writers: Vec<mpsc::UnboundedSender<Box<Write>>>,
}

impl EventRecorder {
    /// A recorder writing as `component` (the event's source). Needs a tokio runtime.
    pub fn new(registry: Arc<Registry>, component: &str) -> Self {
        let writers = (0..WRITERS)
            .map(|_| {
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(write_events(registry.clone(), rx));
                tx
            })
            .collect();
        Self::with_writers(component, writers)
    }

    /// A recorder that only logs (tests of controller logic without a registry).
    pub fn log_only(component: &str) -> Self {
        Self::with_writers(component, Vec::new())
    }

    fn with_writers(component: &str, writers: Vec<mpsc::UnboundedSender<Box<Write>>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                component: component.to_string(),
                seen: Mutex::new(HashMap::new()),
                writers,
            }),
        }
    }

    /// Records an event about a stored object.
    pub fn event(&self, obj: &Value, kind: EventType, reason: &str, message: impl Into<String>) {
        self.record(&InvolvedObject::of(obj), kind, reason, message.into());
    }

    /// Records an event about `involved`.
    pub fn record(
        &self,
        involved: &InvolvedObject,
        kind: EventType,
        reason: &str,
        message: String,
    ) {
        match kind {
            EventType::Normal => {
                info!(object = %describe(involved), reason, "{message}")
            }
            EventType::Warning => {
                warn!(object = %describe(involved), reason, "{message}")
            }
        }
        if self.inner.writers.is_empty() {
            return;
        }
        let key = format!(
            "{}\0{}\0{}\0{}\0{}\0{}\0{}\0{}",
            self.inner.component,
            involved.kind,
            involved.namespace,
            involved.name,
            involved.uid,
            kind.as_str(),
            reason,
            message
        );
        let (name, count) = {
            let mut seen = self.inner.seen.lock().unwrap_or_else(|p| p.into_inner());
            if seen.len() >= CACHE_SIZE && !seen.contains_key(&key) {
                seen.clear();
            }
            let entry = seen
                .entry(key)
                .or_insert_with(|| (event_name(&involved.name), 0));
            entry.1 += 1;
            entry.clone()
        };
        // Events of cluster-scoped objects live in default, as upstream's recorder puts them.
        let namespace = if involved.namespace.is_empty() {
            "default".to_string()
        } else {
            involved.namespace.clone()
        };
        let now = object::now();
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": involved.api_version,
                "kind": involved.kind,
                "name": involved.name,
                "namespace": involved.namespace,
                "uid": involved.uid,
            },
            "reason": reason,
            "message": message,
            "type": kind.as_str(),
            "source": {"component": self.inner.component},
            "reportingComponent": self.inner.component,
            "reportingInstance": "",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": count,
        });
        let mut hasher = DefaultHasher::new();
        involved.uid.hash(&mut hasher);
        let writer = &self.inner.writers[(hasher.finish() as usize) % self.inner.writers.len()];
        let _ = writer.send(Box::new(Write {
            name,
            namespace,
            event,
            count,
        }));
    }
}

fn describe(o: &InvolvedObject) -> String {
    if o.namespace.is_empty() {
        format!("{}/{}", o.kind, o.name)
    } else {
        format!("{}/{}/{}", o.kind, o.namespace, o.name)
    }
}

/// Upstream's naming: the involved object's name and the time in hex nanoseconds.
fn event_name(involved: &str) -> String {
    let nanos = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default();
    format!("{involved}.{nanos:x}")
}

async fn write_events(registry: Arc<Registry>, mut rx: mpsc::UnboundedReceiver<Box<Write>>) {
    while let Some(write) = rx.recv().await {
        // Boxed: a store write's future held inline would size every idle writer's task to it
        // (each recorder has a few writers, and every controller a recorder).
        Box::pin(write_event(&registry, *write)).await;
    }
}

async fn write_event(registry: &Registry, write: Write) {
    let Some(events) = registry.store("", "v1", "events") else {
        return;
    };
    let ns = Some(write.namespace.as_str());
    let opts = WriteOptions::default();
    if write.count > 1 {
        // A repeat: bump the stored one; if it is gone (expired), write it anew.
        let patch = json!({
            "count": write.count,
            "lastTimestamp": write.event["lastTimestamp"],
        });
        let body = patch.to_string();
        match events
            .patch(
                ns,
                &write.name,
                PatchType::Merge,
                body.as_bytes(),
                Subresource::Main,
                &opts,
            )
            .await
        {
            Ok(_) => return,
            Err(RegistryError::NotFound { .. }) => {}
            Err(e) => {
                debug!(event = %write.name, error = %e, "could not update event");
                return;
            }
        }
    }
    if let Err(e) = events.create(ns, write.event, &opts).await {
        debug!(event = %write.name, error = %e, "could not record event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn involved_object_takes_kind_from_the_object_and_names_from_metadata() {
        let rs = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
        });
        let involved = InvolvedObject::of(&rs);
        assert_eq!(
            (involved.api_version.as_str(), involved.kind.as_str()),
            ("apps/v1", "ReplicaSet")
        );
        assert_eq!(
            (
                involved.namespace.as_str(),
                involved.name.as_str(),
                involved.uid.as_str()
            ),
            ("default", "web", "u1")
        );
    }
}
