//! A controller's event loop: every notification of an informer's subscription handed to
//! the controller until it stops.

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Notification;

/// Calls `handle` with each notification until `stop` fires or the informer closes.
pub fn dispatch(
    mut notifications: mpsc::UnboundedReceiver<Notification>,
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
