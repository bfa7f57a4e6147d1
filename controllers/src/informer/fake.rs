//! A scripted ListerWatcher for unit tests of the reflector and the informer.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use futures::StreamExt;
use registry::options::ListOptions;
use registry::store::watch::WatchEvents;
use registry::{RegistryError, WatchEvent, WatchEventType};
use serde_json::{json, Value};

use super::ListerWatcher;

/// A watch the fake hands out: events, then either the end of the stream or silence.
pub struct Script {
    pub events: Vec<WatchEvent>,
    pub then_close: bool,
}

/// Answers lists and watches from scripts, recording what was asked.
#[derive(Default)]
pub struct Fake {
    lists: Mutex<VecDeque<registry::Result<Value>>>,
    watches: Mutex<VecDeque<registry::Result<Script>>>,
    calls: Mutex<Vec<String>>,
}

impl Fake {
    pub fn script_list(&self, result: registry::Result<Value>) {
        self.lists.lock().expect("lock").push_back(result);
    }

    pub fn script_watch(&self, result: registry::Result<Script>) {
        self.watches.lock().expect("lock").push_back(result);
    }

    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().expect("lock").clone()
    }
}

#[async_trait]
impl ListerWatcher for Fake {
    async fn list(&self, opts: &ListOptions) -> registry::Result<Value> {
        let rv = opts
            .resource_version
            .clone()
            .unwrap_or_else(|| "latest".into());
        self.calls.lock().expect("lock").push(format!("list {rv}"));
        let next = self.lists.lock().expect("lock").pop_front();
        next.unwrap_or_else(|| Err(RegistryError::ServiceUnavailable("no more lists".into())))
    }

    async fn watch(&self, opts: &ListOptions) -> registry::Result<WatchEvents> {
        let rv = opts.resource_version.clone().unwrap_or_default();
        assert!(opts.allow_watch_bookmarks);
        self.calls.lock().expect("lock").push(format!("watch {rv}"));
        let next = self.watches.lock().expect("lock").pop_front();
        let Some(script) = next else {
            return Ok(futures::stream::pending().boxed());
        };
        let script = script?;
        let events = futures::stream::iter(script.events);
        Ok(if script.then_close {
            events.boxed()
        } else {
            events.chain(futures::stream::pending()).boxed()
        })
    }

    fn describe(&self) -> String {
        "fakes".into()
    }
}

pub fn obj(name: &str, rv: u32) -> Value {
    json!({"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv.to_string()}})
}

pub fn list_of(rv: u32, items: Vec<Value>) -> Value {
    json!({"metadata": {"resourceVersion": rv.to_string()}, "items": items})
}

pub fn event(kind: WatchEventType, object: Value) -> WatchEvent {
    WatchEvent { kind, object }
}

pub fn bookmark(rv: u32) -> WatchEvent {
    event(
        WatchEventType::Bookmark,
        json!({"metadata": {"resourceVersion": rv.to_string()}}),
    )
}

pub fn expired_event() -> WatchEvent {
    event(
        WatchEventType::Error,
        json!({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}),
    )
}

pub fn gone() -> RegistryError {
    RegistryError::Expired {
        message: "too old resource version".into(),
    }
}
