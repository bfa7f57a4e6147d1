//! A controller's event loop: every notification of an informer's subscription handed to
//! the controller until it stops.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Notification, Subscription};

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

/// Calls `reload` once each informer has synced and again on every change any of them
/// delivers, until `stop` fires: for configuration built whole from a few small collections
/// (admission webhooks and policies, priority and fairness), where rebuilding on each change is
/// simpler than applying deltas.
pub fn reload_on_change(
    informers: impl IntoIterator<Item = super::SharedInformer>,
    stop: CancellationToken,
    reload: impl Fn() + Send + Sync + 'static,
) {
    let reload = std::sync::Arc::new(reload);
    for informer in informers {
        let notifications = informer.subscribe();
        let (reload, stop) = (reload.clone(), stop.clone());
        tokio::spawn(async move {
            if informer.wait_for_sync().await {
                reload();
            }
            let _ = dispatch(notifications, stop, move |_| reload()).await;
        });
    }
}
