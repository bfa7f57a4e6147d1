//! What HTTP and JSON cost over the registry Store, in one run on one backend: creates and
//! gets of ConfigMaps of about 1 KiB by 64 concurrent clients, once on the Store directly and
//! once through the server's router over loopback with keep-alive connections. Targets: HTTP
//! costs at most 2x the Store alone (Store ops/s ÷ HTTP ops/s ≤ 2.0) for create and for get,
//! and a GET's p99 over HTTP is at most 2 ms.
//!
//! Run: `cargo bench -p apiserver --bench http`. `BENCH_OBJECTS` sets the objects per phase
//! (default 20000), `BENCH_CLIENTS` the concurrent clients (64), `BENCH_ROUNDS` the rounds
//! (3), `BENCH_WARMUP` the objects of the unreported warm-up round (2000).

mod load;
mod phases;
mod server;

use std::time::Instant;

use load::Phase;
use test_support::stats::{median, ms, verdict};
use tracing_subscriber::EnvFilter;

// The allocator the server binary uses, so the figures reflect what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RATIO_TARGET: f64 = 2.0;
const GET_P99_TARGET_MS: f64 = 2.0;

struct Config {
    objects: usize,
    clients: usize,
    rounds: usize,
    warmup: usize,
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().ok().filter(|n| *n > 0).unwrap_or_else(|| {
            eprintln!("ignoring {name}={v:?}: not a positive integer; using {default}");
            default
        }),
        Err(_) => default,
    }
}

/// One round: (Store, HTTP) for create, then for get.
struct Round {
    create: (Phase, Phase),
    get: (Phase, Phase),
}

async fn round(
    s: &server::Server,
    client: &phases::HttpClient,
    c: &Config,
    (tag, n): (&str, usize),
    store_first: bool,
) -> Round {
    let store = s
        .registry
        .store("", "v1", "configmaps")
        .expect("configmaps store");
    let names =
        |side: &str| -> Vec<String> { (0..n).map(|i| format!("{side}-{tag}-{i:06}")).collect() };
    let (store_names, http_names) = (names("store"), names("http"));
    let store_create = || phases::store_create(&store, c.clients, &store_names);
    let http_create = || phases::http_create(client, s.addr, c.clients, &http_names);
    let store_get = || phases::store_get(&store, c.clients, &store_names);
    let http_get = || phases::http_get(client, s.addr, c.clients, &http_names);
    if store_first {
        let create = (store_create().await, http_create().await);
        let get = (store_get().await, http_get().await);
        Round { create, get }
    } else {
        let create = http_create().await;
        let create = (store_create().await, create);
        let get = http_get().await;
        let get = (store_get().await, get);
        Round { create, get }
    }
}

fn ratio(store: &Phase, http: &Phase) -> f64 {
    store.ops_per_sec / http.ops_per_sec.max(1e-9)
}

fn row(label: &str, op: &str, (store, http): (&Phase, &Phase), ratio: f64) {
    println!(
        "{label:<7} {op:<7} {:>10.0} {:>7.3} {:>7.3} | {:>10.0} {:>7.3} {:>7.3} {:>6} | {ratio:>5.2}",
        store.ops_per_sec,
        ms(store.p50),
        ms(store.p99),
        http.ops_per_sec,
        ms(http.p50),
        ms(http.p99),
        http.errors,
    );
    for (side, phase) in [("store", store), ("http", http)] {
        if let Some(e) = &phase.first_error {
            println!(
                "        {side} {op}: {} errors of {}, first: {e}",
                phase.errors,
                phase.errors + phase.ok
            );
        }
    }
}

/// The median of each figure over the rounds, as one phase; errors are summed.
fn median_phase(phases: &[&Phase]) -> Phase {
    let pick = |f: &dyn Fn(&Phase) -> f64| median(phases.iter().map(|p| f(p)).collect());
    let secs = |f: &dyn Fn(&Phase) -> f64| std::time::Duration::from_secs_f64(pick(f).max(0.0));
    Phase {
        ops_per_sec: pick(&|p| p.ops_per_sec),
        ok: phases.iter().map(|p| p.ok).sum(),
        errors: phases.iter().map(|p| p.errors).sum(),
        first_error: None,
        p50: secs(&|p| p.p50.as_secs_f64()),
        p99: secs(&|p| p.p99.as_secs_f64()),
    }
}

async fn bench(c: Config) {
    let started = Instant::now();
    let s = server::start().await;
    let client = phases::http_client();
    println!(
        "apiserver http bench: {} objects per phase, {} clients, {} rounds (median reported), embedded backend, {} runtime workers",
        c.objects,
        c.clients,
        c.rounds,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    round(&s, &client, &c, ("warm", c.warmup), true).await;
    println!("                      Store                  |                HTTP               | Store ops/s");
    println!(
        "round   op           ops/s  p50 ms  p99 ms |      ops/s  p50 ms  p99 ms errors | ÷ HTTP"
    );
    let mut rounds = Vec::with_capacity(c.rounds);
    for r in 0..c.rounds {
        // Which side goes first alternates, so noise and the store's growth fall on both.
        let tag = format!("r{r}");
        let result = round(&s, &client, &c, (&tag, c.objects), r % 2 == 0).await;
        let label = format!("{}", r + 1);
        for (op, (store, http)) in [("create", &result.create), ("get", &result.get)] {
            row(&label, op, (store, http), ratio(store, http));
        }
        rounds.push(result);
    }
    let mut figures = Vec::new();
    for (op, pick) in [
        (
            "create",
            (|r: &Round| &r.create) as fn(&Round) -> &(Phase, Phase),
        ),
        ("get", |r: &Round| &r.get),
    ] {
        let store = median_phase(&rounds.iter().map(|r| &pick(r).0).collect::<Vec<_>>());
        let http = median_phase(&rounds.iter().map(|r| &pick(r).1).collect::<Vec<_>>());
        // Each round's ratio pairs sides that ran under the same conditions.
        let ratio = median(
            rounds
                .iter()
                .map(|r| ratio(&pick(r).0, &pick(r).1))
                .collect(),
        );
        row("median", op, (&store, &http), ratio);
        figures.push((ratio, http));
    }
    let (create_ratio, get_ratio) = (figures[0].0, figures[1].0);
    let get_p99 = ms(figures[1].1.p99);
    let errors = figures[0].1.errors + figures[1].1.errors;
    println!(
        "server accepted {} connections; run took {:.1} s",
        s.connections.load(std::sync::atomic::Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    println!(
        "targets: create Store/HTTP {create_ratio:.2} <= {RATIO_TARGET:.1} {}; get Store/HTTP {get_ratio:.2} <= {RATIO_TARGET:.1} {}; HTTP GET p99 {get_p99:.3} ms <= {GET_P99_TARGET_MS} ms {}; HTTP errors {errors} {}",
        verdict(create_ratio <= RATIO_TARGET),
        verdict(get_ratio <= RATIO_TARGET),
        verdict(get_p99 <= GET_P99_TARGET_MS),
        verdict(errors == 0),
    );
    drop(client);
    s.stop().await;
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = Config {
        objects: env_usize("BENCH_OBJECTS", 20_000),
        clients: env_usize("BENCH_CLIENTS", 64),
        rounds: env_usize("BENCH_ROUNDS", 3),
        warmup: env_usize("BENCH_WARMUP", 2_000),
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(bench(config));
}
