//! A noisy neighbour, with API Priority and Fairness and without it (the baseline: the server
//! started with `--enable-priority-and-fairness=false`, plain in-flight limits): tenant A
//! floods the server from 48 kept-alive HTTPS connections with a bearer token (cluster-wide
//! lists of 3,000 ConfigMaps of 2 KB, then creates of 2 KB ConfigMaps), each connection
//! waiting the Retry-After of a 429 as client-go does; tenant B GETs one ConfigMap on one
//! connection, timed alone and then under the flood. Tenant A has its own priority level (one
//! queue of 8, 3 seats; see `test_support::noisy_neighbour::limit_noisy_tenant` for why),
//! created in both runs. The release binary, a fresh data dir per run.
//!
//! Prints, per run and flood: B's p50/p99 alone and under the flood, their p99 ratio, B's
//! refusals, and A's answers (served, 429, other statuses and broken connections). Each
//! figure is the median of rounds that each time B alone and then B under the flood, back to
//! back (the counts are their sums): the machine is shared, and other processes' load alone
//! moves B's p99 of one phase between 0.06 and 1.7 ms. All list rounds come first, since the
//! creates add to what the lists go through. Exits
//! non-zero when, with priority and fairness, B's p99 under the flood is more than 5 times
//! its p99 alone, B was refused, or A never got a 429 (the goal).
//!
//! A's level has 3 seats and a list costs 1 of them (upstream's per-level cap, 15% of the
//! level's seats), so three lists of 6.5 MB are encoded at once: on a 2-core machine that
//! takes both cores, and B's p99 (not its p50) stays within the goal because the lists are
//! encoded on the server's low-priority threads (see README for the figures).
//!
//! The bench's own client threads share the machine with the server: A's connections
//! decrypt every list they are served. They run at nice 19 (see
//! `test_support::noisy_neighbour`), in both runs, as A's clients would be other machines.
//!
//! `cargo bench -p apiserver --bench noisy_neighbour`; `NOISY_NEIGHBOUR_OBJECTS` (default
//! 3000), `NOISY_NEIGHBOUR_CONNECTIONS` (A's, default 48), `NOISY_NEIGHBOUR_GETS` and
//! `NOISY_NEIGHBOUR_SECONDS` (B's timed GETs per phase, at least, and for at least that long:
//! default 1000 and 4 s, several of A's Retry-After waves), `NOISY_NEIGHBOUR_ROUNDS` (default
//! 3); the server binary from `APISERVER_BIN`, default the one
//! cargo built.

use std::path::Path;
use std::time::{Duration, Instant};

use test_support::noisy_neighbour::{self, measure, Outcome, Request, Scenario};
use test_support::server::{self, ApiServer, Launch};
use test_support::stats::{median, ms};
use test_support::wait_until;

/// The goal: B's p99 under the flood within this many times its p99 alone.
const GOAL: f64 = 5.0;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A fresh server with the two tenants' tokens, priority and fairness on or off.
fn start(bin: &Path, apf: bool) -> ApiServer {
    Launch::new(bin)
        .token_file(noisy_neighbour::TOKENS)
        .args([format!("--enable-priority-and-fairness={apf}")])
        .args(["--nodes", "0", "--disable-controllers"])
        .start()
}

struct Row {
    run: &'static str,
    flood: &'static str,
    apf: bool,
    rounds: Vec<Outcome>,
}

impl Row {
    /// The median over the rounds of a figure in milliseconds.
    fn median_ms(&self, figure: impl Fn(&Outcome) -> Duration) -> f64 {
        median(self.rounds.iter().map(|o| ms(figure(o))).collect())
    }

    fn ratio(&self) -> f64 {
        median(self.rounds.iter().map(Outcome::p99_ratio).collect())
    }

    /// The sum over the rounds of a count.
    fn total(&self, count: impl Fn(&Outcome) -> usize) -> usize {
        self.rounds.iter().map(count).sum()
    }
}

