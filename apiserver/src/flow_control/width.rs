//! Work estimation (upstream's `flowcontrol/request`: width.go, list_work_estimator.go,
//! mutating_work_estimator.go): how many seats a request occupies and for how long. A list
//! costs by the objects it is expected to go through; a watch that sends its initial events
//! costs as that list, only while it initialises; a write costs one seat, plus final seats for
//! the time the server spends sending its event to the resource's watchers.

use std::time::Duration;

/// Seats a request holds: `initial_seats` while it executes, `final_seats` (when more than
/// 0) for `additional_latency` after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkEstimate {
    pub initial_seats: u32,
    pub final_seats: u32,
    pub additional_latency: Duration,
}

impl WorkEstimate {
    pub fn seats(initial_seats: u32) -> Self {
        Self {
            initial_seats,
            final_seats: 0,
            additional_latency: Duration::ZERO,
        }
    }

    pub fn max_seats(&self) -> u32 {
        self.initial_seats.max(self.final_seats)
    }
}

/// Upstream's defaults (`DefaultWorkEstimatorConfig`).
#[derive(Clone, Copy, Debug)]
pub struct EstimatorConfig {
    pub minimum_seats: u32,
    pub maximum_list_seats: u32,
    pub objects_per_seat: f64,
    pub maximum_mutating_seats: u32,
    pub watches_per_seat: f64,
    pub event_additional_duration: Duration,
}

impl Default for EstimatorConfig {
    fn default() -> Self {
        Self {
            minimum_seats: 1,
            maximum_list_seats: 10,
            objects_per_seat: 100.0,
            maximum_mutating_seats: 10,
            watches_per_seat: 10.0,
            event_additional_duration: Duration::from_millis(5),
        }
    }
}

/// What is known of a resource's stored object count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectCount {
    Known(i64),
    /// Not counted recently enough to trust: assume the worst.
    Stale,
    /// Never counted (not a stored resource): assume the least.
    Unknown,
}

/// The list options the estimate reads, from the query string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListQuery {
    pub limit: i64,
    pub continue_token: bool,
    pub label_selector: bool,
    pub field_selector: bool,
    pub resource_version: String,
    pub resource_version_match: String,
    pub send_initial_events: bool,
    /// A field selector naming one object (`metadata.name=`): read as a get.
    pub single: bool,
}

impl ListQuery {
    pub fn parse(query: Option<&str>) -> Self {
        let mut parsed = Self::default();
        for pair in query.unwrap_or_default().split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_encoding::percent_decode_str(value)
                .decode_utf8_lossy()
                .into_owned();
            match key {
                "limit" => parsed.limit = value.parse().unwrap_or(0),
                "continue" => parsed.continue_token = !value.is_empty(),
                "labelSelector" => parsed.label_selector = !value.is_empty(),
                "fieldSelector" => {
                    parsed.field_selector = !value.is_empty();
                    parsed.single = value
                        .strip_prefix("metadata.name=")
                        .is_some_and(|name| !name.contains(','));
                }
                "resourceVersion" => parsed.resource_version = value,
                "resourceVersionMatch" => parsed.resource_version_match = value,
                "sendInitialEvents" => parsed.send_initial_events = value == "true",
                _ => {}
            }
        }
        parsed
    }

    /// Whether the list is read from storage rather than the watch cache (upstream's
    /// `shouldListFromStorage` with consistent reads from cache on): continuations, and
    /// resource version matches the cache does not serve.
    fn reads_storage(&self) -> bool {
        let rv = self.resource_version.as_str();
        let legacy_exact =
            self.limit > 0 && self.resource_version_match.is_empty() && !rv.is_empty() && rv != "0";
        let unsupported = (!self.resource_version_match.is_empty()
            && self.resource_version_match != "NotOlderThan")
            || legacy_exact;
        self.continue_token || unsupported
    }
}

/// A request's estimate: `verb` as upstream's RequestInfo names it (non-resource requests
/// cost the minimum), `level_max_seats` the level's cap (0: the estimator's own).
pub fn estimate(
    config: &EstimatorConfig,
    verb: &str,
    query: &ListQuery,
    stored: ObjectCount,
    watchers: usize,
    level_max_seats: u32,
) -> WorkEstimate {
    match verb {
        "list" => list(config, false, query, stored, level_max_seats),
        // A watch costs as its initial list only when it asks for one: it holds its seats
        // only while it initialises.
        "watch" if query.send_initial_events => list(config, true, query, stored, level_max_seats),
        verb if is_mutating(verb) => mutating(config, watchers, level_max_seats),
        _ => WorkEstimate::seats(config.minimum_seats),
    }
}

/// The verbs the mutating estimator prices by the resource's watchers.
pub fn is_mutating(verb: &str) -> bool {
    matches!(verb, "create" | "update" | "patch" | "delete")
}

fn cap(limit: u32, level_max_seats: u32) -> u32 {
    if level_max_seats == 0 || level_max_seats > limit {
        limit
    } else {
        level_max_seats
    }
}

