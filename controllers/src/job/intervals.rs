//! Sets of completion indexes as ordered, disjoint intervals, written as upstream's compressed
//! strings ("1,3-5,7": two adjacent indexes are listed, not joined by a dash), the form of
//! `status.completedIndexes`, `status.failedIndexes` and a success policy's
//! `succeededIndexes`.

use std::fmt;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intervals(Vec<(i64, i64)>);

impl Intervals {
    /// Reads a stored string leniently, as upstream's parseIndexesFromString: fragments that
    /// do not parse are skipped and indexes from `completions` on are dropped.
    pub fn parse(s: &str, completions: i64) -> Self {
        let mut parsed = Vec::new();
        if s.is_empty() {
            return Self(parsed);
        }
        for fragment in s.split(',') {
            let mut limits = fragment.splitn(2, '-');
            let Some(Ok(first)) = limits.next().map(str::parse::<i64>) else {
                continue;
            };
            if first >= completions {
                break;
            }
            let last = match limits.next() {
                None => first,
                Some(last) => match last.parse::<i64>() {
                    Ok(last) => last.min(completions - 1),
                    Err(_) => continue,
                },
            };
            parsed.push((first, last));
        }
        Self::normalized(parsed)
    }

    fn normalized(mut intervals: Vec<(i64, i64)>) -> Self {
        intervals.retain(|(first, last)| first <= last && *first >= 0);
        intervals.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(intervals.len());
        for (first, last) in intervals {
            match merged.last_mut() {
                Some(prev) if first <= prev.1 + 1 => prev.1 = prev.1.max(last),
                _ => merged.push((first, last)),
            }
        }
        Self(merged)
    }

    /// These intervals with `indexes` added.
    pub fn with(&self, indexes: impl IntoIterator<Item = i64>) -> Self {
        let mut all = self.0.clone();
        all.extend(indexes.into_iter().map(|ix| (ix, ix)));
        Self::normalized(all)
    }

    pub fn merge(&self, other: &Intervals) -> Self {
        let mut all = self.0.clone();
        all.extend_from_slice(&other.0);
        Self::normalized(all)
    }

    /// How many indexes the intervals hold.
    pub fn total(&self) -> i64 {
        self.0.iter().map(|(first, last)| last - first + 1).sum()
    }

    pub fn has(&self, ix: i64) -> bool {
        let at = self.0.partition_point(|(_, last)| *last < ix);
        self.0.get(at).is_some_and(|(first, _)| *first <= ix)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many indexes the two sets share.
    pub fn overlap(&self, other: &Intervals) -> i64 {
        let (mut i, mut j, mut shared) = (0, 0, 0);
        while let (Some(a), Some(b)) = (self.0.get(i), other.0.get(j)) {
            shared += (a.1.min(b.1) - a.0.max(b.0) + 1).max(0);
            if a.1 < b.1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        shared
    }

    /// The first `count` indexes below `completions` that are not in the set.
    pub fn first_missing(&self, count: usize, completions: i64) -> Vec<i64> {
        let mut missing = Vec::with_capacity(count);
        let mut candidate = 0;
        for (first, last) in self.0.iter().copied().chain([(i64::MAX, i64::MAX)]) {
            while candidate < completions && missing.len() < count && candidate < first {
                missing.push(candidate);
                candidate += 1;
            }
            if missing.len() == count || candidate >= completions {
                break;
            }
            candidate = candidate.max(last.saturating_add(1));
        }
        missing
    }
}

impl fmt::Display for Intervals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, (first, last)) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            write!(f, "{first}")?;
            if last == &(first + 1) {
                write!(f, ",{last}")?;
            } else if last > first {
                write!(f, "-{last}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compresses_as_upstream() {
        let set = Intervals::default().with([7, 1, 3, 4, 5, 9, 10]);
        assert_eq!(set.to_string(), "1,3-5,7,9,10");
        assert_eq!(set.total(), 7);
        assert!(set.has(4) && set.has(10) && !set.has(2) && !set.has(8));
        assert_eq!(Intervals::parse("1,3-5,7,9,10", 20), set);
        assert_eq!(Intervals::parse("0-2,x,4-9", 6).to_string(), "0-2,4,5");
        assert_eq!(Intervals::parse("", 3).to_string(), "");
    }

    #[test]
    fn finds_missing_indexes_and_overlaps() {
        let set = Intervals::parse("0,2-3,6", 10);
        assert_eq!(set.first_missing(3, 10), [1, 4, 5]);
        assert_eq!(set.first_missing(10, 8), [1, 4, 5, 7]);
        assert_eq!(set.overlap(&Intervals::parse("1-3,5-7", 10)), 3);
        let merged = set.merge(&Intervals::parse("1,4", 10));
        assert_eq!(merged.to_string(), "0-4,6");
    }
}
