//! The table of one backend's run.

use std::time::Duration;

use test_support::stats::{percentile, verdict};
use test_support::BackendKind;

use crate::slis::{self, Histograms};
use crate::workload::READ_CLASSES;
use crate::{Converged, Outcome, Phase};

const MB: f64 = 1e6;
/// sig-scalability's pod startup SLO: p99 within 5 s.
const STARTUP_SLO: Duration = Duration::from_secs(5);

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn quantiles(sorted: &[Duration]) -> String {
    if sorted.is_empty() {
        return "none".into();
    }
    format!(
        "p50 {}  p90 {}  p99 {}  (n={})",
        secs(percentile(sorted, 0.5)),
        secs(percentile(sorted, 0.9)),
        secs(percentile(sorted, 0.99)),
        sorted.len()
    )
}

fn converged(c: &Converged) -> String {
    match c {
        Converged::After(d) => secs(*d),
        Converged::Stalled(d, counts, _) => {
            format!("DID NOT CONVERGE within {} ({counts:?})", secs(*d))
        }
    }
}

fn stall_details(c: &Converged) {
    if let Converged::Stalled(_, _, report) = c {
        print!("{report}");
    }
}

fn api(h: &Histograms) {
    for v in slis::verdicts(h) {
        let worst = v.worst.as_ref().map_or("no calls".to_string(), |(p99, k)| {
            format!("p99 {:>7.3} s  ({} {} {} {})", p99, k.2, k.0, k.1, k.3)
        });
        println!(
            "      {:<20} SLO p99 <= {:>4.0} s  {:<60} calls {:>6} slower {:>4}  {}",
            v.class.name(),
            v.class.slo_seconds(),
            worst,
            v.calls,
            v.slow,
            verdict(v.met())
        );
    }
    let slow: Vec<String> = slis::slowest(h, 4)
        .into_iter()
        .map(|(p99, n, k)| {
            format!(
                "{} {}{}{} {} p99 {:.3} s x{n}",
                k.2,
                k.0,
                if k.1.is_empty() { "" } else { "/" },
                k.1,
                k.3,
                p99
            )
        })
        .collect();
    println!("      slowest: {}", slow.join("; "));
}

/// The pods' startup against `limit` (named `what`): the 5 s SLO for latency pods, upstream's
/// saturation threshold for the pods created in bulk.
fn startup(p: &Phase, what: &str, limit: Duration) {
    let s = &p.startup;
    let p99 = (!s.watch.is_empty()).then(|| percentile(&s.watch, 0.99));
    println!(
        "    pod startup (watch: first seen -> Running)   {}  {what} p99 <= {:.0} s: {}",
        quantiles(&s.watch),
        limit.as_secs_f64(),
        p99.map_or("n/a", |p| verdict(p <= limit))
    );
    println!(
        "    pod startup (creationTimestamp -> Running)   {}  (timestamp in whole seconds: up to +1 s)",
        quantiles(&s.created)
    );
    println!(
        "    create -> scheduled   {}",
        quantiles(&s.create_to_schedule)
    );
    println!(
        "    scheduled -> Running  {}",
        quantiles(&s.schedule_to_run)
    );
    if s.not_running > 0 {
        println!("    pods seen but never Running: {}", s.not_running);
    }
}

