//! When a schedule fires: the next time after an instant and the latest missed time, in a time
//! zone. Parsing (and its messages) is `registry::cron`'s, shared with validation.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
pub use registry::cron::{parse_schedule, Schedule};

/// Upstream gives up listing missed start times past this many and says so in an event.
pub const TOO_MANY_MISSED: i64 = 100;

/// The times a parsed schedule fires at.
pub trait ScheduleTimes {
    /// The first scheduled time after `t`, in `tz`.
    fn next_after(&self, t: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>>;
    /// The latest scheduled time in (`earliest`, `now`], and roughly how many there were
    /// (upstream's mostRecentScheduleTime: the count assumes the first interval repeats).
    fn most_recent(
        &self,
        earliest: DateTime<Utc>,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> (Option<DateTime<Utc>>, i64);
}

impl ScheduleTimes for Schedule {
    fn next_after(&self, t: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        self.cron
            .find_next_occurrence(&t.with_timezone(&tz), false)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    fn most_recent(
        &self,
        earliest: DateTime<Utc>,
        now: DateTime<Utc>,
        tz: Tz,
    ) -> (Option<DateTime<Utc>>, i64) {
        let Some(first) = self.next_after(earliest, tz).filter(|t| *t <= now) else {
            return (None, 0);
        };
        let latest = self
            .cron
            .find_previous_occurrence(&now.with_timezone(&tz), true)
            .ok()
            .map(|t| t.with_timezone(&Utc))
            .filter(|t| *t >= first)
            .unwrap_or(first);
        let missed = match self.next_after(first, tz) {
            Some(second) if second > first => {
                let interval = (second - first).num_seconds().max(1);
                (now - first).num_seconds() / interval + 1
            }
            _ => 1,
        };
        (Some(latest), missed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn the_most_recent_missed_time_and_how_many() {
        let s = parse_schedule("*/5 * * * *").unwrap_or_else(|e| panic!("{e}"));
        let (latest, missed) = s.most_recent(
            at("2024-01-01T10:00:00Z"),
            at("2024-01-01T10:17:30Z"),
            Tz::UTC,
        );
        assert_eq!(latest, Some(at("2024-01-01T10:15:00Z")));
        assert_eq!(missed, 3);
        let (none, zero) = s.most_recent(
            at("2024-01-01T10:00:00Z"),
            at("2024-01-01T10:04:59Z"),
            Tz::UTC,
        );
        assert_eq!((none, zero), (None, 0));
        let daily = parse_schedule("0 6 * * *").unwrap_or_else(|e| panic!("{e}"));
        let berlin: Tz = "Europe/Berlin".parse().unwrap_or(Tz::UTC);
        assert_eq!(
            daily.next_after(at("2024-01-01T00:00:00Z"), berlin),
            Some(at("2024-01-01T05:00:00Z"))
        );
    }

    #[test]
    fn an_impossible_date_never_fires() {
        let never = parse_schedule("59 23 31 2 *").unwrap_or_else(|e| panic!("{e}"));
        let started = std::time::Instant::now();
        assert_eq!(never.next_after(at("2024-01-01T00:00:00Z"), Tz::UTC), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }
}
