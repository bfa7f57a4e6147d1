//! API call latency from the server's own `apiserver_request_duration_seconds` histograms, as
//! clusterloader2's APIResponsivenessPrometheus reads them: the buckets of a phase (the
//! scrape at its end less the scrape at its start, upstream's `increase` over the window)
//! summed by resource, subresource, verb and scope; WATCH and the streaming subresources
//! (log, exec, portforward, attach, proxy) and CONNECT left out; the 99th percentile by
//! Prometheus' `histogram_quantile` (linear within the bucket it falls in). The SLO of a call
//! is its class's (sig-scalability's api_call_latency): a mutating call or a single-object
//! GET 1 s, a namespace-scoped LIST 5 s, a cluster-scoped LIST 30 s.

use std::collections::BTreeMap;

/// resource, subresource, verb, scope.
pub type Key = (String, String, String, String);

/// Cumulative bucket counts by upper bound (the last is +Inf), per call kind.
#[derive(Clone, Default)]
pub struct Histograms(BTreeMap<Key, Vec<(f64, f64)>>);

const BUCKET: &str = "apiserver_request_duration_seconds_bucket{";

/// The `key="value"` pairs of a sample's label set (`text` is what lies between the braces).
fn labels(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some((name, after)) = rest.split_once("=\"") {
        let Some(end) = after.find('"') else { break };
        out.push((name.trim_start_matches(','), &after[..end]));
        rest = &after[end + 1..];
    }
    out
}

impl Histograms {
    /// The request duration histograms of a `/metrics` text.
    pub fn parse(text: &str) -> Self {
        let mut map: BTreeMap<Key, BTreeMap<u64, (f64, f64)>> = BTreeMap::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix(BUCKET) else {
                continue;
            };
            let Some((set, value)) = rest.rsplit_once("} ") else {
                continue;
            };
            let Ok(count) = value.trim().parse::<f64>() else {
                continue;
            };
            let (mut key, mut le) = (Key::default(), None);
            for (name, v) in labels(set) {
                match name {
                    "resource" => key.0 = v.into(),
                    "subresource" => key.1 = v.into(),
                    "verb" => key.2 = v.into(),
                    "scope" => key.3 = v.into(),
                    "le" => {
                        le = Some(if v == "+Inf" {
                            f64::INFINITY
                        } else {
                            v.parse().unwrap_or(f64::NAN)
                        })
                    }
                    _ => {}
                }
            }
            let Some(le) = le.filter(|l| !l.is_nan()) else {
                continue;
            };
            // Summed over group, version, component and dry run, as upstream's query does.
            let slot = map
                .entry(key)
                .or_default()
                .entry(le.to_bits())
                .or_insert((le, 0.0));
            slot.1 += count;
        }
        Self(
            map.into_iter()
                .map(|(k, b)| {
                    let mut buckets: Vec<(f64, f64)> = b.into_values().collect();
                    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
                    (k, buckets)
                })
                .collect(),
        )
    }

    /// What was recorded after `before` was scraped.
    pub fn since(&self, before: &Histograms) -> Histograms {
        let mut out = BTreeMap::new();
        for (key, buckets) in &self.0 {
            let earlier = before.0.get(key);
            let diff: Vec<(f64, f64)> = buckets
                .iter()
                .map(|(le, n)| {
                    let was = earlier
                        .and_then(|e| e.iter().find(|(l, _)| l == le))
                        .map_or(0.0, |(_, n)| *n);
                    (*le, n - was)
                })
                .collect();
            if diff.last().is_some_and(|(_, n)| *n > 0.0) {
                out.insert(key.clone(), diff);
            }
        }
        Histograms(out)
    }
}

/// Prometheus' `histogram_quantile`: None for no observations; the highest finite bound when
/// the rank falls in +Inf.
pub fn quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let i = buckets.iter().position(|(_, n)| *n >= rank)?;
    let (upper, count) = buckets[i];
    if upper.is_infinite() {
        return Some(buckets.get(i.wrapping_sub(1)).map_or(0.0, |b| b.0));
    }
    let (lower, below) = if i == 0 { (0.0, 0.0) } else { buckets[i - 1] };
    if count == below {
        return Some(upper);
    }
    Some(lower + (upper - lower) * (rank - below) / (count - below))
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Class {
    Mutating,
    Get,
    NamespaceList,
    ClusterList,
}

impl Class {
    pub const ALL: [Class; 4] = [
        Class::Mutating,
        Class::Get,
        Class::NamespaceList,
        Class::ClusterList,
    ];

    /// The class of a call, None for those the SLI leaves out.
    pub fn of(key: &Key) -> Option<Class> {
        let (_, subresource, verb, scope) = key;
        if matches!(verb.as_str(), "WATCH" | "WATCHLIST" | "CONNECT")
            || matches!(
                subresource.as_str(),
                "log" | "exec" | "portforward" | "attach" | "proxy"
            )
        {
            return None;
        }
        Some(match (verb.as_str(), scope.as_str()) {
            ("LIST", "cluster") => Class::ClusterList,
            ("LIST", _) => Class::NamespaceList,
            ("GET", _) => Class::Get,
            _ => Class::Mutating,
        })
    }

    pub fn slo_seconds(self) -> f64 {
        match self {
            Class::Mutating | Class::Get => 1.0,
            Class::NamespaceList => 5.0,
            Class::ClusterList => 30.0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Mutating => "mutating",
            Class::Get => "GET (single object)",
            Class::NamespaceList => "LIST (namespace)",
            Class::ClusterList => "LIST (cluster)",
        }
    }
}

/// One class's verdict: the worst p99 of its call kinds, with the kind, and the calls counted.
pub struct Verdict {
    pub class: Class,
    pub calls: u64,
    /// Calls slower than the SLO (the count above its bucket).
    pub slow: u64,
    pub worst: Option<(f64, Key)>,
}

impl Verdict {
    pub fn met(&self) -> bool {
        self.worst
            .as_ref()
            .is_none_or(|(p99, _)| *p99 <= self.class.slo_seconds())
    }
}

pub fn verdicts(h: &Histograms) -> Vec<Verdict> {
    Class::ALL
        .iter()
        .map(|&class| {
            let mut v = Verdict {
                class,
                calls: 0,
                slow: 0,
                worst: None,
            };
            for (key, buckets) in h.0.iter().filter(|(k, _)| Class::of(k) == Some(class)) {
                let total = buckets.last().map_or(0.0, |b| b.1);
                let fast = buckets
                    .iter()
                    .find(|(le, _)| *le >= class.slo_seconds())
                    .map_or(total, |b| b.1);
                v.calls += total as u64;
                v.slow += (total - fast).max(0.0) as u64;
                if let Some(p99) = quantile(0.99, buckets) {
                    if v.worst.as_ref().is_none_or(|(w, _)| p99 > *w) {
                        v.worst = Some((p99, key.clone()));
                    }
                }
            }
            v
        })
        .collect()
}

/// The call kinds by p99, slowest first: (p99, count, key).
pub fn slowest(h: &Histograms, n: usize) -> Vec<(f64, u64, Key)> {
    let mut all: Vec<(f64, u64, Key)> =
        h.0.iter()
            .filter(|(k, _)| Class::of(k).is_some())
            .filter_map(|(k, b)| {
                Some((
                    quantile(0.99, b)?,
                    b.last().map_or(0, |x| x.1 as u64),
                    k.clone(),
                ))
            })
            .collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0));
    all.truncate(n);
    all
}
