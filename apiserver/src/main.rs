//! The API server binary: storage (embedded by default, etcd with `--etcd-servers`) behind
//! kube-apiserver's HTTP surface.

mod allocator;

use std::process::ExitCode;

use apiserver::options::Options;
use clap::Parser;
use tracing::{error, info, warn};

// mimalloc keeps allocation cheap under many concurrent requests, where the system
// allocator's locks showed up as a large share of the registry's cost. The `heap-profile`
// feature leaves the system allocator in place, whose calls heaptrack can see.
#[cfg(not(feature = "heap-profile"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // The flags first: they choose the log format (a bad flag is reported by clap on stderr).
    let options = Options::parse();
    apiserver::logging::init(options.logging_format);
    match apiserver::open_files::raise() {
        Ok(Some((before, after))) => info!(before, after, "raised the open-file limit"),
        Ok(None) => {}
        Err(e) => warn!(error = %e, "could not raise the open-file limit"),
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Blocking threads a burst started (the embedded store's scans of concurrent lists)
        // end soon after it, and with them the memory their stacks and allocator heaps hold;
        // tokio's default keeps them ten seconds.
        .thread_keep_alive(std::time::Duration::from_secs(1))
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            error!(error = %e, "starting the async runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(apiserver::run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!(error = %e, "apiserver failed");
            ExitCode::FAILURE
        }
    }
}
