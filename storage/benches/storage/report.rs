//! The put / update / get rows as printed, and the targets they and the watch rows are held to.

use test_support::stats::ms;

use crate::kv::Op;
use crate::tasks::RunResult;
use crate::watch::WatchResult;

pub struct Row {
    pub op: Op,
    pub writers: usize,
    pub raw: RunResult,
    /// Diagnostic only: the backend's compare-and-swap txn sent raw (put and update rows).
    pub raw_txn: Option<RunResult>,
    pub ours: RunResult,
    pub embedded: RunResult,
}

impl Row {
    fn label(&self) -> String {
        format!("{} {}w", self.op.name(), self.writers)
    }

    pub fn print(&self) {
        println!(
            "{:<11} raw-etcd {:>7.0} ops/s | ours-etcd {:>7.0} ops/s ({:.2}x) | embedded {:>7.0} ops/s ({:.2}x)",
            self.label(),
            self.raw.ops_per_sec,
            self.ours.ops_per_sec,
            self.ours.ratio_to(&self.raw),
            self.embedded.ops_per_sec,
            self.embedded.ratio_to(&self.raw),
        );
        println!(
            "{:<11}   latency mean/p50/p99 ms: raw {} | ours {} | embedded {}{}{}{}",
            "",
            self.raw.latency.mean_p50_p99(),
            self.ours.latency.mean_p50_p99(),
            self.embedded.latency.mean_p50_p99(),
            prefixed(" raw:", self.raw.error_note()),
            prefixed(" ours:", self.ours.error_note()),
            prefixed(" embedded:", self.embedded.error_note()),
        );
        if let Some(txn) = &self.raw_txn {
            println!(
                "{:<11}   diagnostic: raw-etcd txn (put_if's CAS) {:.0} ops/s ({:.2}x raw put), mean/p50/p99 {} ms; ours-etcd / raw txn = {:.2}x{}",
                "",
                txn.ops_per_sec,
                txn.ratio_to(&self.raw),
                txn.latency.mean_p50_p99(),
                self.ours.ratio_to(txn),
                prefixed(" txn:", txn.error_note()),
            );
        }
    }
}

fn prefixed(prefix: &str, note: String) -> String {
    if note.is_empty() {
        note
    } else {
        format!("{prefix}{note}")
    }
}

/// One verdict per target, for the closing line.
pub fn targets(rows: &[Row], writers_n: usize, watches: &[&WatchResult]) -> String {
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    let mut verdicts = Vec::new();
    for row in rows.iter().filter(|r| r.op != Op::Update) {
        let r = row.ours.ratio_to(&row.raw);
        let clean = row.raw.errors == 0 && row.ours.errors == 0;
        // For writes, how we fare against the very txn we send tells our layers' share.
        let vs_txn = row
            .raw_txn
            .as_ref()
            .map(|t| format!("; {:.2}x of raw-etcd txn", row.ours.ratio_to(t)))
            .unwrap_or_default();
        verdicts.push(format!(
            "ours-etcd {} >= 0.9x: {} ({r:.2}x{vs_txn})",
            row.label(),
            verdict(r >= 0.9 && clean)
        ));
    }
    if let Some(row) = rows
        .iter()
        .find(|r| r.op == Op::Put && r.writers == writers_n)
    {
        let r = row.embedded.ratio_to(&row.raw);
        let clean = row.raw.errors == 0 && row.embedded.errors == 0;
        verdicts.push(format!(
            "embedded {} >= raw etcd: {} ({r:.2}x)",
            row.label(),
            verdict(r >= 1.0 && clean)
        ));
    }
    for w in watches {
        verdicts.push(format!(
            "watch p99 {} <= 50 ms: {} ({:.2} ms, {}/{} delivered)",
            w.backend,
            verdict(w.p99_ok()),
            ms(w.send.p99),
            w.delivered,
            w.expected
        ));
    }
    verdicts.join("; ")
}
