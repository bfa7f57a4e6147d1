//! A set of field paths, stored as a trie: at each node, the path elements that end a member
//! path here, and the subtrees under path elements that lead further down.

use crate::path::{Path, PathElement};
use std::collections::{BTreeMap, BTreeSet};

/// A set of paths. A path can be a member and also the prefix of other members (a list item
/// owned as a whole and some of its fields), as in upstream's `fieldpath.Set`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    // Never holds an empty subtree, so structural equality is set equality.
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    pub fn new() -> Self {
        Set::default()
    }

    pub fn from_paths<I, P>(paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<[PathElement]>,
    {
        let mut s = Set::new();
        for p in paths {
            s.insert(p.as_ref());
        }
        s
    }

    /// Adds a path; the empty path names no field and is ignored, as upstream.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                if !self.members.contains(last) {
                    self.members.insert(last.clone());
                }
            }
            // Clones the element only when the subtree is new: inserts are the hot path of
            // building a set from a value.
            [first, rest @ ..] => match self.children.get_mut(first) {
                Some(child) => child.insert(rest),
                None => {
                    let mut child = Set::new();
                    child.insert(rest);
                    self.children.insert(first.clone(), child);
                }
            },
        }
    }

    /// Makes `pe` a member at this level.
    pub fn insert_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    /// Puts the paths of `subtree` below `pe` (merging with what is there): building a set
    /// level by level without re-inserting every full path.
    pub fn attach(&mut self, pe: PathElement, subtree: Set) {
        if subtree.is_empty() {
            return;
        }
        match self.children.get_mut(&pe) {
            Some(mine) => mine.union_with(&subtree),
            None => {
                self.children.insert(pe, subtree);
            }
        }
    }

    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// True when some member starts with `prefix` (including `prefix` itself).
    pub fn has_prefix(&self, prefix: &[PathElement]) -> bool {
        match prefix {
            [] => !self.is_empty(),
            [last] => self.members.contains(last) || self.children.contains_key(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has_prefix(rest)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// The number of member paths.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(Set::len).sum::<usize>()
    }

    /// The path elements that are members at this level.
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The subtrees below this level, by the element that leads to them.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter()
    }

    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe)
    }

    pub fn is_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// Adds every path of `other`, in place: unions of many sets without a copy per step.
    pub fn union_with(&mut self, other: &Set) {
        self.members.extend(other.members.iter().cloned());
        for (pe, sub) in &other.children {
            match self.children.get_mut(pe) {
                Some(mine) => mine.union_with(sub),
                None => {
                    self.children.insert(pe.clone(), sub.clone());
                }
            }
        }
    }

    pub fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, mine)| {
                let both = mine.intersection(other.children.get(pe)?);
                (!both.is_empty()).then(|| (pe.clone(), both))
            })
            .collect();
        Set { members, children }
    }

    /// Paths in `self` and not in `other`. A member of `other` does not remove the paths below
    /// it (see `recursive_difference` for that).
    pub fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, mine)| {
                let rest = match other.children.get(pe) {
                    Some(theirs) => mine.difference(theirs),
                    None => mine.clone(),
                };
                (!rest.is_empty()).then(|| (pe.clone(), rest))
            })
            .collect();
        Set { members, children }
    }

    /// `difference` in place: removes the paths of `other`, allocating nothing where the
    /// two do not meet (the common case of taking a few fields from a manager).
    pub fn subtract(&mut self, other: &Set) {
        if other.is_empty() {
            return;
        }
        for pe in &other.members {
            self.members.remove(pe);
        }
        for (pe, theirs) in &other.children {
            if let Some(mine) = self.children.get_mut(pe) {
                mine.subtract(theirs);
                if mine.is_empty() {
                    self.children.remove(pe);
                }
            }
        }
    }

    /// Like `difference`, but a member of `other` also removes every path below it.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| !other.members.contains(pe))
            .filter_map(|(pe, mine)| {
                let rest = match other.children.get(pe) {
                    Some(theirs) => mine.recursive_difference(theirs),
                    None => mine.clone(),
                };
                (!rest.is_empty()).then(|| (pe.clone(), rest))
            })
            .collect();
        Set { members, children }
    }

    /// Every member path, in order: at each level the members, then the subtrees.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out, false);
        out
    }

    /// The members that are not a prefix of another member.
    pub fn leaves(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out, true);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>, leaves: bool) {
        for pe in &self.members {
            if leaves && self.children.contains_key(pe) {
                continue;
            }
            prefix.push(pe.clone());
            out.push(Path(prefix.clone()));
            prefix.pop();
        }
        for (pe, sub) in &self.children {
            prefix.push(pe.clone());
            sub.collect_paths(prefix, out, leaves);
            prefix.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::field(name)
    }

    fn sample() -> Set {
        let nginx = PathElement::key([("name", json!("nginx"))]);
        Set::from_paths([
            vec![f("metadata"), f("name")],
            vec![f("spec"), f("replicas")],
            vec![f("spec"), f("containers"), nginx.clone()],
            vec![f("spec"), f("containers"), nginx, f("image")],
        ])
    }

    #[test]
    fn insert_and_has() {
        let s = sample();
        assert!(s.has(&[f("spec"), f("replicas")]));
        assert!(!s.has(&[f("spec")]), "a prefix is not a member by itself");
        assert!(s.has_prefix(&[f("spec")]));
        assert!(!s.has(&[]));
        assert_eq!(s.len(), 4);
    }

    #[test]
    fn empty_path_is_ignored() {
        let mut s = Set::new();
        s.insert(&[]);
        assert!(s.is_empty());
    }

    #[test]
    fn union_intersection_difference() {
        let a = Set::from_paths([vec![f("a")], vec![f("b"), f("c")], vec![f("b"), f("d")]]);
        let b = Set::from_paths([vec![f("b"), f("c")], vec![f("e")]]);
        assert_eq!(a.union(&b).len(), 4);
        assert_eq!(a.intersection(&b), Set::from_paths([vec![f("b"), f("c")]]));
        assert_eq!(
            a.difference(&b),
            Set::from_paths([vec![f("a")], vec![f("b"), f("d")]])
        );
        assert!(a.difference(&a).is_empty());
        assert_eq!(a.difference(&a), Set::new(), "empty subtrees are pruned");
    }

    #[test]
    fn subtract_is_difference_in_place() {
        let a = Set::from_paths([vec![f("a")], vec![f("b"), f("c")], vec![f("b"), f("d")]]);
        for b in [
            Set::from_paths([vec![f("b"), f("c")], vec![f("e")]]),
            Set::from_paths([vec![f("b"), f("c")], vec![f("b"), f("d")]]),
            Set::from_paths([vec![f("b")]]),
            Set::new(),
        ] {
            let mut c = a.clone();
            c.subtract(&b);
            assert_eq!(c, a.difference(&b), "{b:?}");
        }
    }

    #[test]
    fn difference_keeps_children_of_a_removed_member_but_recursive_does_not() {
        let a = Set::from_paths([vec![f("x")], vec![f("x"), f("y")]]);
        let b = Set::from_paths([vec![f("x")]]);
        assert_eq!(a.difference(&b), Set::from_paths([vec![f("x"), f("y")]]));
        assert!(a.recursive_difference(&b).is_empty());
    }

    #[test]
    fn paths_and_leaves() {
        let s = sample();
        let all: Vec<String> = s.paths().iter().map(Path::to_string).collect();
        assert_eq!(
            all,
            vec![
                ".metadata.name",
                ".spec.replicas",
                r#".spec.containers[name="nginx"]"#,
                r#".spec.containers[name="nginx"].image"#,
            ]
        );
        let leaves: Vec<String> = s.leaves().iter().map(Path::to_string).collect();
        assert_eq!(leaves.len(), 3);
        assert!(!leaves.contains(&r#".spec.containers[name="nginx"]"#.to_string()));
    }
}
