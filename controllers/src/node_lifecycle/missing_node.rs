//! Pods bound to a node that does not exist: no kubelet will ever run them, so they stay
//! Pending (upstream's pod GC would delete them after a quarantine; we keep them, as a node of
//! that name may still register, and say why they wait with one Warning event per pod).

use std::collections::HashSet;
use std::sync::Mutex;

use registry::object;
use serde_json::Value;
use tracing::info;

use client::events::{EventRecorder, EventType};

pub const REASON: &str = "NodeNotFound";

pub struct MissingNodes {
    recorder: EventRecorder,
    /// The pods already told about, by UID.
    reported: Mutex<HashSet<String>>,
}

impl MissingNodes {
    pub fn new(recorder: EventRecorder) -> Self {
        Self {
            recorder,
            reported: Mutex::new(HashSet::new()),
        }
    }

    /// `pod` is bound to `node`, which the node informer does not hold.
    pub fn report(&self, pod: &Value, node: &str) {
        let uid = object::uid(pod).to_string();
        let first = self
            .reported
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(uid);
        if !first {
            return;
        }
        info!(
            pod = %format!("{}/{}", object::namespace(pod), object::name(pod)),
            node,
            "pod bound to a node that does not exist"
        );
        self.recorder.event(
            pod,
            EventType::Warning,
            REASON,
            format!("node \"{node}\" not found: the pod stays Pending until a node of that name registers"),
        );
    }

    /// The pod is gone: forget it.
    pub fn forget(&self, uid: &str) {
        self.reported
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uid);
    }
}
