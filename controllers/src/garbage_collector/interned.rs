//! Shared text for the few values most graph nodes repeat (apiVersion, kind, namespace): one
//! copy per distinct value, a pointer in each node. The graph holds a node per object of the
//! cluster, and an owned `String` for each of these was a heap allocation per node and field.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, LazyLock, Mutex};

/// The table of distinct values. Values no node holds any more are dropped when the table has
/// doubled since the last sweep, so namespaces that come and go do not pile up.
struct Table {
    values: HashSet<Arc<str>>,
    sweep_at: usize,
}

const FIRST_SWEEP: usize = 256;

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| {
    Mutex::new(Table {
        values: HashSet::new(),
        sweep_at: FIRST_SWEEP,
    })
});

fn intern(text: &str) -> Arc<str> {
    if text.is_empty() {
        // Cluster-scoped objects' namespace: no table entry, no lock.
        static EMPTY: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from(""));
        return EMPTY.clone();
    }
    let mut table = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(value) = table.values.get(text) {
        return value.clone();
    }
    if table.values.len() >= table.sweep_at {
        table.values.retain(|v| Arc::strong_count(v) > 1);
        table.sweep_at = (table.values.len() * 2).max(FIRST_SWEEP);
    }
    let value: Arc<str> = Arc::from(text);
    table.values.insert(value.clone());
    value
}

/// An interned string: compares, orders and hashes as its text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Interned(Arc<str>);

impl Interned {
    pub fn new(text: &str) -> Self {
        Self(intern(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Interned {
    fn default() -> Self {
        Self::new("")
    }
}

impl Deref for Interned {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Interned {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Interned {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Interned {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<&String> for Interned {
    fn from(text: &String) -> Self {
        Self::new(text)
    }
}

impl From<String> for Interned {
    fn from(text: String) -> Self {
        Self::new(&text)
    }
}

impl PartialEq<str> for Interned {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Interned {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Interned {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl fmt::Display for Interned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Interned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_share_one_copy() {
        let a = Interned::new("apps/v1-interned-test");
        let b = Interned::from(String::from("apps/v1-interned-test"));
        assert_eq!(a, b);
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, "apps/v1-interned-test");
    }

    #[test]
    fn values_no_one_holds_are_swept() {
        // More distinct values than a sweep's threshold, each dropped at once.
        for i in 0..FIRST_SWEEP * 4 {
            Interned::new(&format!("ns-swept-{i}"));
        }
        let kept = Interned::new("ns-kept");
        let table = TABLE.lock().unwrap_or_else(|p| p.into_inner());
        assert!(
            table.values.len() <= FIRST_SWEEP * 2 + 1,
            "{}",
            table.values.len()
        );
        assert!(table.values.contains("ns-kept"));
        drop(table);
        drop(kept);
    }
}
