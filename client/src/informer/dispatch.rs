//! A controller's event loop: every notification of an informer's subscription handed to
//! the controller until it stops.

use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Notification, SharedInformer, Subscription};

/// Calls `handle` with each notification until `stop` fires or the informer closes.
pub fn dispatch(
    mut notifications: Subscription,
    stop: CancellationToken,
    handle: impl Fn(Notification) + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                n = notifications.recv() => match n {
                    Some(n) => handle(n),
                    None => break,
                },
            }
        }
    })
}

/// Whether a handler has caught up with its informer's initial list (upstream's event handler
/// registration HasSynced): an informer that has synced has handed its list out, but a
/// handler may not have handled it yet, and a decision taken meanwhile (the scheduler's, on a
/// cache still missing nodes) goes wrong.
#[derive(Clone)]
pub struct HandlerSynced(watch::Receiver<bool>);

impl HandlerSynced {
    /// Waits until the handler has caught up; false if it stopped first.
    pub async fn wait(&mut self) -> bool {
        self.0.wait_for(|synced| *synced).await.is_ok()
    }
}

/// [`dispatch`] over `informer`'s notifications, and when its handler has caught up: once the
/// informer has synced, every notification ready then (its initial list, replayed or sent)
/// is handled before the signal is given.
pub fn dispatch_synced(
    informer: &SharedInformer,
    mut notifications: Subscription,
    stop: CancellationToken,
    handle: impl Fn(Notification) + Send + 'static,
) -> (JoinHandle<()>, HandlerSynced) {
    let (synced, signal) = watch::channel(false);
    let informer = informer.clone();
    let task = tokio::spawn(async move {
        let informer_synced = informer.wait_for_sync();
        tokio::pin!(informer_synced);
        let mut waiting = true;
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                ok = &mut informer_synced, if waiting => {
                    waiting = false;
                    if !ok {
                        break;
                    }
                    loop {
                        match notifications.try_recv() {
                            Ok(n) => handle(n),
                            Err(TryRecvError::Empty) => break,
                            Err(TryRecvError::Disconnected) => return,
                        }
                    }
                    synced.send_replace(true);
                }
                n = notifications.recv() => match n {
                    Some(n) => handle(n),
                    None => break,
                },
            }
        }
    });
    (task, HandlerSynced(signal))
}

/// Calls `reload` once each informer has synced and again on every change any of them
/// delivers, until `stop` fires: for configuration built whole from a few small collections
/// (admission webhooks and policies, priority and fairness), where rebuilding on each change is
/// simpler than applying deltas. Notifications that are ready together (the replay of what was
/// known at subscription, a relist) cause one reload, not one each.
pub fn reload_on_change(
    informers: impl IntoIterator<Item = super::SharedInformer>,
    stop: CancellationToken,
    reload: impl Fn() + Send + Sync + 'static,
) {
    let reload = std::sync::Arc::new(reload);
    for informer in informers {
        let mut notifications = informer.subscribe();
        let (reload, stop) = (reload.clone(), stop.clone());
        tokio::spawn(async move {
            if informer.wait_for_sync().await {
                reload();
            }
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    n = notifications.recv() => match n {
                        Some(_) => {
                            while notifications.try_recv().is_ok() {}
                            reload();
                        }
                        None => break,
                    },
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::informer::fake::{list_of, obj, Fake};
    use crate::informer::{InformerConfig, SharedInformer};

    #[tokio::test(start_paused = true)]
    async fn a_handler_is_synced_once_it_has_handled_the_initial_list() {
        let fake = Fake::default();
        fake.script_list(Ok(list_of(
            10,
            (0..50).map(|i| obj(&format!("o{i}"), i + 1)).collect(),
        )));
        let informer = SharedInformer::new(Arc::new(fake), InformerConfig::default());
        // Subscribed before the list arrives: the objects come as notifications, not a replay.
        let notifications = informer.subscribe();
        let handled = Arc::new(AtomicUsize::new(0));
        let counted = handled.clone();
        let stop = CancellationToken::new();
        let (task, mut synced) =
            dispatch_synced(&informer, notifications, stop.clone(), move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
            });
        informer.start();
        assert!(synced.wait().await);
        assert_eq!(handled.load(Ordering::SeqCst), 50);
        stop.cancel();
        let _ = task.await;
        informer.stop().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_replay_reloads_once_not_once_per_object() {
        let fake = Fake::default();
        fake.script_list(Ok(list_of(
            10,
            (0..50).map(|i| obj(&format!("o{i}"), i + 1)).collect(),
        )));
        let informer = SharedInformer::new(Arc::new(fake), InformerConfig::default());
        informer.start();
        assert!(informer.wait_for_sync().await);
        let reloads = Arc::new(AtomicUsize::new(0));
        let counted = reloads.clone();
        let stop = CancellationToken::new();
        reload_on_change([informer.clone()], stop.clone(), move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Once at sync, once for the 50 replayed Adds.
        assert_eq!(reloads.load(Ordering::SeqCst), 2);
        stop.cancel();
        informer.stop().await;
    }
}
