//! A soak's figures, the table they are printed as, and the verdicts on them.
//!
//! "Flat" after warm-up, for memory and for tasks alike, is two conditions:
//! - the least-squares slope of the samples, times the window it was fitted on, is at most
//!   `slope × window` or a noise floor, whichever is larger; and
//! - the median of the window's last quarter is at most the median of its second quarter plus
//!   a margin (a relative one, or the noise floor when that is larger).
//!
//! The numbers:
//! - memory: 5 MB/h. The churn sends about 20 requests/s, 72,000 an hour: a leak of 70 bytes a
//!   request, or of one ~1 KB object every 14 s, shows as 5 MB/h. The noise floor is 2 MB: the
//!   allocator gives pages back and takes them again by a MB or two between samples (a burst
//!   of lists, a watch's initial events), so on a short run a 2 MB step would read as a steep
//!   slope. Quarters: +5% or 2 MB.
//! - tasks: 20 tasks/h, floor 10. The churn abandons about 200 watches and opens and closes
//!   several hundred connections and pods an hour; a leak of one task in ten of any of them is
//!   well above 20/h. A sample lands while the churn's own watches, connections and pods come
//!   and go, so single samples differ by a few tasks. Quarters: +5% or 10.
//! - after the churn has stopped, every watch is closed and every namespace it made is gone,
//!   the tasks must come back to within 10 (or 10%) of the idle figure taken before it began.

use std::fmt::Write as _;
use std::time::Duration;

use super::server::{LogLines, Sample};
use crate::stats::median;
use crate::BackendKind;

const MB: f64 = 1e6;
const HOUR: f64 = 3600.0;

/// One figure's allowance: its slope per hour, its noise floor, its quarter-to-quarter rise.
struct Tolerance {
    per_hour: f64,
    floor: f64,
    quarter_rise: f64,
}

const MEMORY: Tolerance = Tolerance {
    per_hour: 5.0 * MB,
    floor: 2.0 * MB,
    quarter_rise: 0.05,
};

const TASKS: Tolerance = Tolerance {
    per_hour: 20.0,
    floor: 10.0,
    quarter_rise: 0.05,
};

/// How far above idle the drained server's tasks may be: 10, or 10% of idle.
const DRAINED_MARGIN: (f64, f64) = (10.0, 0.10);

/// The most tasks a drained server may have: idle plus [`DRAINED_MARGIN`].
pub fn drained_allowance(idle: &Sample) -> u64 {
    let idle = idle.tasks as f64;
    (idle + DRAINED_MARGIN.0.max(idle * DRAINED_MARGIN.1)) as u64
}

/// What the churn counted.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub requests: u64,
    pub errors: u64,
    pub races: u64,
    pub watches: u64,
    pub watches_abandoned: u64,
    pub watch_events: u64,
    pub namespaces_created: u64,
    pub namespaces_gone: u64,
    pub rollouts_checked: u64,
    pub rollouts_complete: u64,
    /// The first failures, word for word.
    pub kept_errors: Vec<String>,
}

pub struct Report {
    pub backend: BackendKind,
    pub churned: Duration,
    pub warm_up: Duration,
    /// Before the churn (CRD and namespace made, nothing else).
    pub idle: Sample,
    /// Every few seconds while the churn ran.
    pub samples: Vec<Sample>,
    /// After the churn stopped and all it made was gone.
    pub drained: Sample,
    pub counts: Counts,
    pub log: LogLines,
}

/// A series' figures over the window after warm-up.
pub struct Series {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub per_hour: f64,
    /// The slope times the window: what the fit says the window added.
    pub growth: f64,
    pub second_quarter: f64,
    pub last_quarter: f64,
}

/// The least-squares slope of `points` (x, y), per unit of x.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, y) in points {
        sxy += (x - mean_x) * (y - mean_y);
        sxx += (x - mean_x) * (x - mean_x);
    }
    if sxx == 0.0 {
        0.0
    } else {
        sxy / sxx
    }
}

impl Report {
    fn after_warm_up(&self) -> Vec<Sample> {
        let from = self.warm_up.as_secs_f64();
        self.samples
            .iter()
            .copied()
            .filter(|s| s.at >= from)
            .collect()
    }

