//! Which names a definition may use (upstream's NamingConditionController): a name another
//! definition of the same group has accepted, or a built-in resource of the group uses, is
//! refused; names already accepted stay accepted. Once its names are accepted a definition
//! is Established and served.

use apiextensions::Definition;
use registry::types::ConditionStatus;
use registry::ResourceInfo;
use serde_json::{json, Value};

/// The names and NamesAccepted condition a definition should have.
pub struct Naming {
    pub accepted: Value,
    pub condition: (ConditionStatus, String, String),
}

/// What else holds names in a group: other definitions' accepted names and built-ins.
pub struct Taken<'a> {
    pub others: &'a [Definition],
    pub builtin: &'a [std::sync::Arc<ResourceInfo>],
}

impl Taken<'_> {
    fn resource_name(&self, crd: &Definition, name: &str) -> bool {
        let group = &crd.spec.group;
        let others = self
            .others
            .iter()
            .filter(|o| o.spec.group == *group && o.metadata.name != crd.metadata.name);
        others.into_iter().any(|o| {
            let n = &o.status.accepted_names;
            n.plural == name || n.singular == name || n.short_names.iter().any(|s| s == name)
        }) || self.builtin.iter().filter(|r| r.group == *group).any(|r| {
            r.plural == name || r.singular == name || r.short_names.iter().any(|s| s == name)
        })
    }

    fn kind(&self, crd: &Definition, kind: &str) -> bool {
        let group = &crd.spec.group;
        self.others
            .iter()
            .filter(|o| o.spec.group == *group && o.metadata.name != crd.metadata.name)
            .any(|o| {
                o.status.accepted_names.kind == kind || o.status.accepted_names.list_kind == kind
            })
            || self
                .builtin
                .iter()
                .filter(|r| r.group == *group)
                .any(|r| r.kind == kind || r.list_kind == kind)
    }
}

/// Upstream's calculateNamesAndConditions, in short: each requested name is taken unless
/// someone else holds it; on any conflict the previously accepted names stay.
pub fn names(crd: &Definition, taken: &Taken<'_>) -> Naming {
    let requested = &crd.spec.names;
    let accepted = &crd.status.accepted_names;
    let mut conflict: Option<(String, String)> = None;
    let mut check_name = |name: &str, reason: &str| {
        if !name.is_empty() && conflict.is_none() && taken.resource_name(crd, name) {
            conflict = Some((reason.into(), format!("{name:?} is already in use")));
        }
    };
    check_name(&requested.plural, "PluralConflict");
    check_name(&requested.singular, "SingularConflict");
    for short in &requested.short_names {
        check_name(short, "ShortNamesConflict");
    }
    let mut check_kind = |kind: &str, reason: &str| {
        if !kind.is_empty() && conflict.is_none() && taken.kind(crd, kind) {
            conflict = Some((reason.into(), format!("{kind:?} is already in use")));
        }
    };
    check_kind(&requested.kind, "KindConflict");
    check_kind(&requested.list_kind, "ListKindConflict");
    match conflict {
        Some((reason, message)) => Naming {
            accepted: names_value(accepted),
            condition: (ConditionStatus::False, reason, message),
        },
        None => Naming {
            accepted: names_value(requested),
            condition: (
                ConditionStatus::True,
                "NoConflicts".into(),
                "no conflicts found".into(),
            ),
        },
    }
}

/// As the API shows names: empty optional lists left out.
fn names_value(n: &apiextensions::definition::Names) -> Value {
    let mut v = json!({"plural": n.plural, "kind": n.kind});
    if !n.singular.is_empty() {
        v["singular"] = json!(n.singular);
    }
    if !n.short_names.is_empty() {
        v["shortNames"] = json!(n.short_names);
    }
    if !n.list_kind.is_empty() {
        v["listKind"] = json!(n.list_kind);
    }
    if !n.categories.is_empty() {
        v["categories"] = json!(n.categories);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, accepted: bool) -> Definition {
        let names = json!({"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind, "listKind": format!("{kind}List")});
        let accepted = if accepted {
            names.clone()
        } else {
            json!({"plural": "", "kind": ""})
        };
        Definition::parse(&json!({
            "metadata": {"name": name},
            "spec": {"group": "example.com", "names": names, "scope": "Namespaced"},
            "status": {"acceptedNames": accepted},
        }))
    }

    #[test]
    fn free_names_are_accepted() {
        let a = crd("widgets.example.com", "widgets", "Widget", false);
        let naming = names(
            &a,
            &Taken {
                others: &[],
                builtin: &[],
            },
        );
        assert_eq!(naming.condition.0, "True");
        assert_eq!(naming.accepted["plural"], "widgets");
        assert_eq!(naming.accepted["listKind"], "WidgetList");
    }

    #[test]
    fn names_another_definition_accepted_conflict() {
        let held = crd("widgets.example.com", "widgets", "Widget", true);
        let b = crd("widgets2.example.com", "gadgets", "Widget", false);
        let naming = names(
            &b,
            &Taken {
                others: std::slice::from_ref(&held),
                builtin: &[],
            },
        );
        assert_eq!(naming.condition.0, "False");
        assert_eq!(naming.condition.1, "KindConflict");
        assert_eq!(naming.accepted["kind"], "");
        // A definition does not conflict with itself.
        let naming = names(
            &held,
            &Taken {
                others: std::slice::from_ref(&held),
                builtin: &[],
            },
        );
        assert_eq!(naming.condition.0, "True");
    }
}
