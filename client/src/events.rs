//! The event recorder every controller reports through (client-go's record.EventRecorder with
//! its EventCorrelator): core/v1 Events about an involved object, a repeat of the same event
//! bumping `count` and `lastTimestamp` of the one already written rather than writing another.
//! Recording never blocks a controller: writes go to a few writer tasks, in order per event,
//! through bounded queues. An event that finds its queue full is dropped (and counted), as
//! upstream's broadcaster drops past its 1,000 queued events: under a burst (30,000 pods
//! started at once, five events each) events are what gives, not memory.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex};

use prometheus::IntCounter;

use registry::options::WriteOptions;
use registry::patch::PatchType;
use registry::{object, Registry, RegistryError, Subresource};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

/// Events remembered for aggregation; past this the memory is dropped and starts over, as
/// upstream's LRU cache of 4096 entries forgets the oldest.
const CACHE_SIZE: usize = 4096;
/// Writers of a recorder: events about one object are written in order by the same one.
const WRITERS: usize = 4;
/// Events waiting for each writer (upstream's maxQueuedEvents, 1,000, over the writers).
const QUEUED_PER_WRITER: usize = 250;

/// Events dropped because their writer's queue was full, all recorders together. Upstream
/// only logs these; the count is exported as `event_recorder_dropped_events_total` (not an
/// upstream name) so a burst that lost events can be told from one that made none.
static DROPPED: LazyLock<IntCounter> = LazyLock::new(|| {
    IntCounter::new(
        "event_recorder_dropped_events_total",
        "Events not written because the recorder's queue was full.",
    )
    .expect("valid metric")
});

/// Events dropped so far because a writer's queue was full.
pub fn dropped_events() -> u64 {
    DROPPED.get()
}

/// Registers `event_recorder_dropped_events_total` with `registry` (once per registry).
pub fn register_metrics(registry: &prometheus::Registry) -> prometheus::Result<()> {
    registry.register(Box::new(DROPPED.clone()))
}

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

/// One write for a writer task: the event as it should now stand, kept as its parts until
/// written (a few hundred bytes, where the JSON object is some kilobytes of maps). Sent
/// boxed: a channel reserves its slots 32 at a time, and every recorder has its writers'
/// channels.
struct Write {
    name: String,
    namespace: String,
    involved: InvolvedObject,
    reason: String,
    message: String,
    kind: EventType,
    component: Arc<str>,
    time: String,
    count: u64,
}

impl Write {
    fn event(self) -> Value {
        let involved = self.involved;
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "involvedObject": {
                "apiVersion": involved.api_version,
                "kind": involved.kind,
                "name": involved.name,
                "namespace": involved.namespace,
                "uid": involved.uid,
            },
            "reason": self.reason,
            "message": self.message,
            "type": self.kind.as_str(),
            "source": {"component": &*self.component},
            "reportingComponent": &*self.component,
            "reportingInstance": "",
            "firstTimestamp": self.time,
            "lastTimestamp": self.time,
            "count": self.count,
        })
    }
}

#[derive(Clone)]
pub struct EventRecorder {
    inner: Arc<Inner>,
}

struct Inner {
    component: Arc<str>,
    seen: Mutex<Seen>,
    writers: Vec<mpsc::Sender<Box<Write>>>,
}

impl EventRecorder {
    /// A recorder writing as `component` (the event's source). Needs a tokio runtime.
    pub fn new(registry: Arc<Registry>, component: &str) -> Self {
        Self::with_writer_count(registry, component, WRITERS)
    }

