//! A node's dependents: the uids of the nodes whose ownerReferences name it. Most objects of a
//! cluster have none (ConfigMaps, Secrets, most owners' leaves), so the set is a pointer that
//! stays null until the first dependent arrives: 8 bytes a node rather than an empty
//! `HashSet`'s 48.

use std::collections::{hash_set, HashSet};

use super::reference::Uid;

// Boxed on purpose: the box is the null pointer that an empty set costs.
#[allow(clippy::box_collection)]
#[derive(Clone, Debug, Default)]
pub struct Dependents(Option<Box<HashSet<Uid>>>);

impl Dependents {
    /// Adds `uid`; false if it was there.
    pub fn insert(&mut self, uid: Uid) -> bool {
        self.0.get_or_insert_with(Default::default).insert(uid)
    }

    /// Removes `uid`; the set goes when its last member does.
    pub fn remove(&mut self, uid: &str) -> bool {
        let Some(set) = self.0.as_mut() else {
            return false;
        };
        let removed = set.remove(uid);
        if set.is_empty() {
            self.0 = None;
        }
        removed
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.0.as_ref().is_some_and(|s| s.contains(uid))
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |s| s.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = &Uid> {
        self.0.iter().flat_map(|s| s.iter())
    }
}

impl IntoIterator for Dependents {
    type Item = Uid;
    type IntoIter = std::iter::Flatten<std::option::IntoIter<hash_set::IntoIter<Uid>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.map(|s| s.into_iter()).into_iter().flatten()
    }
}

impl<'a> IntoIterator for &'a Dependents {
    type Item = &'a Uid;
    type IntoIter = std::iter::Flatten<std::option::IntoIter<hash_set::Iter<'a, Uid>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.as_ref().map(|s| s.iter()).into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_until_the_first_dependent_and_again_after_the_last() {
        let mut deps = Dependents::default();
        assert!(deps.is_empty() && deps.0.is_none());
        assert!(deps.insert("a".into()));
        assert!(!deps.insert("a".into()));
        assert!(deps.insert("b".into()));
        assert_eq!(deps.len(), 2);
        assert!(deps.contains("a"));
        let mut seen: Vec<&str> = deps.iter().map(|u| &**u).collect();
        seen.sort();
        assert_eq!(seen, ["a", "b"]);
        assert!(deps.remove("a"));
        assert!(!deps.remove("a"));
        assert!(deps.remove("b"));
        assert!(deps.0.is_none(), "the set is freed with its last member");
        assert_eq!(deps.into_iter().count(), 0);
    }
}