pub fn print(o: &Outcome) {
    let goal = match (o.backend, o.nodes) {
        (BackendKind::Embedded, 1000) => Some((120.0, 1.5e9)),
        (BackendKind::Etcd, 5000) => Some((600.0, 4e9)),
        _ => None,
    };
    println!();
    println!(
        "== density/load on {}: {} nodes, {} pods in {} Deployments ({} Services) over {} namespaces, client at {} qps",
        o.backend.name(),
        o.nodes,
        o.plan.pods(),
        o.plan.deployments.len(),
        o.plan.services(),
        o.plan.namespaces.len(),
        o.qps
    );
    let raw_rate = o.raw.pods as f64 / o.raw.sent.took.as_secs_f64();
    println!(
        "  raw store write rate (fresh server, --nodes 0 --scheduler=false, {} bare pod creates over 12 connections): {:.0} pods/s, {:.1} CPU s{}",
        o.raw.pods,
        raw_rate,
        o.raw.cpu,
        if o.raw.sent.failed > 0 { format!(", {} FAILED: {:?}", o.raw.sent.failed, o.raw.sent.failures) } else { String::new() }
    );
    match o.nodes_ready {
        Some(d) => println!("  nodes Ready after start         {}", secs(d)),
        None => {
            println!("  the nodes were NOT all Ready within 600 s; nothing measured");
            print_log(o);
            return;
        }
    }
    if let Some(c) = &o.created {
        println!(
            "  creates (namespaces aside)      {} requests paced over {}{}",
            o.plan.deployments.len() + o.plan.services(),
            secs(c.took),
            if c.failed > 0 {
                format!(", {} FAILED: {:?}", c.failed, c.failures)
            } else {
                String::new()
            }
        );
    }
    if let (Some(all), Some(d)) = (&o.all_running, &o.density) {
        let goal_text = goal.map_or(String::new(), |(limit, _)| {
            format!(
                "   target <= {limit:.0} s: {}",
                verdict(matches!(all, Converged::After(t) if t.as_secs_f64() <= limit))
            )
        });
        println!(
            "  density: time to all Running   {}{goal_text}",
            converged(all)
        );
        stall_details(all);
        // Upstream's saturationDeploymentTimeout: the pods at 20/s plus 3 minutes.
        let saturation = Duration::from_secs((o.plan.pods() / 20 + 180) as u64);
        startup(d, "saturation threshold", saturation);
        // Those that got there: all of them unless the phase stalled.
        let running_rate = d.startup.watch.len() as f64 / d.took.as_secs_f64();
        let writes_rate = d.watch_events as f64 / d.took.as_secs_f64();
        println!(
            "    throughput: {running_rate:.0} pods Running/s ({:.1}% of the raw create rate); {writes_rate:.0} pod writes/s seen by the watch ({:.1}%)",
            100.0 * running_rate / raw_rate,
            100.0 * writes_rate / raw_rate
        );
        println!("    server CPU {:.1} s over {}", d.cpu, secs(d.took));
        println!("    API call latency (server histograms over the phase):");
        api(&d.api);
    }
    if let Some((count, done, phase)) = &o.latency {
        println!(
            "  latency pods: {count} Deployments of 1 pod at 5 qps, all Running after {}",
            converged(done)
        );
        stall_details(done);
        startup(phase, "SLO", STARTUP_SLO);
        println!(
            "    server CPU {:.1} s over {}",
            phase.cpu,
            secs(phase.took)
        );
        println!("    API call latency (server histograms over the phase):");
        api(&phase.api);
    }
    if !o.load.is_empty() {
        println!("  load (churn):");
        for (name, c) in &o.load {
            println!("    {name:<40} {}", converged(c));
            stall_details(c);
        }
        if let Some(l) = &o.load_phase {
            // Created in bulk by the scale-up and the deletions: upstream's load test holds
            // them to an hour (its PodStartupLatency threshold), the SLO being the latency
            // pods'.
            startup(l, "load threshold", Duration::from_secs(3600));
            println!("    server CPU {:.1} s over {}", l.cpu, secs(l.took));
            println!("    API call latency (server histograms over the phase):");
            api(&l.api);
        }
    }
    if let Some(r) = &o.reader {
        let parts: Vec<String> = READ_CLASSES
            .iter()
            .zip(&r.latencies)
            .map(|(c, l)| {
                format!(
                    "{c} p99 {} (n={})",
                    if l.is_empty() {
                        "-".into()
                    } else {
                        secs(percentile(l, 0.99))
                    },
                    l.len()
                )
            })
            .collect();
        println!(
            "  reader, client side: {}; failures {}",
            parts.join(", "),
            r.failures
        );
    }
    let mem_goal = goal.map_or(String::new(), |(_, limit)| {
        format!(
            "   target <= {:.1} GB: {}",
            limit / 1e9,
            verdict(o.peak_anon as f64 <= limit)
        )
    });
    println!(
        "  anonymous memory: idle with nodes {:.0} MB, peak {:.0} MB, settled {:.0} MB{mem_goal}",
        o.idle_anon as f64 / MB,
        o.peak_anon as f64 / MB,
        o.settled_anon as f64 / MB
    );
    if o.watch_reopened > 0 {
        println!("  the pod watch was reopened {} times", o.watch_reopened);
    }
    print_log(o);
}

fn print_log(o: &Outcome) {
    let log = &o.log;
    println!(
        "  server log lines at warn and above: {}; the controllers lost their leader lease {} times",
        log.lines, log.lost_leadership
    );
    for l in log.last.iter().rev().take(3).rev() {
        println!("    {}", l.chars().take(240).collect::<String>());
    }
}
