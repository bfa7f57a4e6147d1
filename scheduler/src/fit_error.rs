//! The message of a pod no node fits (upstream's FitError.Error and the PostFilter plugins'
//! messages): a histogram of the reasons nodes gave, sorted, then what the PostFilter
//! plugins said when they could not help: the DynamicResources plugin (on by default) says
//! "no new claims to deallocate" first, then DefaultPreemption (`preemption.rs`) its own
//! histogram of node statuses. A pod that preempted has the filters' histogram alone.

use std::collections::BTreeMap;

use crate::filters::Rejection;

/// Upstream's ErrNoNodesAvailable.
pub const NO_NODES: &str = "no nodes available to schedule pods";

/// The message when a PreFilter plugin rejects the pod for every one of `total` nodes:
/// its reason alone, then the PostFilter plugins' (upstream's FitError with a PreFilterMsg).
pub fn prefilter_message(total: usize, reason: &str) -> String {
    if total == 0 {
        return NO_NODES.to_string();
    }
    format!(
        "0/{total} nodes are available: {reason}. no new claims to deallocate, preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
    )
}

/// A histogram of reasons, `n reason` sorted and comma-separated.
fn histogram<'a>(reasons: impl IntoIterator<Item = &'a String>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for reason in reasons {
        *counts.entry(reason).or_default() += 1;
    }
    let mut parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    parts.join(", ")
}

/// What DefaultPreemption says when no eviction makes room: each node's status (a rejected
/// node's reasons, or why preemption cannot help there).
pub fn preemption_failed(statuses: &[Vec<String>]) -> String {
    format!(
        "0/{} nodes are available: {}.",
        statuses.len(),
        histogram(statuses.iter().flatten())
    )
}

/// The FailedScheduling message: the filters' histogram, then, when preemption did not
/// nominate a node, the PostFilter plugins' words (`preemption` is DefaultPreemption's).
pub fn message(rejections: &[Rejection], preemption: Option<&str>) -> String {
    let total = rejections.len();
    if total == 0 {
        return NO_NODES.to_string();
    }
    let mut out = format!(
        "0/{total} nodes are available: {}.",
        histogram(rejections.iter().flat_map(|r| r.reasons.iter()))
    );
    if let Some(preemption) = preemption {
        out.push_str(&format!(
            " no new claims to deallocate, preemption: {preemption}"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_format() {
        let taint = Rejection::unresolvable("node(s) had untolerated taint(s)");
        let cpu = Rejection::resolvable(vec!["Insufficient cpu".into()]);
        let statuses = [
            vec!["Preemption is not helpful for scheduling".to_string()],
            vec!["No preemption victims found for incoming pod".to_string()],
            vec!["No preemption victims found for incoming pod".to_string()],
        ];
        assert_eq!(
            message(&[taint, cpu.clone(), cpu.clone()], Some(&preemption_failed(&statuses))),
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
        );
        assert_eq!(message(&[], None), NO_NODES);
        // A nomination ends the message at the filters'.
        assert_eq!(
            message(&[cpu], None),
            "0/1 nodes are available: 1 Insufficient cpu."
        );
    }
}
