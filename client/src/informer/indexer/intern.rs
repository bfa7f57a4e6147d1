//! Interning for what the indexer keeps of each object beside its bytes (label keys and
//! values, controller uids, and the record of both per object): pods made from one template
//! share one copy.
//!
//! An entry is dropped once nothing but the table holds it, so names from objects long gone
//! do not pile up. A record may outlive its objects in a view a reader still holds: such
//! records are swept once as many releases have passed over records as the table holds.

use std::collections::HashSet;
use std::sync::Arc;

use super::labels::{Labels, Marks};

/// Shared strings and label sets, one copy of each.
#[derive(Default)]
pub(super) struct Interner {
    strings: HashSet<Arc<str>>,
    marks: HashSet<Arc<Marks>>,
    /// Releases that left a record in the table since the last sweep.
    passed_over: usize,
}

impl Interner {
    fn string(&mut self, s: &str) -> Arc<str> {
        if let Some(held) = self.strings.get(s) {
            return held.clone();
        }
        let made: Arc<str> = Arc::from(s);
        self.strings.insert(made.clone());
        made
    }

    /// The shared record of the labels `pairs` (string values only, as selectors read them;
    /// any order) and the controller's uid.
    pub(super) fn marks<'a>(
        &mut self,
        pairs: impl Iterator<Item = (&'a str, &'a str)>,
        controller_uid: Option<&str>,
    ) -> Arc<Marks> {
        let mut interned: Vec<(Arc<str>, Arc<str>)> = pairs
            .map(|(k, v)| (self.string(k), self.string(v)))
            .collect();
        interned.sort_by(|a, b| a.0.cmp(&b.0));
        let marks = Marks {
            labels: Labels::new(interned.into_boxed_slice()),
            controller_uid: controller_uid.map(|uid| self.string(uid)),
        };
        if let Some(held) = self.marks.get(&marks) {
            let held = held.clone();
            // The strings were taken for `marks`, which is not kept.
            self.release_parts(marks);
            return held;
        }
        let marks = Arc::new(marks);
        self.marks.insert(marks.clone());
        marks
    }

    /// Gives back one holder's copy of `s`.
    fn release_string(&mut self, s: Arc<str>) {
        // The table's copy and this one: no one else holds it.
        if Arc::strong_count(&s) == 2 {
            self.strings.remove(&s);
        }
    }

    /// Gives back one holder's copy of `marks`.
    pub(super) fn release_marks(&mut self, marks: Arc<Marks>) {
        if Arc::strong_count(&marks) != 2 {
            drop(marks);
            self.passed_over += 1;
            // Amortised: a sweep walks the table once per as many releases.
            if self.passed_over >= self.marks.len() {
                self.sweep();
            }
            return;
        }
        self.marks.remove(&marks);
        if let Ok(marks) = Arc::try_unwrap(marks) {
            self.release_parts(marks);
        }
    }

    fn release_parts(&mut self, marks: Marks) {
        // One at a time, each dropped before the next is looked at: a string held twice here
        // (a value equal to a key, a uid also a label) goes with its last copy.
        for (key, value) in marks.labels.into_pairs().into_vec() {
            self.release_string(key);
            self.release_string(value);
        }
        if let Some(uid) = marks.controller_uid {
            self.release_string(uid);
        }
    }

    /// Drops the records only the table holds: their objects went while views held them.
    fn sweep(&mut self) {
        self.passed_over = 0;
        let orphaned: Vec<Arc<Marks>> = self
            .marks
            .iter()
            .filter(|m| Arc::strong_count(m) == 1)
            .cloned()
            .collect();
        for marks in orphaned {
            self.marks.remove(&marks);
            if let Ok(marks) = Arc::try_unwrap(marks) {
                self.release_parts(marks);
            }
        }
    }

    pub(super) fn clear(&mut self) {
        self.passed_over = 0;
        self.strings.clear();
        self.marks.clear();
    }

    #[cfg(test)]
    pub(super) fn sizes(&self) -> (usize, usize) {
        (self.strings.len(), self.marks.len())
    }
}
