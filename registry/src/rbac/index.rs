//! What RBAC decides by, kept in memory: roles by name, and bindings by the users and groups
//! they name, so a request costs the bindings of its own user and groups, however many
//! bindings the cluster holds (upstream lists every binding per request).

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::Arc;

use serde::Deserialize;
use tracing::warn;

use super::rules::{go_quote, PolicyRule};
use super::subjects::{Binding, RoleRef, SubjectKey};
use super::GROUP;
use crate::auth::UserInfo;
use crate::error::{Qualified, RegistryError};
use crate::object::{self, Object};

/// The four rbac.authorization.k8s.io/v1 resources RBAC follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Role,
        Kind::ClusterRole,
        Kind::RoleBinding,
        Kind::ClusterRoleBinding,
    ];

    pub fn plural(self) -> &'static str {
        match self {
            Kind::Role => "roles",
            Kind::ClusterRole => "clusterroles",
            Kind::RoleBinding => "rolebindings",
            Kind::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    /// This kind's bit in a set of kinds.
    pub fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A role's rules, shared by every binding of it.
pub type RuleSet = Arc<[PolicyRule]>;

/// Why a binding's role could not be resolved (upstream's GetRoleReferenceRules errors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResolveError {
    RoleNotFound(String),
    ClusterRoleNotFound(String),
    UnsupportedKind(String),
}

impl ResolveError {
    /// As the authorizer reports it, worded as upstream's listers word a missing role:
    /// `role.rbac.authorization.k8s.io "x" not found`.
    pub fn lister_message(&self) -> String {
        match self {
            Self::RoleNotFound(name) => format!("role.{GROUP} {} not found", go_quote(name)),
            Self::ClusterRoleNotFound(name) => {
                format!("clusterrole.{GROUP} {} not found", go_quote(name))
            }
            Self::UnsupportedKind(kind) => unsupported(kind),
        }
    }

    /// As a write reports it, worded as the registry's Stores word a missing role:
    /// `roles.rbac.authorization.k8s.io "x" not found` (a 404), or an internal error.
    pub fn to_registry_error(&self) -> RegistryError {
        match self {
            Self::RoleNotFound(name) => {
                RegistryError::not_found(&Qualified::new(GROUP, "roles"), name)
            }
            Self::ClusterRoleNotFound(name) => {
                RegistryError::not_found(&Qualified::new(GROUP, "clusterroles"), name)
            }
            Self::UnsupportedKind(kind) => RegistryError::Internal(unsupported(kind)),
        }
    }

    /// The registry's wording as a message.
    pub fn registry_message(&self) -> String {
        match self {
            Self::UnsupportedKind(kind) => unsupported(kind),
            other => other.to_registry_error().to_string(),
        }
    }
}

fn unsupported(kind: &str) -> String {
    format!("unsupported role reference kind: {}", go_quote(kind))
}

/// One rule a user holds, and the binding that grants it.
pub struct Granted<'a> {
    pub binding: &'a Binding,
    pub rule: &'a PolicyRule,
}

/// What a visit of a user's rules meets: a rule, or a binding whose role cannot be resolved.
pub enum Visit<'a> {
    Rule(Granted<'a>),
    Error(ResolveError),
}

/// Bindings of one scope (the cluster, or one namespace), by name and by whom they name.
#[derive(Default)]
struct Bindings {
    by_name: HashMap<String, Arc<Binding>>,
    /// By user name (service accounts by theirs), then binding name: a user's bindings are
    /// visited in name order.
    users: HashMap<String, BTreeMap<String, Arc<Binding>>>,
    groups: HashMap<String, BTreeMap<String, Arc<Binding>>>,
}

impl Bindings {
    fn insert(&mut self, binding: Binding) {
        self.remove(&binding.name);
        let binding = Arc::new(binding);
        for subject in &binding.subjects {
            let by = match subject.key(&binding.namespace) {
                Some(SubjectKey::User(user)) => self.users.entry(user),
                Some(SubjectKey::Group(group)) => self.groups.entry(group.to_string()),
                None => continue,
            };
            by.or_default()
                .insert(binding.name.clone(), binding.clone());
        }
        self.by_name.insert(binding.name.clone(), binding);
    }

