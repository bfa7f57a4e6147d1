//! The runtime the controllers, the scheduler and the simulated nodes run on, apart from the
//! one that serves requests. They stand for other processes and other machines
//! (kube-controller-manager, kube-scheduler, the kubelets), and when they saturate the cores
//! (thousands of pods starting at once) a request must not wait in the same queue behind
//! their tasks: tokio does not preempt, but the kernel shares the cores between the two
//! runtimes' threads, so a request's task runs within a time slice however much work the
//! controllers have queued. Both run at the same priority: a lower one would also yield to
//! every other process on the machine, and a cluster on a busy laptop would stall.
//!
//! The runtime lives on a thread of its own (a runtime cannot be dropped from async code)
//! until the controllers' task has ended; tasks of either runtime wake each other freely.

use std::time::Duration;

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

/// Ends the runtime when dropped: send nothing, just drop it once the controllers stopped.
pub(super) type Release = oneshot::Sender<()>;

/// Starts the runtime; its handle, and what ends it.
pub(super) fn start() -> std::io::Result<(Handle, Release)> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runtime = Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("controllers")
        // As the main runtime's: blocking threads a burst started end soon after it.
        .thread_keep_alive(Duration::from_secs(1))
        .enable_all()
        .build()?;
    let handle = runtime.handle().clone();
    let (release, released) = oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("controllers-runtime".into())
        .spawn(move || {
            runtime.block_on(async {
                let _ = released.await;
            });
            // Whatever a controller left running ends with the runtime.
            runtime.shutdown_timeout(Duration::from_secs(5));
        })?;
    Ok((handle, release))
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn tasks_run_on_threads_of_their_own_until_released() {
        let (handle, release) = super::start().expect("a runtime");
        let name = handle
            .spawn(async { std::thread::current().name().map(str::to_string) })
            .await
            .expect("runs");
        assert_eq!(name.as_deref(), Some("controllers"));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let pending = handle.spawn(async move {
            let _ = rx.await;
        });
        drop(release);
        // Released: the runtime ends, and a task still waiting there is cancelled.
        let ended = tokio::time::timeout(std::time::Duration::from_secs(10), pending)
            .await
            .expect("the runtime ended");
        assert!(ended.is_err_and(|e| e.is_cancelled()));
        drop(tx);
    }
}
