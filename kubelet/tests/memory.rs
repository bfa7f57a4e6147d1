//! What an idle Running pod costs the process (issue 30's budget), run on demand:
//! `cargo nextest run --release -p kubelet --test memory --run-ignored only --no-capture`
//! (`KUBELET_MEMORY_PODS`, default 3,000, over 100 nodes). Prints the growth of RssAnon and of
//! live tokio tasks per pod once every pod is Running and Ready; the pods are in the store,
//! its watch cache and the informer too, so the figure is the whole process's, not the
//! kubelet's alone.

mod support;

use std::time::{Duration, Instant};

use registry::options::{ListOptions, WriteOptions};
use serde_json::json;
use support::{config, pods, start, Harness, NS};

fn rss_anon_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("RssAnon:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

async fn ready_pods(h: &Harness) -> usize {
    let list = pods(h)
        .list(Some(NS), &ListOptions::default())
        .await
        .expect("list");
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|p| support::condition(p, "Ready")["status"] == "True")
                .count()
        })
        .unwrap_or(0)
}

async fn idle_pods_memory(h: &Harness) {
    let count: usize = std::env::var("KUBELET_MEMORY_PODS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let nodes = 100;
    let _stop = start(h, config(nodes));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (rss0, tasks0) = (rss_anon_kib(), alive_tasks());
    let begun = Instant::now();
    for i in 0..count {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("idle-{i}"), "labels": {"app": "idle"}},
            "spec": {"nodeName": format!("node-{}", i % nodes),
                "containers": [{"name": "app", "image": "nginx:1.27"}]}});
        pods(h)
            .create(Some(NS), pod, &WriteOptions::default())
            .await
            .expect("create");
    }
    while ready_pods(h).await < count {
        assert!(
            begun.elapsed() < Duration::from_secs(600),
            "pods never Ready"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let took = begun.elapsed();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (rss1, tasks1) = (rss_anon_kib(), alive_tasks());
    println!(
        "{count} pods on {nodes} nodes Ready in {took:?}: RssAnon {rss0} -> {rss1} KiB \
         ({:.1} KiB/pod), tokio tasks {tasks0} -> {tasks1}",
        (rss1.saturating_sub(rss0)) as f64 / count as f64
    );
}

mod embedded {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "a measurement: run on demand"]
    async fn idle_pods_memory() {
        let h = <crate::support::Harness as test_support::FromBackend>::embedded().await;
        super::idle_pods_memory(&h).await;
    }
}