    /// A recorder with `writers` writers (and as many queues), for one that speaks for many
    /// components at once: the simulated nodes' kubelets share one, where upstream has a
    /// recorder (and its queue) per node.
    pub fn with_writer_count(registry: Arc<Registry>, component: &str, writers: usize) -> Self {
        let writers = (0..writers.max(1))
            .map(|_| {
                let (tx, rx) = mpsc::channel(QUEUED_PER_WRITER);
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

    fn with_writers(component: &str, writers: Vec<mpsc::Sender<Box<Write>>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                component: component.into(),
                seen: Mutex::new(Seen::default()),
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
        let (name, count) = self
            .inner
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .note(&self.inner.component, involved, kind, reason, &message);
        // Events of cluster-scoped objects live in default, as upstream's recorder puts them.
        let namespace = if involved.namespace.is_empty() {
            "default".to_string()
        } else {
            involved.namespace.clone()
        };
        let mut hasher = DefaultHasher::new();
        involved.uid.hash(&mut hasher);
        let writer = &self.inner.writers[(hasher.finish() as usize) % self.inner.writers.len()];
        let write = Box::new(Write {
            name,
            namespace,
            involved: involved.clone(),
            reason: reason.to_string(),
            message,
            kind,
            component: self.inner.component.clone(),
            time: object::now(),
            count,
        });
        if let Err(mpsc::error::TrySendError::Full(write)) = writer.try_send(write) {
            DROPPED.inc();
            let dropped = DROPPED.get();
            // One line per thousand: a burst that drops events should not also flood the log.
            if dropped % 1000 == 1 {
                warn!(dropped, reason = %write.reason, "event queue full: dropping events");
            }
        }
    }
}

/// The events a recorder has written, for aggregation: the aggregation key's hash → (event
/// name, count so far). Hashed, because the key holds the whole message: 4096 of them per
/// recorder, and every controller and kubelet has one, added up to megabytes that a
/// long-running server carried only to recognise a repeat.
#[derive(Default)]
struct Seen(HashMap<u64, (String, u64)>);

impl Seen {
    /// The name and count the event is written with: a repeat of one seen bumps its count.
    fn note(
        &mut self,
        component: &str,
        involved: &InvolvedObject,
        kind: EventType,
        reason: &str,
        message: &str,
    ) -> (String, u64) {
        // SipHash with fixed keys: the same event always hashes alike; two different ones
        // sharing a hash among 4096 is a chance of about 1 in 10^12.
        let mut hasher = DefaultHasher::new();
        (component, involved, kind.as_str(), reason, message).hash(&mut hasher);
        let key = hasher.finish();
        if self.0.len() >= CACHE_SIZE && !self.0.contains_key(&key) {
            self.0.clear();
        }
        let entry = self
            .0
            .entry(key)
            .or_insert_with(|| (event_name(&involved.name), 0));
        entry.1 += 1;
        entry.clone()
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

async fn write_events(registry: Arc<Registry>, mut rx: mpsc::Receiver<Box<Write>>) {
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
            "lastTimestamp": write.time,
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
    let name = write.name.clone();
    let namespace = write.namespace.clone();
    if let Err(e) = events.create(Some(&namespace), write.event(), &opts).await {
        debug!(event = %name, error = %e, "could not record event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_bumps_the_count_of_the_same_event_and_a_full_cache_starts_over() {
        let pod = InvolvedObject {
            kind: "Pod".into(),
            name: "web".into(),
            uid: "u1".into(),
            ..Default::default()
        };
        let mut seen = Seen::default();
        let (name, count) = seen.note("kubelet", &pod, EventType::Normal, "Pulled", "image a");
        assert_eq!(count, 1);
        assert!(name.starts_with("web."), "{name}");
        assert_eq!(
            seen.note("kubelet", &pod, EventType::Normal, "Pulled", "image a"),
            (name.clone(), 2)
        );
        // Another message, reason, type, component or object is another event.
        for (component, kind, reason, message) in [
            ("kubelet", EventType::Normal, "Pulled", "image b"),
            ("kubelet", EventType::Normal, "Created", "image a"),
            ("kubelet", EventType::Warning, "Pulled", "image a"),
            ("scheduler", EventType::Normal, "Pulled", "image a"),
        ] {
            assert_eq!(seen.note(component, &pod, kind, reason, message).1, 1);
        }
        let other = InvolvedObject {
            uid: "u2".into(),
            ..pod.clone()
        };
        assert_eq!(
            seen.note("kubelet", &other, EventType::Normal, "Pulled", "image a")
                .1,
            1
        );
        for i in 0..CACHE_SIZE {
            seen.note(
                "kubelet",
                &pod,
                EventType::Normal,
                "Pulled",
                &format!("{i}"),
            );
        }
        assert!(seen.0.len() <= CACHE_SIZE);
        assert_eq!(
            seen.note("kubelet", &pod, EventType::Normal, "Pulled", "image a")
                .1,
            1
        );
    }

    #[test]
    fn a_full_queue_drops_events_and_the_queued_ones_are_written_whole() {
        let (tx, mut rx) = mpsc::channel(QUEUED_PER_WRITER);
        let recorder = EventRecorder::with_writers("kubelet", vec![tx]);
        let before = dropped_events();
        for i in 0..QUEUED_PER_WRITER + 10 {
            let pod = InvolvedObject {
                api_version: "v1".into(),
                kind: "Pod".into(),
                namespace: "ns".into(),
                name: format!("p{i}"),
                uid: format!("u{i}"),
            };
            recorder.record(&pod, EventType::Normal, "Started", format!("started {i}"));
        }
        // Other tests' recorders may drop too: at least these ten were.
        assert!(dropped_events() - before >= 10);
        let mut queued = Vec::new();
        while let Ok(write) = rx.try_recv() {
            queued.push(write);
        }
        assert_eq!(queued.len(), QUEUED_PER_WRITER);
        let first = queued.remove(0);
        let (name, time) = (first.name.clone(), first.time.clone());
        assert!(name.starts_with("p0."), "{name}");
        assert_eq!(
            first.event(),
            json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": "ns"},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "p0",
                    "namespace": "ns", "uid": "u0"},
                "reason": "Started", "message": "started 0", "type": "Normal",
                "source": {"component": "kubelet"}, "reportingComponent": "kubelet",
                "reportingInstance": "", "firstTimestamp": time, "lastTimestamp": time,
                "count": 1,
            })
        );
    }

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
