//! One harness for the conformance suite: the same tests run against the embedded store and
//! a real etcd.

#![allow(dead_code)]

use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use storage::backend::DynBackend;
use storage::{KvStore, WatchEvent};
use test_support::{FromBackend, TestBackend};

pub struct Harness {
    pub store: KvStore,
    pub backend: DynBackend,
    pub test_backend: TestBackend,
}

impl FromBackend for Harness {
    async fn from_backend(test_backend: TestBackend) -> Self {
        let backend = storage::backend::open(&test_backend.etcd_servers(), test_backend.data_dir())
            .await
            .expect("open the test backend");
        Self {
            store: KvStore::new(backend.clone(), "/registry"),
            backend,
            test_backend,
        }
    }
}

/// A JSON object value with the given name, uid and payload.
pub fn object(name: &str, uid: &str, data: &str) -> Bytes {
    Bytes::from(
        serde_json::json!({"metadata": {"name": name, "uid": uid}, "data": data}).to_string(),
    )
}

pub fn data_of(value: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(value).expect("json value");
    v["data"].as_str().unwrap_or_default().to_string()
}

/// Takes `n` items from a watch, failing the test if they do not arrive within 10s.
pub async fn take<S>(stream: &mut S, n: usize) -> Vec<WatchEvent>
where
    S: Stream<Item = storage::Result<WatchEvent>> + Unpin,
{
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        match tokio::time::timeout(Duration::from_secs(10), stream.next()).await {
            Ok(Some(Ok(event))) => out.push(event),
            Ok(Some(Err(e))) => panic!("watch failed after {} events: {e}", out.len()),
            Ok(None) => panic!("watch ended after {} of {n} events", out.len()),
            Err(_) => panic!("timed out after {} of {n} events", out.len()),
        }
    }
    out
}

/// Takes watch events until `n` non-bookmark events arrived.
pub async fn take_changes<S>(stream: &mut S, n: usize) -> Vec<WatchEvent>
where
    S: Stream<Item = storage::Result<WatchEvent>> + Unpin,
{
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let event = take(stream, 1).await.remove(0);
        if event.kind != storage::EventKind::Bookmark {
            out.push(event);
        }
    }
    out
}
