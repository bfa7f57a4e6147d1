//! Upstream's timing ratio histograms (component-base's TimingHistogram under flowcontrol's
//! TimingRatioHistogramVec): a variable, numerator / denominator, is sampled at the end of
//! every nanosecond. Each bucket counts the nanoseconds the ratio spent at or below its bound
//! (cumulatively, as any histogram), the count is all the nanoseconds since the series began,
//! and the sum is the integral of the ratio over them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use prometheus::core::{Collector, Desc};
use prometheus::proto::{Bucket, Histogram, LabelPair, Metric, MetricFamily, MetricType};

/// One series: the ratio's parts and what it has accumulated.
struct Series {
    numerator: f64,
    denominator: f64,
    since: Instant,
    /// Nanoseconds per bucket (not cumulative); the last one is above every bound.
    nanos: Vec<u64>,
    sum: f64,
}

impl Series {
    fn ratio(&self) -> f64 {
        // A denominator is a limit of at least one; should it ever be 0, the numerator shows.
        if self.denominator > 0.0 {
            self.numerator / self.denominator
        } else {
            self.numerator
        }
    }

    /// Accounts the time since the last change to the ratio held meanwhile.
    fn advance(&mut self, bounds: &[f64], now: Instant) {
        let elapsed = now.saturating_duration_since(self.since);
        if elapsed.is_zero() {
            return;
        }
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let ratio = self.ratio();
        let index = bounds.partition_point(|bound| *bound < ratio);
        self.nanos[index] = self.nanos[index].saturating_add(nanos);
        self.sum += nanos as f64 * ratio;
        self.since = now;
    }
}

/// One series' handle: changes to its numerator and denominator.
#[derive(Clone)]
pub struct Ratioed {
    series: Arc<Mutex<Series>>,
    bounds: Arc<[f64]>,
}

impl Ratioed {
    fn change(&self, change: impl FnOnce(&mut Series)) {
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        series.advance(&self.bounds, Instant::now());
        change(&mut series);
    }

    pub fn set(&self, numerator: f64) {
        self.change(|s| s.numerator = numerator);
    }

    pub fn add(&self, delta: f64) {
        self.change(|s| s.numerator += delta);
    }

    pub fn set_denominator(&self, denominator: f64) {
        self.change(|s| s.denominator = denominator);
    }
}

/// A family of timing ratio histograms by label values.
#[derive(Clone)]
pub struct TimingRatioVec {
    desc: Desc,
    labels: Arc<[String]>,
    const_labels: Arc<[(String, String)]>,
    bounds: Arc<[f64]>,
    series: Arc<Mutex<HashMap<Vec<String>, Ratioed>>>,
}

