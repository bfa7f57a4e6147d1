//! How many feasible nodes a decision looks for before it stops filtering (upstream's
//! percentageOfNodesToScore): in a large cluster a pod is placed on the best of a sample of
//! the nodes that fit rather than of all of them, and the next decision starts filtering where
//! this one stopped, so every node is looked at in turn.

/// Below this many nodes every node is looked at (upstream's minFeasibleNodesToFind).
const MIN_FEASIBLE_NODES: usize = 100;
/// The adaptive percentage never goes below this (minFeasibleNodesPercentageToFind).
const MIN_PERCENTAGE: usize = 5;

/// The feasible nodes to find among `all`: `percentage` of them (0: upstream's adaptive
/// default, 50% less one point per 125 nodes, at least 5%), never fewer than 100.
pub fn feasible_nodes_to_find(percentage: u32, all: usize) -> usize {
    if all < MIN_FEASIBLE_NODES || percentage >= 100 {
        return all;
    }
    let percentage = match percentage as usize {
        0 => 50usize.saturating_sub(all / 125).max(MIN_PERCENTAGE),
        p => p,
    };
    (all * percentage / 100).max(MIN_FEASIBLE_NODES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_and_set_percentages_as_upstream() {
        // Upstream's TestNumFeasibleNodesToFind cases.
        assert_eq!(feasible_nodes_to_find(0, 10), 10);
        assert_eq!(feasible_nodes_to_find(40, 10), 10);
        assert_eq!(feasible_nodes_to_find(0, 1000), 420);
        assert_eq!(feasible_nodes_to_find(40, 1000), 400);
        assert_eq!(feasible_nodes_to_find(0, 6000), 300);
        assert_eq!(feasible_nodes_to_find(20, 6000), 1200);
        // The floor of 100 nodes, and the cluster sizes of the density test.
        assert_eq!(feasible_nodes_to_find(0, 150), 100);
        assert_eq!(feasible_nodes_to_find(1, 1000), 100);
        assert_eq!(feasible_nodes_to_find(0, 5000), 500);
        assert_eq!(feasible_nodes_to_find(100, 5000), 5000);
    }
}
