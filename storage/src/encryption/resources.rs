//! Which resources a rule names: upstream's schema.ParseGroupResource and the lookup order of
//! its transformerFromOverrides (exact, then `*.<group>`, then `*.*`).

use std::fmt;

/// A resource as the configuration names it: `secrets` (core), `deployments.apps`,
/// `*.` (all of core), `*.apps`, `*.*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        Self {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }

    /// The resource is everything before the first dot, the group everything after it.
    pub fn parse(name: &str) -> Self {
        match name.split_once('.') {
            Some((resource, group)) => Self::new(group, resource),
            None => Self::new("", name),
        }
    }

    pub fn any_in_group(group: &str) -> Self {
        Self::new(group, "*")
    }

    pub fn any() -> Self {
        Self::new("*", "*")
    }

    /// The rules that may apply to this resource, most specific first.
    pub fn candidates(&self) -> [GroupResource; 3] {
        [self.clone(), Self::any_in_group(&self.group), Self::any()]
    }
}

impl fmt::Display for GroupResource {
    /// As the configuration spells it (upstream's grYAMLString).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.group.as_str(), self.resource.as_str()) {
            ("", "*") => f.write_str("*."),
            ("", resource) => f.write_str(resource),
            (group, resource) => write!(f, "{resource}.{group}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_upstream() {
        assert_eq!(
            GroupResource::parse("secrets"),
            GroupResource::new("", "secrets")
        );
        assert_eq!(GroupResource::parse("*."), GroupResource::new("", "*"));
        assert_eq!(
            GroupResource::parse("*.apps"),
            GroupResource::new("apps", "*")
        );
        assert_eq!(GroupResource::parse("*.*"), GroupResource::any());
        assert_eq!(
            GroupResource::parse("widgets.example.com"),
            GroupResource::new("example.com", "widgets")
        );
    }

    #[test]
    fn prints_as_the_configuration_spells_it() {
        for name in ["secrets", "*.", "*.apps", "*.*", "widgets.example.com"] {
            assert_eq!(GroupResource::parse(name).to_string(), name);
        }
    }
}
