//! Storage benchmark, all in one run, side by side:
//!
//! 1. raw etcd through `etcd_client` (put / get of 1 KiB values),
//! 2. our `KvStore` on the etcd backend ("ours-etcd"), as a ratio of raw etcd,
//! 3. our `KvStore` on the embedded backend (data in a temp dir), as a ratio of raw etcd,
//!
//! each with 1 and with many concurrent writers (tokio tasks), and
//!
//! 4. watch fan-out latency through a `Cacher` on each backend: many watchers, one writer doing
//!    spaced writes, latency from the moment the write was sent to each delivery.
//!
//! Run: `cargo bench -p storage --bench storage` (needs the `etcd` binary, or `$ETCD_BIN`).
//!
//! Environment overrides (defaults in brackets):
//! - `BENCH_OPS`       ops of each many-writer run [20000]
//! - `BENCH_OPS_1`     ops of each single-writer run [2000]
//! - `BENCH_WRITERS`   concurrency of the many-writer runs [64]
//! - `BENCH_VALUE`     value size in bytes [1024]
//! - `BENCH_WATCHERS`  watchers per cacher [1000]
//! - `BENCH_WATCH_EVENTS`       writes observed by the watchers [200]
//! - `BENCH_WATCH_INTERVAL_MS`  spacing of those writes [5]
//! - `BENCH_ROUNDS`    each row's ops are split into this many rounds, the systems taking
//!   turns (rotating who goes first) so background load falls on all alike [3]
//!
//! Diagnostic: the put and update rows also run, straight through `etcd_client`, the same
//! compare-and-swap txn the etcd backend sends, to tell etcd's txn cost from our layers' cost.

mod config;
mod kv;
mod report;
mod stats;
mod tasks;
mod watch;

use std::sync::Arc;
use std::time::Instant;

use storage::backend::etcd::{EtcdBackend, EtcdConfig};
use storage::backend::DynBackend;
use storage::KvStore;
use test_support::{EtcdServer, TestBackend};

use config::Config;
use kv::{Phase, Systems};
use watch::watch_fanout;

async fn bench(cfg: Config) {
    let bench_started = Instant::now();
    let etcd = EtcdServer::start().await;
    let etcd_backend = EtcdBackend::connect(EtcdConfig::new(vec![etcd.endpoint()]))
        .await
        .expect("connecting to the benchmark etcd");
    let raw = etcd_backend.client();
    let etcd_backend: DynBackend = Arc::new(etcd_backend);
    let ours = KvStore::new(etcd_backend.clone(), "/registry");

    let embedded_test_backend = TestBackend::embedded().await;
    let embedded_backend: DynBackend = storage::backend::open(
        &embedded_test_backend.etcd_servers(),
        embedded_test_backend.data_dir(),
    )
    .await
    .expect("open the test backend");
    let embedded = KvStore::new(embedded_backend.clone(), "/registry");

    println!(
        "storage benchmark: {} B values; {} ops with 1 writer, {} ops with {} writers, in {} rounds; etcd at {}; embedded in {}",
        cfg.value_size,
        cfg.ops_1,
        cfg.ops_n,
        cfg.writers_n,
        cfg.rounds,
        etcd.endpoint(),
        embedded_test_backend.data_dir().display()
    );
    println!(
        "ours-etcd = KvStore on the etcd backend; ratios are against raw etcd (etcd_client put/get); put = Interface::create, update = guaranteed_update from the created value, get = Interface::get(Latest)"
    );

    let systems = Systems {
        raw,
        ours,
        embedded,
    };
    let phase = |name: String, writers: usize, ops: usize, rounds: usize| Phase {
        systems: &systems,
        name,
        writers,
        ops,
        rounds,
        value_size: cfg.value_size,
    };
    phase("warm".into(), 16, 512, 1).warm_up().await;

    let mut rows = Vec::new();
    for (writers, ops) in [(1, cfg.ops_1), (cfg.writers_n, cfg.ops_n)] {
        let phase_rows = phase(format!("{writers}w"), writers, ops, cfg.rounds)
            .rows()
            .await;
        for row in &phase_rows {
            row.print();
        }
        rows.extend(phase_rows);
    }

    let watch_etcd = watch_fanout("etcd", etcd_backend, &cfg).await;
    watch_etcd.print();
    let watch_embedded = watch_fanout("embedded", embedded_backend, &cfg).await;
    watch_embedded.print();

    let targets = report::targets(&rows, cfg.writers_n, &[&watch_etcd, &watch_embedded]);
    println!("targets: {targets}");
    println!("total time {:.1} s", bench_started.elapsed().as_secs_f64());
}

fn main() {
    let cfg = Config::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("building the tokio runtime");
    runtime.block_on(bench(cfg));
}
