//! The API server binary: storage (embedded by default, etcd with `--etcd-servers`) behind
//! kube-apiserver's HTTP surface.

use std::process::ExitCode;

use apiserver::options::Options;
use clap::Parser;
use tracing::error;
use tracing_subscriber::EnvFilter;

// mimalloc keeps allocation cheap under many concurrent requests, where the system
// allocator's locks showed up as a large share of the registry's cost.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let options = Options::parse();
    match apiserver::run(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!(error = %e, "apiserver failed");
            ExitCode::FAILURE
        }
    }
}
