//! Apply conflicts: fields an applier sets to a value other than the one another manager
//! owns.

use crate::path::Path;
use crate::set::Set;
use std::collections::BTreeMap;
use std::fmt;

/// One field another manager owns.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Conflict {
    /// The owner's manager identifier.
    pub manager: String,
    pub path: Path,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conflict with {:?}: {}", self.manager, self.path)
    }
}

/// Every conflict of one apply, by manager, then path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// The conflicts in upstream's order (manager, then path), whatever order they came in.
    pub fn new(mut conflicts: Vec<Conflict>) -> Self {
        conflicts.sort();
        Conflicts(conflicts)
    }

    /// One conflict per path each manager owns in its set (upstream's ConflictsFromManagers).
    pub fn from_managers(sets: &BTreeMap<String, Set>) -> Self {
        Conflicts::new(
            sets.iter()
                .flat_map(|(manager, set)| {
                    set.paths().into_iter().map(move |path| Conflict {
                        manager: manager.clone(),
                        path,
                    })
                })
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Conflict> {
        self.0.iter()
    }

    /// Every conflicting path, whoever owns it.
    pub fn to_set(&self) -> Set {
        Set::from_paths(self.0.iter().map(|c| c.path.elements()))
    }
}

impl fmt::Display for Conflicts {
    /// Upstream's text: one conflict on a line of its own, several grouped by manager.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [only] = self.0.as_slice() {
            return write!(f, "{only}");
        }
        let mut by_manager: BTreeMap<&str, Vec<&Path>> = BTreeMap::new();
        for c in &self.0 {
            by_manager.entry(&c.manager).or_default().push(&c.path);
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {manager:?}:"));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        f.write_str(&lines.join("\n"))
    }
}

impl std::error::Error for Conflicts {}
