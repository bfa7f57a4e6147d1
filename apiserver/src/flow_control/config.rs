//! Priority levels' configuration and concurrency limits (upstream's config controller):
//! the server's seats (`--max-requests-inflight` + `--max-mutating-requests-inflight`) are
//! shared out in proportion to the levels' nominalConcurrencyShares; each level may lend
//! lendablePercent of its nominal seats and borrow up to borrowingLimitPercent more, and every
//! few seconds the seats are shared out again by the levels' recent seat demand.

use serde_json::Value;

use super::queueset::{Demand, QueuingConfig};

/// Upstream's share of a level's nominal seats one request may take (`maxSeats`).
const MAX_SEATS_FRACTION: f64 = 0.15;
/// Upstream's smoothing of seat demand between adjustments.
const SMOOTHING: f64 = 0.977;

/// A PriorityLevelConfiguration as the dispatcher needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelSpec {
    pub name: String,
    pub uid: String,
    pub exempt: bool,
    pub shares: f64,
    pub lendable_percent: f64,
    /// None: may borrow without bound.
    pub borrowing_limit_percent: Option<f64>,
    pub queuing: QueuingConfig,
}

impl LevelSpec {
    /// From a stored object (defaulted by its strategy; upstream's defaults again here for
    /// fields a stored object may lack).
    pub fn from_object(object: &Value) -> Self {
        let text = |p: &str| {
            object
                .pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let number = |p: &str| object.pointer(p).and_then(Value::as_f64);
        let exempt = object.pointer("/spec/type").and_then(Value::as_str) == Some("Exempt");
        let (shares, lendable, borrowing, queuing) = if exempt {
            (
                number("/spec/exempt/nominalConcurrencyShares").unwrap_or(0.0),
                number("/spec/exempt/lendablePercent").unwrap_or(0.0),
                None,
                NO_QUEUING,
            )
        } else {
            let queue = object
                .pointer("/spec/limited/limitResponse/type")
                .and_then(Value::as_str)
                == Some("Queue");
            let q = |field: &str, default: f64| {
                number(&format!("/spec/limited/limitResponse/queuing/{field}")).unwrap_or(default)
                    as usize
            };
            let queuing = if queue {
                QueuingConfig {
                    queues: q("queues", 64.0),
                    hand_size: q("handSize", 8.0),
                    queue_length_limit: q("queueLengthLimit", 50.0),
                }
            } else {
                NO_QUEUING
            };
            (
                number("/spec/limited/nominalConcurrencyShares").unwrap_or(30.0),
                number("/spec/limited/lendablePercent").unwrap_or(0.0),
                number("/spec/limited/borrowingLimitPercent"),
                queuing,
            )
        };
        Self {
            name: text("/metadata/name"),
            uid: text("/metadata/uid"),
            exempt,
            shares,
            lendable_percent: lendable,
            borrowing_limit_percent: borrowing,
            queuing,
        }
    }
}

const NO_QUEUING: QueuingConfig = QueuingConfig {
    queues: 0,
    hand_size: 0,
    queue_length_limit: 0,
};

/// A level's seats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Seats {
    pub nominal: u32,
    pub lendable: u32,
    /// nominal - lendable: never lent away.
    pub lower: u32,
    /// nominal + what it may borrow.
    pub upper: u32,
    /// The widest request (lists' and writes' cap; 0: the estimator's own).
    pub max_seats: u32,
}

impl Seats {
    /// A new level's seats before the first adjustment: half its lendable seats lent.
    pub fn initial(&self) -> u32 {
        self.nominal - self.lendable / 2
    }
}

/// Every level's seats out of the server's, in the order given.
pub fn nominal_seats(server: u32, specs: &[LevelSpec]) -> Vec<Seats> {
    let total: f64 = specs.iter().map(|s| s.shares).sum();
    specs
        .iter()
        .map(|spec| {
            let nominal = if total > 0.0 {
                (f64::from(server) * spec.shares / total).ceil() as u32
            } else {
                0
            };
            let lendable = (f64::from(nominal) * spec.lendable_percent / 100.0).round() as u32;
            // Without a borrowing limit (the exempt level has none) a level may borrow up to
            // the server's seats, as upstream bounds it.
            let borrowing = match spec.borrowing_limit_percent {
                None => server,
                Some(p) => (f64::from(nominal) * p / 100.0).round() as u32,
            };
            // Upstream's per-level cap on a request's seats, for queuing levels: 15% of the
            // nominal seats, at most a hand's share of them, at least 1 (0: the estimator's).
            let max_seats = match spec.queuing {
                q if q.queues == 0 || q.hand_size == 0 => 0,
                q => ((f64::from(nominal) * MAX_SEATS_FRACTION).ceil() as u32)
                    .min(nominal / q.hand_size as u32)
                    .max(1),
            };
            Seats {
                nominal,
                lendable,
                lower: nominal - lendable.min(nominal),
                upper: nominal.saturating_add(borrowing),
                max_seats,
            }
        })
        .collect()
}

/// Seat demand between adjustments, smoothed (upstream's seatDemandStats).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DemandStats {
    pub average: f64,
    pub deviation: f64,
    pub high_water: f64,
    pub smoothed: f64,
}

