//! Schedules: upstream's standard cron syntax (five fields, or @yearly, @monthly, @weekly,
//! @daily, @midnight, @hourly) with an optional `TZ=` / `CRON_TZ=` prefix, evaluated in a time
//! zone, and the scheduled times a CronJob has missed.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

/// Upstream gives up listing missed start times past this many and says so in an event.
pub const TOO_MANY_MISSED: i64 = 100;

#[derive(Clone, Debug)]
pub struct Schedule {
    cron: Cron,
    /// The zone of a `TZ=` prefix, if the schedule had one.
    pub time_zone: Option<Tz>,
}

/// Parses a CronJob's `spec.schedule`; the error says why it does not parse.
pub fn parse_schedule(text: &str) -> Result<Schedule, String> {
    let mut spec = text.trim();
    let mut time_zone = None;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let (zone, rest) = spec.split_once(char::is_whitespace).unwrap_or((spec, ""));
        let name = zone.split_once('=').map(|(_, z)| z).unwrap_or_default();
        time_zone = Some(
            name.parse::<Tz>()
                .map_err(|_| format!("provided bad location {name}: unknown time zone {name}"))?,
        );
        spec = rest.trim();
    }
    if spec.split_whitespace().count() != 5 && !spec.starts_with('@') {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{spec}]",
            spec.split_whitespace().count()
        ));
    }
    let cron = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(spec)
        .map_err(|e| e.to_string())?;
    Ok(Schedule { cron, time_zone })
}

impl Schedule {
    /// The first scheduled time after `t`, in `tz`.
    pub fn next_after(&self, t: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        self.cron
            .find_next_occurrence(&t.with_timezone(&tz), false)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    /// The latest scheduled time in (`earliest`, `now`], and roughly how many there were
    /// (upstream's mostRecentScheduleTime: the count assumes the first interval repeats).
    pub fn most_recent(
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
    fn five_fields_and_macros_parse_and_others_do_not() {
        for ok in [
            "*/1 * * * *",
            "0 0 1 1 *",
            "@hourly",
            "@daily",
            "TZ=Europe/Berlin 0 6 * * *",
        ] {
            assert!(parse_schedule(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "* * * *",
            "61 * * * *",
            "@every 5m",
            "TZ=Mars/Base * * * * *",
        ] {
            assert!(parse_schedule(bad).is_err(), "{bad}");
        }
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
}
