//! The API server binary: storage (embedded by default, etcd with `--etcd-servers`) behind
//! kube-apiserver's HTTP surface.

use std::process::ExitCode;

use apiserver::options::Options;
use clap::Parser;
use tracing::error;

// mimalloc keeps allocation cheap under many concurrent requests, where the system
// allocator's locks showed up as a large share of the registry's cost.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    // The flags first: they choose the log format (a bad flag is reported by clap on stderr).
    let options = Options::parse();
    apiserver::logging::init(options.logging_format);
    match apiserver::run(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!(error = %e, "apiserver failed");
            ExitCode::FAILURE
        }
    }
}