fn list(
    config: &EstimatorConfig,
    watch: bool,
    query: &ListQuery,
    stored: ObjectCount,
    level_max_seats: u32,
) -> WorkEstimate {
    let max_seats = cap(config.maximum_list_seats, level_max_seats);
    let stored = match stored {
        ObjectCount::Known(n) => n.max(0),
        ObjectCount::Stale => return WorkEstimate::seats(max_seats),
        ObjectCount::Unknown => return WorkEstimate::seats(config.minimum_seats),
    };
    let limit = if query.limit > 0 && query.limit < stored {
        query.limit
    } else {
        stored
    };
    let objects = if query.single {
        1
    } else if watch || !query.reads_storage() {
        // The cache goes through every object of the resource.
        stored
    } else if query.label_selector || query.field_selector {
        // Storage reads pages until `limit` objects match.
        stored + limit
    } else {
        2 * limit
    };
    let seats = (objects as f64 / config.objects_per_seat).ceil() as u32;
    WorkEstimate::seats(seats.clamp(config.minimum_seats, max_seats.max(config.minimum_seats)))
}

fn mutating(config: &EstimatorConfig, watchers: usize, level_max_seats: u32) -> WorkEstimate {
    let mut estimate = WorkEstimate::seats(1);
    // Below a seat's worth of watchers the event's fan-out is not charged.
    if watchers == 0 || (watchers as f64) < config.watches_per_seat {
        return estimate;
    }
    let final_seats = (watchers as f64 / config.watches_per_seat).ceil() as u32;
    // The work (seats x the event's cost) is kept, reshaped narrower and longer when capped.
    let work = config.event_additional_duration * final_seats;
    let capped = final_seats
        .min(cap(config.maximum_mutating_seats, level_max_seats))
        .max(1);
    estimate.final_seats = capped;
    estimate.additional_latency = work / capped;
    estimate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(query: &str) -> ListQuery {
        ListQuery::parse(Some(query))
    }

    #[test]
    fn lists_cost_by_their_expected_objects() {
        let c = EstimatorConfig::default();
        let seats = |query: &str, n| {
            estimate(&c, "list", &q(query), ObjectCount::Known(n), 0, 0).initial_seats
        };
        // From the cache: every stored object, 100 a seat, at most 10.
        assert_eq!(seats("", 3000), 10);
        assert_eq!(seats("", 250), 3);
        assert_eq!(seats("", 0), 1);
        assert_eq!(seats("limit=500&resourceVersion=0", 3000), 10);
        // From storage (a continuation): twice the page.
        assert_eq!(seats("limit=100&continue=abc", 3000), 2);
        // From storage with a selector: the stored objects plus the page.
        assert_eq!(seats("limit=100&continue=abc&labelSelector=a%3Db", 300), 4);
        // A list naming one object reads one.
        assert_eq!(seats("fieldSelector=metadata.name%3Dcm-1", 3000), 1);
        // An exact resource version with a limit is read from storage.
        assert_eq!(seats("limit=50&resourceVersion=12", 3000), 1);
        // Unknown counts cost the least, stale ones the most.
        assert_eq!(
            estimate(&c, "list", &q(""), ObjectCount::Unknown, 0, 0).initial_seats,
            1
        );
        assert_eq!(
            estimate(&c, "list", &q(""), ObjectCount::Stale, 0, 0).initial_seats,
            10
        );
        // A level's own cap.
        assert_eq!(
            estimate(&c, "list", &q(""), ObjectCount::Known(3000), 0, 4).initial_seats,
            4
        );
    }

    #[test]
    fn watches_cost_as_their_initial_list() {
        let c = EstimatorConfig::default();
        let w = |query: &str| estimate(&c, "watch", &q(query), ObjectCount::Known(700), 0, 0);
        assert_eq!(
            w("sendInitialEvents=true&resourceVersionMatch=NotOlderThan").initial_seats,
            7
        );
        assert_eq!(w("resourceVersion=5").initial_seats, 1);
    }

    #[test]
    fn writes_pay_for_their_watchers_afterwards() {
        let c = EstimatorConfig::default();
        let m = |watchers| {
            estimate(
                &c,
                "create",
                &ListQuery::default(),
                ObjectCount::Unknown,
                watchers,
                0,
            )
        };
        assert_eq!(m(0), WorkEstimate::seats(1));
        assert_eq!(m(9), WorkEstimate::seats(1));
        let some = m(35);
        assert_eq!((some.initial_seats, some.final_seats), (1, 4));
        assert_eq!(some.additional_latency, Duration::from_millis(5));
        // 300 watchers: 30 seats for 5 ms reshaped to 10 seats for 15 ms.
        let many = m(300);
        assert_eq!(
            (many.final_seats, many.additional_latency),
            (10, Duration::from_millis(15))
        );
        assert_eq!(
            estimate(
                &c,
                "get",
                &ListQuery::default(),
                ObjectCount::Known(9),
                50,
                0
            ),
            WorkEstimate::seats(1)
        );
    }
}