    pub fn series(&self, value: fn(&Sample) -> f64) -> Series {
        let window = self.after_warm_up();
        let values: Vec<f64> = window.iter().map(value).collect();
        let points: Vec<(f64, f64)> = window.iter().map(|s| (s.at, value(s))).collect();
        let per_second = slope(&points);
        let span = match (window.first(), window.last()) {
            (Some(a), Some(b)) => b.at - a.at,
            _ => 0.0,
        };
        let (start, end) = (self.warm_up.as_secs_f64(), self.churned.as_secs_f64());
        let quarter = |q: f64| {
            let (from, to) = (
                start + (end - start) * q / 4.0,
                start + (end - start) * (q + 1.0) / 4.0,
            );
            median(
                window
                    .iter()
                    .filter(|s| s.at >= from && s.at < to)
                    .map(value)
                    .collect(),
            )
        };
        Series {
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            median: median(values.clone()),
            max: values.iter().copied().fold(0.0, f64::max),
            per_hour: per_second * HOUR,
            growth: per_second * span,
            second_quarter: quarter(1.0),
            last_quarter: quarter(3.0),
        }
    }

    pub fn memory(&self) -> Series {
        self.series(|s| s.anon as f64)
    }

    pub fn tasks(&self) -> Series {
        self.series(|s| s.tasks as f64)
    }

    /// Failures of the run: request errors, watch ERROR events, namespaces that stayed, the
    /// server's own ERROR lines.
    pub fn error_failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        if self.counts.errors > 0 {
            failures.push(format!(
                "{} request errors; the first: {:#?}",
                self.counts.errors, self.counts.kept_errors
            ));
        }
        if self.log.errors > 0 {
            failures.push(format!(
                "{} ERROR lines in the server's log; the first: {:#?}",
                self.log.errors, self.log.first_errors
            ));
        }
        failures
    }

    /// Whether memory and tasks stayed flat after warm-up (see the module's doc).
    pub fn flatness_failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        let window_hours = (self.churned - self.warm_up).as_secs_f64() / HOUR;
        for (what, series, tolerance, unit, scale) in [
            ("anonymous memory", self.memory(), MEMORY, "MB", MB),
            ("alive tasks", self.tasks(), TASKS, "tasks", 1.0),
        ] {
            let allowed = (tolerance.per_hour * window_hours).max(tolerance.floor);
            if series.growth > allowed {
                failures.push(format!(
                    "{what} grew {:.1} {unit} over the window ({:.1} {unit}/h; allowed {:.1} {unit})",
                    series.growth / scale,
                    series.per_hour / scale,
                    allowed / scale
                ));
            }
            let margin = (series.second_quarter * tolerance.quarter_rise).max(tolerance.floor);
            if series.last_quarter > series.second_quarter + margin {
                failures.push(format!(
                    "{what}: last quarter's median {:.1} {unit} above the second's {:.1} {unit} by more than {:.1} {unit}",
                    series.last_quarter / scale,
                    series.second_quarter / scale,
                    margin / scale
                ));
            }
        }
        failures
    }

    /// Whether the tasks came back to idle once the churn stopped and its objects were gone.
    pub fn drain_failures(&self) -> Vec<String> {
        let allowed = drained_allowance(&self.idle);
        if self.drained.tasks > allowed {
            vec![format!(
                "{} tasks after the churn drained, {} before it began (allowed {allowed})",
                self.drained.tasks, self.idle.tasks
            )]
        } else {
            Vec::new()
        }
    }

    /// The server's first warnings, for the reader to judge (they fail nothing).
    pub fn warnings(&self) -> String {
        let mut out = String::new();
        for line in self.log.first_warnings.iter().take(3) {
            let _ = writeln!(out, "{}: server warned: {line}", self.backend.name());
        }
        out
    }

    /// Every verdict: errors, flatness, drain.
    pub fn failures(&self) -> Vec<String> {
        let mut all = self.error_failures();
        all.extend(self.flatness_failures());
        all.extend(self.drain_failures());
        all
    }

    /// The figures, a (name, value) pair a row.
    pub fn rows(&self) -> Vec<(String, String)> {
        let (m, t) = (self.memory(), self.tasks());
        let window = self.after_warm_up();
        let range = |value: fn(&Sample) -> u64| {
            let values: Vec<u64> = window.iter().map(value).collect();
            format!(
                "{}–{}",
                values.iter().min().copied().unwrap_or(0),
                values.iter().max().copied().unwrap_or(0)
            )
        };
        let c = &self.counts;
        let mut out = Vec::new();
        let mut row = |name: &str, value: String| out.push((name.to_string(), value));
        row(
            "churn / warm-up end / samples after it",
            format!(
                "{:.1} min / {:.0} s / {}",
                self.churned.as_secs_f64() / 60.0,
                self.warm_up.as_secs_f64(),
                window.len()
            ),
        );
        row(
            "anon MB: idle / min / median / max / drained",
            format!(
                "{:.1} / {:.1} / {:.1} / {:.1} / {:.1}",
                self.idle.anon as f64 / MB,
                m.min / MB,
                m.median / MB,
                m.max / MB,
                self.drained.anon as f64 / MB
            ),
        );
        row(
            "anon slope; 2nd → last quarter median",
            format!(
                "{:+.2} MB/h; {:.1} → {:.1} MB",
                m.per_hour / MB,
                m.second_quarter / MB,
                m.last_quarter / MB
            ),
        );
        row(
            "tasks: idle / min / median / max / drained",
            format!(
                "{} / {:.0} / {:.0} / {:.0} / {}",
                self.idle.tasks, t.min, t.median, t.max, self.drained.tasks
            ),
        );
        row(
            "tasks slope; 2nd → last quarter median",
            format!(
                "{:+.1} tasks/h; {:.0} → {:.0}",
                t.per_hour, t.second_quarter, t.last_quarter
            ),
        );
        row(
            "threads / open fds (after warm-up)",
            format!("{} / {}", range(|s| s.threads), range(|s| s.fds)),
        );
        row(
            "requests (rate) / errors / 404-409 races",
            format!(
                "{} ({:.1}/s) / {} / {}",
                c.requests,
                c.requests as f64 / self.churned.as_secs_f64().max(1.0),
                c.errors,
                c.races
            ),
        );
        row(
            "watches (abandoned) / events",
            format!(
                "{} ({}) / {}",
                c.watches, c.watches_abandoned, c.watch_events
            ),
        );
        row(
            "namespaces made / gone",
            format!("{} / {}", c.namespaces_created, c.namespaces_gone),
        );
        row(
            "rollouts complete a turn later",
            format!("{} of {}", c.rollouts_complete, c.rollouts_checked),
        );
        row(
            "server log: ERROR / WARN lines",
            format!("{} / {}", self.log.errors, self.log.warnings),
        );
        out
    }
}

