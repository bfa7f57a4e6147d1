//! The sizes a sync moves ReplicaSets to, worked out before any write: proportional scaling
//! of a deployment resized mid-rollout, and the two ways a rolling update shrinks old
//! ReplicaSets (unhealthy replicas first, then as far as maxUnavailable allows). Each plan is a
//! list of (index into the given ReplicaSets, new size) in the order to apply.

use std::cmp::Ordering;

use serde_json::Value;

use super::replicas::{max_surge, max_unavailable};
use super::{
    annotation, by_size_newer, by_size_older, spec_replicas, status_count, total_replicas,
    MAX_REPLICAS,
};

/// How many replicas `rs` should gain (or lose) of `to_add`, in proportion to the size it
/// had when the deployment was last sized (its max-replicas annotation), never past what is
/// left to hand out (upstream's GetReplicaSetProportion).
pub fn replica_set_proportion(rs: &Value, d: &Value, to_add: i32, added: i32) -> i32 {
    if spec_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = replica_set_fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

fn replica_set_fraction(rs: &Value, d: &Value) -> i32 {
    let size = spec_replicas(rs);
    let replicas = spec_replicas(d);
    if replicas == 0 {
        return -size;
    }
    let deployment_replicas = replicas + max_surge(d);
    // Without the annotation the deployment's current size is the best guess; the min/max
    // against what is left keeps the result within bounds either way.
    let annotated = annotation(rs, MAX_REPLICAS)
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or_else(|| status_count(d, "replicas"));
    if annotated <= 0 {
        return 0;
    }
    let scaled = f64::from(size) * f64::from(deployment_replicas) / f64::from(annotated);
    scaled.round() as i32 - size
}

/// Whether a proportional resize scales up, down or not at all, and the new size of each of
/// the `active` ReplicaSets, largest first (newer first when growing, older first when
/// shrinking); what rounding left over goes to the largest.
pub fn proportional_sizes(d: &Value, active: &[Value]) -> (Ordering, Vec<(usize, i32)>) {
    let replicas = spec_replicas(d);
    let allowed = if replicas > 0 {
        replicas + max_surge(d)
    } else {
        0
    };
    let to_add = allowed - total_replicas(active);
    let mut order: Vec<usize> = (0..active.len()).collect();
    match to_add.cmp(&0) {
        Ordering::Greater => order.sort_by(|a, b| by_size_newer(&active[*a], &active[*b])),
        Ordering::Less => order.sort_by(|a, b| by_size_older(&active[*a], &active[*b])),
        Ordering::Equal => {}
    }
    let mut added = 0;
    let mut sizes = Vec::with_capacity(order.len());
    for i in order {
        let proportion = replica_set_proportion(&active[i], d, to_add, added);
        added += proportion;
        sizes.push((i, spec_replicas(&active[i]) + proportion));
    }
    if to_add != 0 {
        if let Some(first) = sizes.first_mut() {
            first.1 = (first.1 + to_add - added).max(0);
        }
    }
    (to_add.cmp(&0), sizes)
}

/// How many old replicas a rolling update may take away now: what runs beyond the minimum
/// available, less the new ReplicaSet's replicas that are not available yet.
pub fn old_scale_down_room(d: &Value, all_pods: i32, new_rs: &Value) -> i32 {
    let min_available = spec_replicas(d) - max_unavailable(d);
    let new_unavailable =
        (spec_replicas(new_rs) - status_count(new_rs, "availableReplicas")).max(0);
    all_pods - min_available - new_unavailable
}

/// Unavailable replicas of old ReplicaSets (`old` oldest first) removed first, up to `max`
/// (upstream's cleanupUnhealthyReplicas): they cost no availability and would otherwise
/// block the rollout.
pub fn unhealthy_cleanup(old: &[Value], max: i32) -> Vec<(usize, i32)> {
    let mut total = 0;
    let mut plan = Vec::new();
    for (i, rs) in old.iter().enumerate() {
        if total >= max {
            break;
        }
        let size = spec_replicas(rs);
        let available = status_count(rs, "availableReplicas");
        // Status can lag a scale-down and report more available than wanted: nothing
        // unhealthy there (upstream refuses such a step as invalid).
        if size == 0 || available >= size {
            continue;
        }
        let down = (max - total).min(size - available);
        plan.push((i, size - down));
        total += down;
    }
    plan
}

/// Old ReplicaSets (`old` oldest first) shrunk while the available replicas of `all` stay
/// above the deployment's minimum availability (upstream's
/// scaleDownOldReplicaSetsForRollingUpdate).
pub fn old_scale_down<'a>(
    d: &Value,
    all: impl IntoIterator<Item = &'a Value>,
    old: &[Value],
) -> Vec<(usize, i32)> {
    let min_available = spec_replicas(d) - max_unavailable(d);
    // A ReplicaSet just scaled down still reports the pods it is about to delete; counting
    // them would let availability drop below the minimum (upstream counts them).
    let available: i32 = all
        .into_iter()
        .map(|rs| status_count(rs, "availableReplicas").min(spec_replicas(rs)))
        .sum();
    if available <= min_available {
        return Vec::new();
    }
    let wanted = available - min_available;
    let mut total = 0;
    let mut plan = Vec::new();
    for (i, rs) in old.iter().enumerate() {
        if total >= wanted {
            break;
        }
        let size = spec_replicas(rs);
        if size == 0 {
            continue;
        }
        let down = size.min(wanted - total);
        plan.push((i, size - down));
        total += down;
    }
    plan
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(replicas: i32, surge: i32, unavailable: i32) -> Value {
        json!({"spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}},
            "status": {"replicas": 13}})
    }

    fn rs(name: &str, created: &str, replicas: i32, max: Option<i32>, available: i32) -> Value {
        let mut rs = json!({"metadata": {"name": name, "creationTimestamp": created},
            "spec": {"replicas": replicas}, "status": {"availableReplicas": available}});
        if let Some(max) = max {
            rs["metadata"]["annotations"] = json!({MAX_REPLICAS: max.to_string()});
        }
        rs
    }

    #[test]
    fn scaling_up_mid_rollout_is_proportional() {
        let d = deployment(20, 3, 0);
        let active = vec![
            rs("new", "2024-01-02T00:00:00Z", 5, Some(13), 0),
            rs("old", "2024-01-01T00:00:00Z", 8, Some(13), 8),
        ];
        let (direction, sizes) = proportional_sizes(&d, &active);
        assert_eq!(direction, Ordering::Greater);
        // 8 * 23 / 13 = 14.15 → 14; 5 * 23 / 13 = 8.8 → 9; together the 23 allowed.
        assert_eq!(sizes, vec![(1, 14), (0, 9)]);
    }

    #[test]
    fn scaling_down_mid_rollout_is_proportional() {
        let d = deployment(10, 3, 0);
        let active = vec![
            rs("new", "2024-01-02T00:00:00Z", 9, Some(23), 0),
            rs("old", "2024-01-01T00:00:00Z", 14, Some(23), 14),
        ];
        let (direction, sizes) = proportional_sizes(&d, &active);
        assert_eq!(direction, Ordering::Less);
        assert_eq!(sizes, vec![(1, 8), (0, 5)]);
    }

    #[test]
    fn leftovers_go_to_the_largest_and_equal_sizes_favour_the_newest() {
        let d = deployment(7, 0, 1);
        let active = vec![
            rs("a", "2024-01-01T00:00:00Z", 2, Some(4), 2),
            rs("b", "2024-01-02T00:00:00Z", 2, Some(4), 2),
        ];
        // 3 to add: 2 * 7 / 4 = 3.5 → 4 gives each +2, capped at 1 for the second; the
        // newer of two equals comes first.
        let (_, sizes) = proportional_sizes(&d, &active);
        assert_eq!(sizes, vec![(1, 4), (0, 3)]);
        let total: i32 = sizes.iter().map(|(_, s)| s).sum();
        assert_eq!(total, 7);
    }

    #[test]
    fn scaling_to_zero_empties_everything() {
        let d = deployment(0, 1, 1);
        let active = vec![
            rs("a", "2024-01-01T00:00:00Z", 3, Some(4), 3),
            rs("b", "2024-01-02T00:00:00Z", 1, None, 0),
        ];
        let (_, sizes) = proportional_sizes(&d, &active);
        assert_eq!(sizes, vec![(0, 0), (1, 0)]);
    }

    #[test]
    fn old_replica_sets_shrink_within_max_unavailable() {
        // 10 wanted, 1 may be unavailable: with 10 old available and the new one's 2
        // replicas not yet available, room is 12 - 9 - 2 = 1.
        let d = deployment(10, 2, 1);
        let new = rs("new", "2024-01-02T00:00:00Z", 2, None, 0);
        let old = vec![rs("old", "2024-01-01T00:00:00Z", 10, None, 10)];
        assert_eq!(old_scale_down_room(&d, 12, &new), 1);
        let plan = old_scale_down(&d, old.iter().chain([&new]), &old);
        assert_eq!(plan, vec![(0, 9)]);
        // Nothing above the minimum: nothing shrinks.
        let old = vec![rs("old", "2024-01-01T00:00:00Z", 9, None, 9)];
        assert!(old_scale_down(&d, old.iter().chain([&new]), &old).is_empty());
        // Pods a shrunk ReplicaSet still reports do not count as available.
        let old = vec![rs("old", "2024-01-01T00:00:00Z", 9, None, 10)];
        assert!(old_scale_down(&d, old.iter().chain([&new]), &old).is_empty());
    }

    #[test]
    fn unhealthy_replicas_go_first_oldest_first() {
        let old = vec![
            rs("a", "2024-01-01T00:00:00Z", 3, None, 3),
            rs("b", "2024-01-02T00:00:00Z", 4, None, 1),
            rs("c", "2024-01-03T00:00:00Z", 2, None, 0),
        ];
        assert_eq!(unhealthy_cleanup(&old, 4), vec![(1, 1), (2, 1)]);
        assert_eq!(unhealthy_cleanup(&old, 10), vec![(1, 1), (2, 0)]);
        assert!(unhealthy_cleanup(&old, 0).is_empty());
        // A status lagging a scale-down never turns the cleanup into a scale-up.
        let lagging = vec![rs("a", "2024-01-01T00:00:00Z", 3, None, 4)];
        assert!(unhealthy_cleanup(&lagging, 2).is_empty());
    }
}
