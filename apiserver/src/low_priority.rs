//! A second async runtime whose threads run at the lowest CPU priority (nice 19), for bulk
//! work that must not take the cores from short requests: encoding the rest of a large list.
//!
//! Why a runtime of its own: tokio does not preempt, and the kernel cannot tell a worker
//! thread busy encoding megabytes from one about to answer a GET of one object, so on a busy
//! machine a short request waits for the scheduler's time slices of the bulk work (a single
//! CPU-bound process beside the server moves a GET's p99 from 0.07 ms to over 1 ms). Bulk
//! work on threads of the lowest priority yields the core to the main runtime's workers
//! whenever they have something to do, and still gets every cycle they leave. Its tasks may
//! await anything the main runtime's tasks can (storage reads, channels): this runtime has its
//! own timers and I/O driver, and futures of the other runtime wake across runtimes.
//!
//! What a task starts stays here too: its blocking work (the embedded store's range reads)
//! runs on this runtime's blocking threads, at nice 19 as well, and never on the main
//! runtime's, whose threads would inherit the priority of the thread that started them and
//! could not get it back unprivileged. The one thing that outlives a list is a connection it
//! dials (a conversion webhook's): that connection is then driven from here for the requests
//! that reuse it from the pool, which is slower only while the cores are saturated.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Runtime};

/// The runtime, started at its first use and kept for the life of the process (a runtime
/// cannot be dropped from async code).
fn runtime() -> Option<&'static Runtime> {
    static RUNTIME: OnceLock<Option<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
            Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("low-priority")
                .on_thread_start(lowest_cpu_priority)
                .thread_keep_alive(std::time::Duration::from_secs(1))
                .enable_all()
                .build()
                .inspect_err(|e| {
                    tracing::warn!(error = %e, "no low-priority runtime; bulk work runs with the requests")
                })
                .ok()
        })
        .as_ref()
}

/// Runs `task` on the low-priority runtime, or, where it could not be started, on the
/// caller's.
pub(crate) fn spawn<F>(task: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    match runtime() {
        Some(runtime) => drop(runtime.spawn(task)),
        None => drop(tokio::spawn(task)),
    }
}

/// Nice 19 for the calling thread: on Linux a thread id names that thread alone, and the
/// threads it starts inherit it. Where that is refused, the thread keeps its priority.
fn lowest_cpu_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take and return plain integers.
        let refused = unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS as _, tid as libc::id_t, 19) != 0
        };
        if refused {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "a low-priority thread keeps the process's priority"
            );
        }
    }
}

/// The nice value of the calling thread.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn nice() -> i32 {
    // SAFETY: as in `lowest_cpu_priority`; errno is cleared first since -1 is a valid
    // priority.
    unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS as _, libc::gettid() as libc::id_t)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::nice;

    #[tokio::test]
    async fn tasks_run_at_nice_19_and_requests_keep_theirs() {
        let before = nice();
        let (tx, rx) = tokio::sync::oneshot::channel();
        super::spawn(async move {
            let blocking = tokio::task::spawn_blocking(nice).await.ok();
            let _ = tx.send((nice(), blocking));
        });
        assert_eq!(rx.await.ok(), Some((19, Some(19))));
        assert_eq!(nice(), before, "the caller's thread keeps its priority");
    }
}