impl TimingRatioVec {
    /// `name` under apiserver_flowcontrol_, with upstream's help, buckets and labels.
    pub fn new(
        name: &str,
        help: &str,
        const_labels: &[(&str, &str)],
        labels: &[&str],
        bounds: &[f64],
    ) -> prometheus::Result<Self> {
        let const_labels: Vec<(String, String)> = const_labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let desc = Desc::new(
            format!("apiserver_flowcontrol_{name}"),
            help.to_string(),
            labels.iter().map(|l| l.to_string()).collect(),
            const_labels.iter().cloned().collect(),
        )?;
        Ok(Self {
            desc,
            labels: labels.iter().map(|l| l.to_string()).collect(),
            const_labels: const_labels.into(),
            bounds: bounds.into(),
            series: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// The series for `values`, made with the given numerator and denominator if new.
    pub fn with(&self, values: &[&str], numerator: f64, denominator: f64) -> Ratioed {
        let key: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        series
            .entry(key)
            .or_insert_with(|| Ratioed {
                series: Arc::new(Mutex::new(Series {
                    numerator,
                    denominator,
                    since: Instant::now(),
                    nanos: vec![0; self.bounds.len() + 1],
                    sum: 0.0,
                })),
                bounds: self.bounds.clone(),
            })
            .clone()
    }

    pub fn remove(&self, values: &[&str]) {
        let key: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        series.remove(&key);
    }

    fn metric(&self, values: &[String], ratioed: &Ratioed, now: Instant) -> Metric {
        let mut series = ratioed.series.lock().unwrap_or_else(|e| e.into_inner());
        series.advance(&self.bounds, now);
        let mut pairs: Vec<(String, String)> = self
            .labels
            .iter()
            .cloned()
            .zip(values.iter().cloned())
            .chain(self.const_labels.iter().cloned())
            .collect();
        pairs.sort();
        let labels = pairs
            .into_iter()
            .map(|(name, value)| {
                let mut pair = LabelPair::default();
                pair.set_name(name);
                pair.set_value(value);
                pair
            })
            .collect();
        let mut cumulative = 0u64;
        let buckets = self
            .bounds
            .iter()
            .zip(&series.nanos)
            .map(|(bound, nanos)| {
                cumulative = cumulative.saturating_add(*nanos);
                let mut bucket = Bucket::default();
                bucket.set_upper_bound(*bound);
                bucket.set_cumulative_count(cumulative);
                bucket
            })
            .collect();
        let total = series.nanos.iter().fold(0u64, |a, n| a.saturating_add(*n));
        let mut histogram = Histogram::default();
        histogram.set_bucket(buckets);
        histogram.set_sample_count(total);
        histogram.set_sample_sum(series.sum);
        let mut metric = Metric::from_label(labels);
        metric.set_histogram(histogram);
        metric
    }
}

impl Collector for TimingRatioVec {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.desc]
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let now = Instant::now();
        let series: Vec<(Vec<String>, Ratioed)> = {
            let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
            series.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        if series.is_empty() {
            return Vec::new();
        }
        let mut family = MetricFamily::default();
        family.set_name(self.desc.fq_name.clone());
        family.set_help(self.desc.help.clone());
        family.set_field_type(MetricType::HISTOGRAM);
        family.set_metric(
            series
                .iter()
                .map(|(values, ratioed)| self.metric(values, ratioed, now))
                .collect(),
        );
        vec![family]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn buckets_count_the_time_spent_at_each_ratio() {
        let vec = TimingRatioVec::new(
            "test_utilization",
            "help",
            &[("phase", "executing")],
            &["priority_level"],
            &[0.0, 0.5, 1.0],
        )
        .expect("valid");
        let ratioed = vec.with(&["l"], 0.0, 4.0);
        std::thread::sleep(Duration::from_millis(20));
        // 3 of 4: above 0.5, at most 1.
        ratioed.set(3.0);
        std::thread::sleep(Duration::from_millis(20));
        let family = vec.collect().pop().expect("a family");
        assert_eq!(family.name(), "apiserver_flowcontrol_test_utilization");
        let metric = &family.get_metric()[0];
        let names: Vec<&str> = metric.get_label().iter().map(|l| l.name()).collect();
        assert_eq!(names, ["phase", "priority_level"]);
        let h = metric.get_histogram();
        let counts: Vec<u64> = h
            .get_bucket()
            .iter()
            .map(|b| b.cumulative_count())
            .collect();
        let (at_zero, to_half, to_one) = (counts[0], counts[1], counts[2]);
        assert!(at_zero >= 20_000_000, "{counts:?}");
        assert_eq!(to_half, at_zero, "nothing between 0 and 0.5");
        assert!(to_one - to_half >= 20_000_000, "{counts:?}");
        assert_eq!(h.get_sample_count(), to_one);
        // The integral: 0.75 over the second stretch.
        let second = (to_one - to_half) as f64;
        assert!(
            (h.get_sample_sum() - 0.75 * second).abs() < 1.0,
            "{}",
            h.get_sample_sum()
        );
        vec.remove(&["l"]);
        assert!(vec.collect().is_empty());
    }
}
