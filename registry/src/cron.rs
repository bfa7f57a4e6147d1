//! CronJob schedules: upstream's standard cron syntax (robfig/cron's ParseStandard, which
//! kube-apiserver validates with and the CronJob controller schedules by), parsed into a
//! `croner` schedule. One entry point, shared by validation and the CronJob controller.
//!
//! Accepted: five fields (minute, hour, day of month, month, day of week) with `*`, `?`,
//! lists, ranges, steps and month / weekday names; the macros @yearly @annually @monthly
//! @weekly @daily @midnight @hourly; a leading `TZ=<zone>` or `CRON_TZ=<zone>`, which the
//! parser takes as upstream's does (validation refuses it on new schedules separately).
//! Messages are robfig/cron's, since upstream returns them verbatim in 422s.

use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

/// A parsed schedule.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub cron: Cron,
    /// The zone of a `TZ=` / `CRON_TZ=` prefix, if the schedule had one.
    pub time_zone: Option<chrono_tz::Tz>,
}

/// Why a schedule does not parse; the message is upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScheduleError(String);

/// The bounds and names of one field.
struct Field {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const FIELDS: [Field; 5] = [
    Field {
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        min: 0,
        max: 23,
        names: &[],
    },
    Field {
        min: 1,
        max: 31,
        names: &[],
    },
    Field {
        min: 1,
        max: 12,
        names: &MONTHS,
    },
    Field {
        min: 0,
        max: 6,
        names: &WEEKDAYS,
    },
];

/// Parses a CronJob's `spec.schedule`.
pub fn parse_schedule(schedule: &str) -> Result<Schedule, ScheduleError> {
    let err = |m: String| Err(ScheduleError(m));
    let mut spec = schedule.trim();
    if spec.is_empty() {
        return err("empty spec string".into());
    }
    let mut time_zone = None;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let (zone, rest) = spec.split_once(char::is_whitespace).unwrap_or((spec, ""));
        let name = zone.split_once('=').map(|(_, z)| z).unwrap_or_default();
        match name.parse::<chrono_tz::Tz>() {
            Ok(tz) => time_zone = Some(tz),
            Err(_) => {
                return err(format!(
                    "provided bad location {name}: unknown time zone {name}"
                ))
            }
        }
        spec = rest.trim();
    }
    let pattern = if let Some(descriptor) = spec.strip_prefix('@') {
        match descriptor {
            "yearly" | "annually" => "0 0 1 1 *".to_string(),
            "monthly" => "0 0 1 * *".to_string(),
            "weekly" => "0 0 * * 0".to_string(),
            "daily" | "midnight" => "0 0 * * *".to_string(),
            "hourly" => "0 * * * *".to_string(),
            _ => return err(format!("unrecognized descriptor: {spec}")),
        }
    } else {
        let fields: Vec<&str> = spec.split_whitespace().collect();
        if fields.len() != 5 {
            return err(format!(
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            ));
        }
        let mut numeric = Vec::with_capacity(5);
        for (text, field) in fields.iter().zip(FIELDS.iter()) {
            numeric.push(check_field(text, field).map_err(ScheduleError)?);
        }
        numeric.join(" ")
    };
    let cron = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(&pattern)
        .map_err(|e| ScheduleError(e.to_string()))?;
    Ok(Schedule { cron, time_zone })
}

/// Checks one field as robfig's getRange does and returns it with names replaced by numbers
/// (croner and robfig agree on the numeric grammar once the bounds hold).
fn check_field(text: &str, field: &Field) -> Result<String, String> {
    let mut out = Vec::new();
    for expr in text.split(',') {
        let (range, step) = match expr.split('/').collect::<Vec<_>>()[..] {
            [range] => (range, None),
            [range, step] => (range, Some(step)),
            _ => return Err(format!("too many slashes: {expr}")),
        };
        let star = matches!(range, "*" | "?");
        let (start, end) = match range.split('-').collect::<Vec<_>>()[..] {
            ["*" | "?"] => (field.min, field.max),
            [single] => {
                let n = value(single, field)?;
                // `n/step` runs from n to the end of the field, as in robfig.
                (n, if step.is_some() { field.max } else { n })
            }
            [a, b] => (value(a, field)?, value(b, field)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        let step = match step {
            Some(s) => {
                let n = number(s)?;
                if n == 0 {
                    return Err(format!("step of range should be a positive number: {expr}"));
                }
                Some(n)
            }
            None => None,
        };
        if start < field.min {
            return Err(format!(
                "beginning of range ({start}) below minimum ({}): {expr}",
                field.min
            ));
        }
        if end > field.max {
            return Err(format!(
                "end of range ({end}) above maximum ({}): {expr}",
                field.max
            ));
        }
        if start > end {
            return Err(format!(
                "beginning of range ({start}) beyond end of range ({end}): {expr}"
            ));
        }
        // A bare `*` stays one: it decides how day of month and day of week combine.
        let range = if star {
            "*".to_string()
        } else if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        };
        out.push(match step {
            Some(n) => format!("{range}/{n}"),
            None => range,
        });
    }
    Ok(out.join(","))
}

fn value(text: &str, field: &Field) -> Result<u32, String> {
    let lower = text.to_ascii_lowercase();
    match field.names.iter().position(|n| *n == lower) {
        // Months count from 1, weekdays from 0.
        Some(i) => Ok(i as u32 + field.min),
        None => number(text),
    }
}

fn number(text: &str) -> Result<u32, String> {
    match text.parse::<i64>() {
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {text}")),
        Ok(n) => u32::try_from(n).map_err(|_| format!("failed to parse int from {text}")),
        Err(_) => Err(format!(
            "failed to parse int from {text}: strconv.Atoi: parsing {}: invalid syntax",
            crate::validation::quote(text)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(s: &str) -> String {
        parse_schedule(s)
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn standard_schedules_parse() {
        for ok in [
            "*/5 * * * *",
            "0 0 1 1 *",
            "0-30/10 9-17 * JAN-mar mon-fri",
            "15 3 ? * sun",
            "@hourly",
            "@midnight",
            "@annually",
            "CRON_TZ=Europe/Berlin 0 6 * * *",
        ] {
            assert_eq!(message(ok), "", "{ok}");
        }
        let tz = parse_schedule("TZ=Asia/Tokyo 0 6 * * *").map(|s| s.time_zone);
        assert_eq!(tz.ok().flatten(), Some(chrono_tz::Asia::Tokyo));
    }

    #[test]
    fn bad_schedules_say_why_as_upstream() {
        assert_eq!(message(""), "empty spec string");
        assert_eq!(message("foo"), "expected exactly 5 fields, found 1: [foo]");
        assert_eq!(message("@every"), "unrecognized descriptor: @every");
        assert_eq!(
            message("61 * * * *"),
            "end of range (61) above maximum (59): 61"
        );
        assert_eq!(
            message("* * 0 * *"),
            "beginning of range (0) below minimum (1): 0"
        );
        assert_eq!(
            message("* * * * 7"),
            "end of range (7) above maximum (6): 7"
        );
        assert_eq!(
            message("5-1 * * * *"),
            "beginning of range (5) beyond end of range (1): 5-1"
        );
        assert_eq!(
            message("*/0 * * * *"),
            "step of range should be a positive number: */0"
        );
        assert_eq!(
            message("x * * * *"),
            r#"failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax"#
        );
        assert!(message("* * L * *").starts_with("failed to parse int from L"));
        assert_eq!(
            message("TZ=Mars/Base * * * * *"),
            "provided bad location Mars/Base: unknown time zone Mars/Base"
        );
    }
}