/// One run: a fresh server, populated, then the list flood and the create flood.
fn run(bin: &Path, apf: bool, knobs: [usize; 5]) -> Vec<Row> {
    let [objects, connections, gets, span, rounds] = knobs;
    let span = span as u64;
    let server = start(bin, apf);
    let port = server.port;
    let secure_port = server.secure_port.expect("a secure port");
    noisy_neighbour::bind_tenants(port);
    let started = Instant::now();
    noisy_neighbour::populate(port, objects);
    eprintln!(
        "  {objects} ConfigMaps created in {:.1?}",
        started.elapsed()
    );
    noisy_neighbour::limit_noisy_tenant(port, apf);
    let ca = server.ca();
    // The bindings reach the authorizer through its watch.
    wait_until("tenant B allowed", Duration::from_secs(20), || {
        server
            .secure("token-b")
            .and_then(|mut c| c.exchange("GET", noisy_neighbour::QUIET_TARGET, b""))
            .is_ok_and(|r| r.status == 200)
    });
    let floods = [
        (
            "lists",
            Request {
                method: "GET",
                path: "/api/v1/configmaps".into(),
                body: Vec::new(),
            },
        ),
        (
            "creates",
            Request {
                method: "POST",
                path: noisy_neighbour::CREATE_PATH.into(),
                body: noisy_neighbour::create_body(),
            },
        ),
    ];
    floods
        .into_iter()
        .map(|(flood, request)| {
            let scenario = Scenario {
                port: secure_port,
                ca: ca.clone(),
                quiet_token: "token-b".into(),
                quiet_path: noisy_neighbour::QUIET_TARGET.into(),
                gets,
                span: Duration::from_secs(span),
                noisy_token: "token-a".into(),
                connections,
                flood: request,
            };
            let rounds = (0..rounds)
                .map(|_| measure(&scenario, |_| {}).expect("B's GETs"))
                .collect();
            Row {
                run: if apf { "APF on" } else { "APF off" },
                flood,
                apf,
                rounds,
            }
        })
        .collect()
}

fn main() {
    let objects = knob("NOISY_NEIGHBOUR_OBJECTS", 3000);
    let connections = knob("NOISY_NEIGHBOUR_CONNECTIONS", 48);
    let gets = knob("NOISY_NEIGHBOUR_GETS", 1000);
    let span = knob("NOISY_NEIGHBOUR_SECONDS", 4);
    let rounds = knob("NOISY_NEIGHBOUR_ROUNDS", 3).max(1);
    let bin = server::binary(env!("CARGO_BIN_EXE_apiserver"));
    println!(
        "noisy_neighbour: A floods from {connections} HTTPS connections ({objects} × 2 KB ConfigMaps listed, or 2 KB creates); B times {gets} GETs and {span} s at least, alone, then under the flood; median of {rounds} rounds"
    );
    let mut rows = Vec::new();
    for apf in [true, false] {
        eprintln!(
            "run with priority and fairness {}",
            if apf { "on" } else { "off" }
        );
        rows.extend(run(&bin, apf, [objects, connections, gets, span, rounds]));
    }
    println!(
        "{:<8} {:<8} {:>10} {:>10} {:>10} {:>10} {:>7} {:>9} {:>8} {:>7} {:>12}",
        "run",
        "flood",
        "alone p50",
        "alone p99",
        "flood p50",
        "flood p99",
        "ratio",
        "B refused",
        "A served",
        "A 429",
        "A other/err"
    );
    let mut missed = Vec::new();
    for row in &rows {
        let b_refused = row.total(|o| o.alone.refused.len() + o.flooded.refused.len());
        let a_refused = row.total(|o| o.flood.refused);
        let ratio = row.ratio();
        println!(
            "{:<8} {:<8} {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>6.1}x {:>9} {:>8} {:>7} {:>5}/{:<6}",
            row.run,
            row.flood,
            row.median_ms(|o| o.alone.percentile(0.5)),
            row.median_ms(|o| o.alone.percentile(0.99)),
            row.median_ms(|o| o.flooded.percentile(0.5)),
            row.median_ms(|o| o.flooded.percentile(0.99)),
            ratio,
            b_refused,
            row.total(|o| o.flood.served),
            a_refused,
            row.total(|o| o.flood.other.len()),
            row.total(|o| o.flood.errors.len()),
        );
        for (i, o) in row.rounds.iter().enumerate() {
            let a = &o.flood;
            eprintln!(
                "  {} {} round {}: B p99 {:.2} ms alone, {:.2} ms flooded ({:.1}x); A other {:?}, errors {:?}",
                row.run,
                row.flood,
                i + 1,
                ms(o.alone.percentile(0.99)),
                ms(o.flooded.percentile(0.99)),
                o.p99_ratio(),
                a.other,
                a.errors.iter().take(3).collect::<Vec<_>>()
            );
        }
        if row.apf {
            if ratio > GOAL {
                missed.push(format!(
                    "{}: B's p99 {ratio:.1}x alone (goal <= {GOAL}x)",
                    row.flood
                ));
            }
            if b_refused > 0 {
                missed.push(format!("{}: B refused {b_refused} times", row.flood));
            }
            if a_refused == 0 {
                missed.push(format!("{}: A never got a 429", row.flood));
            }
            let without = row.total(|o| o.flood.refused_without_retry_after);
            let otherwise = row.total(|o| o.flood.refused_otherwise);
            if without > 0 || otherwise > 0 {
                missed.push(format!(
                    "{}: A's 429s without Retry-After {without}, with another body {otherwise}",
                    row.flood
                ));
            }
        }
    }
    if missed.is_empty() {
        println!("goal met: with priority and fairness, B's p99 within {GOAL}x of alone, B never refused, A refused with Retry-After");
    } else {
        println!("goal missed: {}", missed.join("; "));
        std::process::exit(1);
    }
}