/// The reports side by side: a Markdown table, a column per backend.
pub fn table(reports: &[Report]) -> String {
    let mut out = String::from("| figure |");
    for r in reports {
        let _ = write!(out, " {} |", r.backend.name());
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(reports.len()));
    out.push('\n');
    let columns: Vec<Vec<(String, String)>> = reports.iter().map(Report::rows).collect();
    for (i, (name, _)) in columns
        .first()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let _ = write!(out, "| {name} |");
        for column in &columns {
            let _ = write!(out, " {} |", column[i].1);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(values: impl Fn(f64) -> u64) -> Report {
        let samples = (0..=120)
            .map(|i| {
                let at = i as f64 * 5.0;
                Sample {
                    at,
                    anon: 30_000_000 + values(at),
                    tasks: 200 + values(at) / 500_000,
                    threads: 5,
                    fds: 40,
                }
            })
            .collect();
        Report {
            backend: BackendKind::Embedded,
            churned: Duration::from_secs(600),
            warm_up: Duration::from_secs(100),
            idle: Sample::default(),
            samples,
            drained: Sample::default(),
            counts: Counts::default(),
            log: LogLines::default(),
        }
    }

    #[test]
    fn a_steady_climb_is_a_slope_and_fails() {
        // 36 kB/s is 129.6 MB/h: 18 MB over the 500 s window.
        let r = report(|at| (at * 36_000.0) as u64);
        let m = r.memory();
        assert!((m.per_hour / MB - 129.6).abs() < 0.1, "{}", m.per_hour);
        assert!(m.last_quarter > m.second_quarter);
        assert_eq!(
            r.flatness_failures().len(),
            4,
            "{:?}",
            r.flatness_failures()
        );
    }

    #[test]
    fn noise_within_the_floor_is_flat() {
        // A saw of 1.5 MB: no trend.
        let r = report(|at| {
            if (at as u64 / 5).is_multiple_of(2) {
                0
            } else {
                1_500_000
            }
        });
        assert!(
            r.flatness_failures().is_empty(),
            "{:?}",
            r.flatness_failures()
        );
        assert_eq!(r.memory().min, 30e6);
        assert_eq!(r.memory().max, 31.5e6);
    }
}
