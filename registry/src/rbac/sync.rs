//! Keeping the index current: each of the four resources is listed, then watched from the
//! list's resourceVersion through the registry's own watch streams; a watch that ends resumes
//! where it was, one whose resourceVersion is gone (410 Expired) lists again.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::authorizer::RbacAuthorizer;
use super::index::Kind;
use crate::options::ListOptions;
use crate::{Store, WatchEventType};

const GONE: u64 = 410;
const RETRY: Duration = Duration::from_secs(1);

/// Why a watch stopped.
enum WatchEnd {
    Stopped,
    /// Its resourceVersion is no longer served: list again.
    Expired,
    /// Closed or failed: watch again from the last resourceVersion.
    Closed,
}

impl RbacAuthorizer {
    /// Lists and watches roles, cluster roles and both kinds of bindings, keeping the index
    /// current, until `stop` is cancelled.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let followers: Vec<_> = Kind::ALL
            .iter()
            .zip(self.stores.iter())
            .map(|(&kind, store)| {
                let this = self.clone();
                let store = store.clone();
                let stop = stop.clone();
                tokio::spawn(async move { this.follow(kind, store, stop).await })
            })
            .collect();
        for follower in followers {
            if let Err(e) = follower.await {
                warn!(error = %e, "RBAC watch task failed");
            }
        }
    }

    /// Resolves once the first lists of all four resources are indexed.
    pub async fn synced(&self) {
        let all = Kind::ALL.iter().fold(0, |bits, k| bits | k.bit());
        let mut synced = self.synced.subscribe();
        // The sender lives as long as self, so the wait ends only when all are in.
        let _ = synced.wait_for(|bits| bits & all == all).await;
    }

    async fn follow(&self, kind: Kind, store: Arc<Store>, stop: CancellationToken) {
        loop {
            let Some(mut rv) = self.list(kind, &store, &stop).await else {
                return;
            };
            loop {
                match self.watch(kind, &store, &mut rv, &stop).await {
                    WatchEnd::Stopped => return,
                    WatchEnd::Expired => break,
                    WatchEnd::Closed => {
                        if !pause(&stop).await {
                            return;
                        }
                    }
                }
            }
            info!(
                resource = kind.plural(),
                "RBAC watch expired; listing again"
            );
        }
    }

    /// Lists `kind` into the index, retrying until it works; the list's resourceVersion, or
    /// None once stopped.
    async fn list(&self, kind: Kind, store: &Store, stop: &CancellationToken) -> Option<String> {
        let opts = ListOptions::default();
        loop {
            let listed = tokio::select! {
                () = stop.cancelled() => return None,
                listed = store.list(None, &opts) => listed,
            };
            match listed {
                Ok(mut list) => {
                    let rv = list["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let items = match list.get_mut("items").map(Value::take) {
                        Some(Value::Array(items)) => items,
                        _ => Vec::new(),
                    };
                    self.write().replace(kind, &items);
                    self.synced.send_modify(|bits| *bits |= kind.bit());
                    debug!(resource = kind.plural(), items = items.len(), resource_version = %rv, "RBAC indexed");
                    return Some(rv);
                }
                Err(e) => {
                    warn!(resource = kind.plural(), error = %e, "RBAC list failed");
                    if !pause(stop).await {
                        return None;
                    }
                }
            }
        }
    }

    /// Applies `kind`'s changes after `rv`, advancing it, until the watch ends.
    async fn watch(
        &self,
        kind: Kind,
        store: &Store,
        rv: &mut String,
        stop: &CancellationToken,
    ) -> WatchEnd {
        let opts = ListOptions {
            resource_version: Some(rv.clone()),
            allow_watch_bookmarks: true,
            ..Default::default()
        };
        let started = tokio::select! {
            () = stop.cancelled() => return WatchEnd::Stopped,
            started = store.watch(None, None, &opts) => started,
        };
        let mut events = match started {
            Ok(events) => events,
            Err(e) if u64::from(e.code()) == GONE => return WatchEnd::Expired,
            Err(e) => {
                warn!(resource = kind.plural(), error = %e, "RBAC watch failed");
                return WatchEnd::Closed;
            }
        };
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => return WatchEnd::Stopped,
                event = events.next() => event,
            };
            let Some(event) = event else {
                return WatchEnd::Closed;
            };
            if event.kind == WatchEventType::Error {
                if event.object["code"].as_u64() == Some(GONE) {
                    return WatchEnd::Expired;
                }
                warn!(resource = kind.plural(), status = %event.object, "RBAC watch error");
                return WatchEnd::Closed;
            }
            if let Some(next) = event.object["metadata"]["resourceVersion"].as_str() {
                next.clone_into(rv);
            }
            match event.kind {
                WatchEventType::Added | WatchEventType::Modified => {
                    self.write().apply(kind, &event.object)
                }
                WatchEventType::Deleted => self.write().remove(kind, &event.object),
                WatchEventType::Bookmark | WatchEventType::Error => {}
            }
        }
    }
}

/// Waits before a retry; false once stopped.
async fn pause(stop: &CancellationToken) -> bool {
    tokio::select! {
        () = stop.cancelled() => false,
        () = tokio::time::sleep(RETRY) => true,
    }
}