    fn remove(&mut self, name: &str) {
        let Some(old) = self.by_name.remove(name) else {
            return;
        };
        for subject in &old.subjects {
            let (by, key) = match subject.key(&old.namespace) {
                Some(SubjectKey::User(user)) => (&mut self.users, user),
                Some(SubjectKey::Group(group)) => (&mut self.groups, group.to_string()),
                None => continue,
            };
            if let Some(named) = by.get_mut(&key) {
                named.remove(name);
                if named.is_empty() {
                    by.remove(&key);
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    fn len(&self) -> usize {
        self.by_name.len()
    }

    /// The bindings naming `user` (by name, its groups, or as a service account), each once,
    /// in name order.
    fn matching(&self, user: &UserInfo) -> Vec<&Arc<Binding>> {
        let mut found: Vec<&Arc<Binding>> = Vec::new();
        let mut sources = 0;
        let lists = std::iter::once(self.users.get(&user.name))
            .chain(user.groups.iter().map(|g| self.groups.get(g)))
            .flatten();
        for named in lists {
            found.extend(named.values());
            sources += 1;
        }
        if sources > 1 {
            found.sort_by(|a, b| a.name.cmp(&b.name));
            found.dedup_by(|a, b| Arc::ptr_eq(a, b));
        }
        found
    }
}

#[derive(Deserialize)]
struct RoleWire {
    #[serde(default)]
    rules: Option<Vec<PolicyRule>>,
}

/// The rules of a Role or ClusterRole object.
pub fn role_rules(obj: &Object) -> Result<Vec<PolicyRule>, serde_json::Error> {
    Ok(RoleWire::deserialize(obj)?.rules.unwrap_or_default())
}

/// Every role and binding, as last listed and watched.
#[derive(Default)]
pub struct Index {
    /// By namespace, then name.
    roles: HashMap<String, HashMap<String, RuleSet>>,
    cluster_roles: HashMap<String, RuleSet>,
    cluster_bindings: Bindings,
    /// By namespace.
    role_bindings: HashMap<String, Bindings>,
}

impl Index {
    /// Adds or replaces `obj`, a `kind`.
    pub fn apply(&mut self, kind: Kind, obj: &Object) {
        let name = object::name(obj).to_string();
        let namespace = object::namespace(obj).to_string();
        match kind {
            Kind::Role | Kind::ClusterRole => {
                let rules: RuleSet = match role_rules(obj) {
                    Ok(rules) => rules.into(),
                    Err(e) => {
                        // Kept, granting nothing, so its bindings report no missing role.
                        warn!(kind = kind.plural(), %namespace, %name, error = %e, "unreadable rules");
                        Arc::from(Vec::new())
                    }
                };
                match kind {
                    Kind::Role => {
                        self.roles.entry(namespace).or_default().insert(name, rules);
                    }
                    _ => {
                        self.cluster_roles.insert(name, rules);
                    }
                }
            }
            Kind::RoleBinding | Kind::ClusterRoleBinding => {
                let mut binding = match Binding::from_object(obj) {
                    Ok(binding) => binding,
                    Err(e) => {
                        warn!(kind = kind.plural(), %namespace, %name, error = %e, "unreadable binding");
                        self.remove(kind, obj);
                        return;
                    }
                };
                if kind == Kind::ClusterRoleBinding {
                    binding.namespace.clear();
                    self.cluster_bindings.insert(binding);
                } else {
                    self.role_bindings
                        .entry(namespace)
                        .or_default()
                        .insert(binding);
                }
            }
        }
    }

    /// Forgets `obj`, a `kind`.
    pub fn remove(&mut self, kind: Kind, obj: &Object) {
        let name = object::name(obj);
        let namespace = object::namespace(obj);
        match kind {
            Kind::Role => {
                if let Some(roles) = self.roles.get_mut(namespace) {
                    roles.remove(name);
                    if roles.is_empty() {
                        self.roles.remove(namespace);
                    }
                }
            }
            Kind::ClusterRole => {
                self.cluster_roles.remove(name);
            }
            Kind::RoleBinding => {
                if let Some(bindings) = self.role_bindings.get_mut(namespace) {
                    bindings.remove(name);
                    if bindings.is_empty() {
                        self.role_bindings.remove(namespace);
                    }
                }
            }
            Kind::ClusterRoleBinding => self.cluster_bindings.remove(name),
        }
    }

    /// Replaces every `kind` with `objs` (a fresh list).
    pub fn replace<'a>(&mut self, kind: Kind, objs: impl IntoIterator<Item = &'a Object>) {
        match kind {
            Kind::Role => self.roles.clear(),
            Kind::ClusterRole => self.cluster_roles.clear(),
            Kind::RoleBinding => self.role_bindings.clear(),
            Kind::ClusterRoleBinding => self.cluster_bindings = Bindings::default(),
        }
        for obj in objs {
            self.apply(kind, obj);
        }
    }

    /// How many of `kind` are held.
    pub fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Role => self.roles.values().map(HashMap::len).sum(),
            Kind::ClusterRole => self.cluster_roles.len(),
            Kind::RoleBinding => self.role_bindings.values().map(Bindings::len).sum(),
            Kind::ClusterRoleBinding => self.cluster_bindings.len(),
        }
    }

    /// The rules a binding in `binding_namespace` (empty: a cluster binding) grants through
    /// `role_ref`.
    pub fn role_ref_rules(
        &self,
        role_ref: &RoleRef,
        binding_namespace: &str,
    ) -> Result<&RuleSet, ResolveError> {
        match role_ref.kind.as_str() {
            "Role" => self
                .roles
                .get(binding_namespace)
                .and_then(|roles| roles.get(&role_ref.name))
                .ok_or_else(|| ResolveError::RoleNotFound(role_ref.name.clone())),
            "ClusterRole" => self
                .cluster_roles
                .get(&role_ref.name)
                .ok_or_else(|| ResolveError::ClusterRoleNotFound(role_ref.name.clone())),
            other => Err(ResolveError::UnsupportedKind(other.to_string())),
        }
    }

    /// Visits every rule `user` holds in `namespace` (empty: cluster-wide rules only):
    /// ClusterRoleBindings' first, then the namespace's RoleBindings', each in binding name
    /// order, until `visit` breaks (upstream's VisitRulesFor).
    pub fn visit<'a>(
        &'a self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(Visit<'a>) -> ControlFlow<()>,
    ) {
        let namespaced = (!namespace.is_empty())
            .then(|| self.role_bindings.get(namespace))
            .flatten();
        for bindings in std::iter::once(&self.cluster_bindings).chain(namespaced) {
            for binding in bindings.matching(user) {
                let step = match self.role_ref_rules(&binding.role_ref, &binding.namespace) {
                    Ok(rules) => rules.iter().try_for_each(|rule| {
                        visit(Visit::Rule(Granted {
                            binding: binding.as_ref(),
                            rule,
                        }))
                    }),
                    Err(e) => visit(Visit::Error(e)),
                };
                if step.is_break() {
                    return;
                }
            }
        }
    }

    /// Every rule `user` holds in `namespace`, and the bindings that could not be resolved.
    pub fn rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<PolicyRule>, Vec<ResolveError>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        self.visit(user, namespace, |v| {
            match v {
                Visit::Rule(granted) => rules.push(granted.rule.clone()),
                Visit::Error(e) => errors.push(e),
            }
            ControlFlow::Continue(())
        });
        (rules, errors)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::aggregate;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn binding(
        ns: Option<&str>,
        name: &str,
        kind: &str,
        role: &str,
        subjects: serde_json::Value,
    ) -> Object {
        let mut meta = json!({"name": name});
        if let Some(ns) = ns {
            meta["namespace"] = json!(ns);
        }
        json!({"metadata": meta, "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role}, "subjects": subjects})
    }

    fn role(ns: Option<&str>, name: &str, verbs: &[&str], resources: &[&str]) -> Object {
        let mut meta = json!({"name": name});
        if let Some(ns) = ns {
            meta["namespace"] = json!(ns);
        }
        json!({"metadata": meta, "rules": [{"verbs": verbs, "apiGroups": [""], "resources": resources}]})
    }

    fn sources(index: &Index, u: &UserInfo, ns: &str) -> Vec<String> {
        let mut out = Vec::new();
        index.visit(u, ns, |v| {
            match v {
                Visit::Rule(g) => out.push(format!("{}/{}", g.binding.namespace, g.binding.name)),
                Visit::Error(e) => out.push(e.lister_message()),
            }
            ControlFlow::Continue(())
        });
        out
    }

    #[test]
    fn bindings_are_found_by_user_group_and_service_account_each_once() {
        let mut index = Index::default();
        index.apply(Kind::ClusterRole, &role(None, "view", &["get"], &["pods"]));
        index.apply(
            Kind::Role,
            &role(Some("ci"), "edit", &["update"], &["pods"]),
        );
        index.apply(
            Kind::ClusterRoleBinding,
            &binding(
                None,
                "b-both",
                "ClusterRole",
                "view",
                json!([
                    {"kind": "Group", "name": "devs"}, {"kind": "User", "name": "jane"}
                ]),
            ),
        );
        index.apply(
            Kind::ClusterRoleBinding,
            &binding(
                None,
                "a-other",
                "ClusterRole",
                "view",
                json!([{"kind": "User", "name": "bob"}]),
            ),
        );
        index.apply(
            Kind::RoleBinding,
            &binding(
                Some("ci"),
                "sa",
                "Role",
                "edit",
                json!([{"kind": "ServiceAccount", "name": "builder"}]),
            ),
        );
        index.apply(
            Kind::RoleBinding,
            &binding(
                Some("ci"),
                "everyone",
                "ClusterRole",
                "view",
                json!([{"kind": "Group", "name": "system:serviceaccounts:ci"}]),
            ),
        );
        let jane = user("jane", &["devs"]);
        assert_eq!(sources(&index, &jane, ""), ["/b-both"]);
        assert_eq!(sources(&index, &jane, "ci"), ["/b-both"]);
        let sa = user(
            "system:serviceaccount:ci:builder",
            &["system:serviceaccounts", "system:serviceaccounts:ci"],
        );
        assert_eq!(sources(&index, &sa, "ci"), ["ci/everyone", "ci/sa"]);
        // Namespaced bindings count only in their namespace.
        assert!(sources(&index, &sa, "").is_empty());
        assert!(sources(&index, &sa, "other").is_empty());
        assert_eq!(index.count(Kind::ClusterRoleBinding), 2);
        assert_eq!(index.count(Kind::RoleBinding), 2);
    }

    #[test]
    fn updates_and_deletes_move_and_drop_subjects() {
        let mut index = Index::default();
        index.apply(Kind::ClusterRole, &role(None, "view", &["get"], &["pods"]));
        let first = binding(
            None,
            "b",
            "ClusterRole",
            "view",
            json!([{"kind": "User", "name": "jane"}]),
        );
        index.apply(Kind::ClusterRoleBinding, &first);
        let jane = user("jane", &[]);
        let bob = user("bob", &[]);
        assert_eq!(sources(&index, &jane, "").len(), 1);
        index.apply(
            Kind::ClusterRoleBinding,
            &binding(
                None,
                "b",
                "ClusterRole",
                "view",
                json!([{"kind": "User", "name": "bob"}]),
            ),
        );
        assert!(sources(&index, &jane, "").is_empty());
        assert_eq!(sources(&index, &bob, "").len(), 1);
        index.remove(Kind::ClusterRoleBinding, &first);
        assert!(sources(&index, &bob, "").is_empty());
        assert_eq!(index.count(Kind::ClusterRoleBinding), 0);
        assert!(index.cluster_bindings.users.is_empty());
    }

    #[test]
    fn missing_roles_are_reported_and_grant_nothing() {
        let mut index = Index::default();
        index.apply(
            Kind::RoleBinding,
            &binding(
                Some("ns"),
                "r",
                "Role",
                "gone",
                json!([{"kind": "User", "name": "jane"}]),
            ),
        );
        index.apply(
            Kind::ClusterRoleBinding,
            &binding(
                None,
                "c",
                "ClusterRole",
                "gone-too",
                json!([{"kind": "User", "name": "jane"}]),
            ),
        );
        let (rules, errors) = index.rules_for(&user("jane", &[]), "ns");
        assert!(rules.is_empty());
        let messages: Vec<String> = errors.iter().map(ResolveError::lister_message).collect();
        assert_eq!(
            messages,
            [
                r#"clusterrole.rbac.authorization.k8s.io "gone-too" not found"#,
                r#"role.rbac.authorization.k8s.io "gone" not found"#
            ]
        );
        assert_eq!(
            aggregate(&messages),
            r#"[clusterrole.rbac.authorization.k8s.io "gone-too" not found, role.rbac.authorization.k8s.io "gone" not found]"#
        );
        assert_eq!(
            errors[1].registry_message(),
            r#"roles.rbac.authorization.k8s.io "gone" not found"#
        );
        assert_eq!(
            aggregate(&[messages[0].clone(), messages[0].clone()]),
            messages[0]
        );
    }
}
