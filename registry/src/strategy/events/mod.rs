//! Events (upstream's pkg/registry/core/event): one storage, in the core/v1 shape, served by
//! core/v1 and by events.k8s.io/v1, which renames fields (`conversion`). Events expire a while
//! after their last write (`--event-ttl`); both APIs validate as upstream (`validation`).

mod conversion;
mod validation;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::conversion::Conversion;
use super::Strategy;
use crate::catalogue::ResourceInfo;
use crate::error::Cause;

pub use self::conversion::EventsV1;

/// Which API an event is written through: events.k8s.io/v1 validates strictly, core/v1 keeps
/// the legacy rules for old clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    Core,
    EventsV1,
}

pub struct EventStrategy {
    api: Api,
    ttl: Duration,
}

impl EventStrategy {
    pub fn new(info: &ResourceInfo, ttl: Duration) -> Self {
        let api = match info.group.as_str() {
            "events.k8s.io" => Api::EventsV1,
            _ => Api::Core,
        };
        Self { api, ttl }
    }

    /// The event in the core shape validation reads (and upstream's field paths name).
    fn core_shape(&self, obj: &Value) -> Value {
        let mut core = obj.clone();
        if self.api == Api::EventsV1 {
            EventsV1.to_stored(&mut core);
        }
        core
    }
}

impl Strategy for EventStrategy {
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let core = self.core_shape(obj);
        let mut causes = validation::legacy(&core);
        if self.api == Api::EventsV1 {
            causes.extend(validation::strict_create(&core));
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let core = self.core_shape(new);
        let mut causes = validation::legacy(&core);
        if self.api == Api::EventsV1 {
            causes.extend(validation::strict_update(&core, &self.core_shape(old)));
        }
        causes
    }

    fn conversion(&self, _info: &ResourceInfo) -> Option<Arc<dyn Conversion>> {
        match self.api {
            Api::Core => None,
            Api::EventsV1 => Some(Arc::new(EventsV1)),
        }
    }

    fn ttl(&self) -> Option<Duration> {
        Some(self.ttl)
    }
}
