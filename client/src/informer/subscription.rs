//! What a subscriber to a shared informer reads: an Add for every object the informer knew
//! when it subscribed, then every change from then on.
//!
//! The objects already known are taken as the indexer holds them (stored bytes, a reference
//! count each) and decoded one at a time as the subscriber reads them, so subscribing to an
//! informer of 30,000 pods neither decodes 30,000 objects under the informer's lock nor parks
//! their decoded forms in a channel.

use std::sync::Arc;

use tokio::sync::mpsc::{self, error::TryRecvError};

use super::indexer::{Held, Indexer};
use super::Notification;

/// The objects known at subscription, still to be handed out.
struct Replay {
    held: std::vec::IntoIter<Held>,
    /// Decodes them as the indexer does its own reads.
    indexer: Arc<Indexer>,
}

/// A subscription to a [`super::SharedInformer`]. The informer took the snapshot and opened
/// the channel together under its lock, so every object is replayed exactly once, as it was
/// at that moment, before any change the channel carries. Dropping it unsubscribes.
pub struct Subscription {
    replay: Option<Replay>,
    live: mpsc::UnboundedReceiver<Notification>,
}

impl Subscription {
    pub(super) fn new(
        known: Vec<Held>,
        indexer: Arc<Indexer>,
        live: mpsc::UnboundedReceiver<Notification>,
    ) -> Self {
        let replay = (!known.is_empty()).then(|| Replay {
            held: known.into_iter(),
            indexer,
        });
        Self { replay, live }
    }

    /// The next replayed object, decoded now; one that does not decode is skipped (the
    /// indexer logs it). Once the replay is done its snapshot is freed.
    fn next_replayed(&mut self) -> Option<Notification> {
        let replay = self.replay.as_mut()?;
        let next = replay
            .held
            .by_ref()
            .find_map(|held| replay.indexer.decode_held(&held));
        if next.is_none() {
            self.replay = None;
        }
        next.map(Notification::Add)
    }

    /// The next notification; None once the informer stopped (or dropped this subscriber)
    /// and everything before that was read. Cancel-safe: nothing is taken before it returns.
    pub async fn recv(&mut self) -> Option<Notification> {
        if self.replay.is_some() {
            // A replay is ready at once; the budget keeps a long one from starving the
            // other tasks of this worker, as a channel's recv would.
            tokio::task::coop::consume_budget().await;
            if let Some(replayed) = self.next_replayed() {
                return Some(replayed);
            }
        }
        self.live.recv().await
    }

    /// The next notification if one is ready.
    pub fn try_recv(&mut self) -> Result<Notification, TryRecvError> {
        match self.next_replayed() {
            Some(replayed) => Ok(replayed),
            None => self.live.try_recv(),
        }
    }

    /// How many known objects are still to be replayed (some may yet fail to decode).
    pub fn replay_remaining(&self) -> usize {
        self.replay.as_ref().map_or(0, |r| r.held.len())
    }
}
