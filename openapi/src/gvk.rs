//! Group-version-kind, as the x-kubernetes-group-version-kind extension writes it.

use serde_json::{json, Value};

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    pub fn new(group: &str, version: &str, kind: &str) -> Gvk {
        Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }
}

impl Gvk {
    pub fn to_value(&self) -> Value {
        json!({"group": self.group, "kind": self.kind, "version": self.version})
    }
}