impl DemandStats {
    pub fn update(&mut self, demand: &Demand) {
        self.high_water = demand.high_water;
        if demand.elapsed <= 0.0 {
            return;
        }
        self.average = demand.integral / demand.elapsed;
        let variance = demand.square_integral / demand.elapsed - self.average * self.average;
        self.deviation = variance.max(0.0).sqrt();
        let envelope = self.average + self.deviation;
        self.smoothed = envelope.max(SMOOTHING * self.smoothed + (1.0 - SMOOTHING) * envelope);
    }
}

/// One level in the allocation: bounds and the seats it would like.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wanted {
    pub lower: f64,
    pub upper: f64,
    pub target: f64,
}

/// Shares `server` seats: each level gets its target scaled by one fair fraction, kept within
/// its bounds, the fraction chosen so that the shares add up to the server's seats (or every
/// level its bound, when they cannot). The shares, rounded, and the fraction.
pub fn allocate(server: u32, wanted: &[Wanted]) -> (Vec<u32>, f64) {
    let sum = |frac: f64| -> f64 {
        wanted
            .iter()
            .map(|w| (frac * w.target).clamp(w.lower, w.upper.max(w.lower)))
            .sum()
    };
    let required = f64::from(server);
    let frac = if sum(0.0) >= required {
        0.0
    } else {
        let mut high = 1.0;
        while sum(high) < required && high < 1e12 {
            high *= 2.0;
        }
        let mut low = 0.0;
        for _ in 0..100 {
            let mid = (low + high) / 2.0;
            if sum(mid) < required {
                low = mid;
            } else {
                high = mid;
            }
        }
        high
    };
    let shares = wanted
        .iter()
        .map(|w| {
            (frac * w.target)
                .clamp(w.lower, w.upper.max(w.lower))
                .round() as u32
        })
        .collect();
    (shares, frac)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limited(name: &str, shares: f64, lendable: f64) -> LevelSpec {
        LevelSpec::from_object(&json!({
            "metadata": {"name": name, "uid": format!("uid-{name}")},
            "spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": shares, "lendablePercent": lendable,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}},
        }))
    }

    #[test]
    fn upstream_bootstrap_shares_of_600_seats() {
        let exempt = LevelSpec::from_object(&json!({
            "metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}},
        }));
        assert!(exempt.exempt);
        let specs = vec![
            exempt,
            limited("system", 30.0, 33.0),
            limited("node-high", 40.0, 25.0),
            limited("leader-election", 10.0, 0.0),
            limited("workload-high", 40.0, 50.0),
            limited("workload-low", 100.0, 90.0),
            limited("global-default", 20.0, 50.0),
            LevelSpec::from_object(&json!({
                "metadata": {"name": "catch-all"},
                "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}},
            })),
        ];
        let seats = nominal_seats(600, &specs);
        let nominal: Vec<u32> = seats.iter().map(|s| s.nominal).collect();
        assert_eq!(nominal, vec![0, 74, 98, 25, 98, 245, 49, 13]);
        assert_eq!(seats[6].lendable, 25);
        assert_eq!(seats[6].lower, 24);
        assert_eq!(seats[6].upper, 649);
        assert_eq!(seats[6].max_seats, 8);
        assert_eq!(seats[6].initial(), 37);
        // Reject levels: the estimator's own cap.
        assert_eq!(seats[7].max_seats, 0);
        assert_eq!(specs[6].queuing.queues, 128);
    }

    #[test]
    fn idle_levels_share_by_their_floors_and_busy_ones_borrow() {
        let wanted = [
            Wanted {
                lower: 10.0,
                upper: 100.0,
                target: 10.0,
            },
            Wanted {
                lower: 10.0,
                upper: 100.0,
                target: 10.0,
            },
        ];
        let (shares, _) = allocate(40, &wanted);
        assert_eq!(shares, vec![20, 20]);
        // One level's demand is three times the other's: it borrows.
        let wanted = [
            Wanted {
                lower: 10.0,
                upper: 100.0,
                target: 30.0,
            },
            Wanted {
                lower: 10.0,
                upper: 100.0,
                target: 10.0,
            },
        ];
        let (shares, frac) = allocate(40, &wanted);
        assert_eq!(shares, vec![30, 10]);
        assert!((frac - 1.0).abs() < 1e-6, "{frac}");
        // Bounds hold even when they cannot add up.
        let (shares, _) = allocate(10, &wanted);
        assert_eq!(shares, vec![10, 10]);
    }

    #[test]
    fn demand_statistics_smooth_upwards_at_once() {
        let mut stats = DemandStats::default();
        stats.update(&Demand {
            integral: 50.0,
            square_integral: 500.0,
            high_water: 20.0,
            elapsed: 10.0,
        });
        // average 5, variance 50 - 25 = 25: deviation 5, envelope 10.
        assert_eq!(
            (stats.average, stats.deviation, stats.smoothed),
            (5.0, 5.0, 10.0)
        );
        stats.update(&Demand {
            integral: 0.0,
            square_integral: 0.0,
            high_water: 0.0,
            elapsed: 10.0,
        });
        assert!((stats.smoothed - 9.77).abs() < 1e-9);
    }
}
