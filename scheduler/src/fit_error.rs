//! The message of a pod no node fits (upstream's FitError.Error and the PostFilter plugins'
//! messages): a histogram of the reasons nodes gave, sorted, then what the PostFilter
//! plugins said. There is no preemption here; with no lower-priority pods upstream's
//! DefaultPreemption says the same: a node rejected for a resolvable reason has "No
//! preemption victims found for incoming pod", the others "Preemption is not helpful for
//! scheduling". The DynamicResources plugin (on by default) says "no new claims to
//! deallocate" first.

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

pub fn message(rejections: &[Rejection]) -> String {
    let total = rejections.len();
    if total == 0 {
        return NO_NODES.to_string();
    }
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    let mut preemption: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rejections {
        for reason in &r.reasons {
            *reasons.entry(reason).or_default() += 1;
        }
        let why = if r.resolvable {
            "No preemption victims found for incoming pod"
        } else {
            "Preemption is not helpful for scheduling"
        };
        *preemption.entry(why).or_default() += 1;
    }
    let histogram = |counts: BTreeMap<&str, usize>| {
        let mut parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
        parts.sort();
        parts.join(", ")
    };
    format!(
        "0/{total} nodes are available: {}. no new claims to deallocate, preemption: 0/{total} nodes are available: {}.",
        histogram(reasons),
        histogram(preemption)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_format() {
        let taint = Rejection::unresolvable("node(s) had untolerated taint(s)");
        let cpu = Rejection::resolvable(vec!["Insufficient cpu".into()]);
        assert_eq!(
            message(&[taint, cpu.clone(), cpu]),
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
        );
        assert_eq!(message(&[]), NO_NODES);
    }
}
