//! Bindings and their subjects: whom a RoleBinding or ClusterRoleBinding applies to
//! (upstream's appliesTo / appliesToUser and serviceaccount.MatchesUsername) and how an
//! authorization reason names it (describeSubject, the binding describers).

use serde::Deserialize;

use super::rules::push_go_quoted;
use crate::auth::UserInfo;
use crate::object::{self, Object};
use crate::serviceaccount::claims::{username as service_account_user, USERNAME_PREFIX};

pub const USER: &str = "User";
pub const GROUP: &str = "Group";
pub const SERVICE_ACCOUNT: &str = "ServiceAccount";

/// One rbac/v1 Subject.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub api_group: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
}

/// What a subject matches, as the index files it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubjectKey<'a> {
    /// The user of this name (a service account is the user of its user name).
    User(String),
    Group(&'a str),
}

impl Subject {
    /// The namespace a ServiceAccount subject is in: its own, else the binding's.
    fn service_account_namespace<'a>(&'a self, binding_namespace: &'a str) -> &'a str {
        if self.namespace.is_empty() {
            binding_namespace
        } else {
            &self.namespace
        }
    }

    /// What this subject matches in a binding in `binding_namespace` (empty: a cluster
    /// binding); None when it matches nobody (an unknown kind, or a service account of no
    /// namespace).
    pub fn key<'a>(&'a self, binding_namespace: &'a str) -> Option<SubjectKey<'a>> {
        match self.kind.as_str() {
            USER => Some(SubjectKey::User(self.name.clone())),
            GROUP => Some(SubjectKey::Group(&self.name)),
            SERVICE_ACCOUNT => {
                let namespace = self.service_account_namespace(binding_namespace);
                (!namespace.is_empty())
                    .then(|| SubjectKey::User(service_account_user(namespace, &self.name)))
            }
            _ => None,
        }
    }

    /// Whether this subject of a binding in `binding_namespace` is `user`.
    pub fn applies_to(&self, user: &UserInfo, binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            USER => user.name == self.name,
            GROUP => user.in_group(&self.name),
            SERVICE_ACCOUNT => {
                let namespace = self.service_account_namespace(binding_namespace);
                !namespace.is_empty() && is_service_account(&user.name, namespace, &self.name)
            }
            _ => false,
        }
    }

    /// `User "jane"`, `Group "devs"`, `ServiceAccount "builder/ci"`.
    pub fn describe(&self, binding_namespace: &str) -> String {
        let mut out = String::with_capacity(self.kind.len() + self.name.len() + 24);
        self.describe_into(&mut out, binding_namespace);
        out
    }

    fn describe_into(&self, out: &mut String, binding_namespace: &str) {
        out.push_str(&self.kind);
        out.push(' ');
        if self.kind == SERVICE_ACCOUNT {
            let namespace = self.service_account_namespace(binding_namespace);
            push_go_quoted(out, &[&self.name, "/", namespace]);
        } else {
            push_go_quoted(out, &[&self.name]);
        }
    }
}

/// Whether `user` is `system:serviceaccount:<namespace>:<name>`, without building it.
fn is_service_account(user: &str, namespace: &str, name: &str) -> bool {
    user.strip_prefix(USERNAME_PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix(':'))
        == Some(name)
}

/// rbac/v1 RoleRef.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleRef {
    #[serde(default)]
    pub api_group: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

/// A RoleBinding (with a namespace) or ClusterRoleBinding (without), as RBAC reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub name: String,
    /// Empty for a ClusterRoleBinding.
    pub namespace: String,
    pub role_ref: RoleRef,
    pub subjects: Vec<Subject>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default)]
    subjects: Option<Vec<Subject>>,
    #[serde(default)]
    role_ref: RoleRef,
}

impl Binding {
    /// A binding from its stored or requested object.
    pub fn from_object(obj: &Object) -> Result<Self, serde_json::Error> {
        let wire = Wire::deserialize(obj)?;
        Ok(Self {
            name: object::name(obj).to_string(),
            namespace: object::namespace(obj).to_string(),
            role_ref: wire.role_ref,
            subjects: wire.subjects.unwrap_or_default(),
        })
    }

    /// The first of its subjects that is `user`, as upstream reports the one that applies.
    pub fn subject_for(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects
            .iter()
            .find(|s| s.applies_to(user, &self.namespace))
    }

    /// How an authorization reason names this binding granting to `subject`:
    /// `ClusterRoleBinding "x" of ClusterRole "y" to User "jane"`,
    /// `RoleBinding "x/ns" of Role "y" to Group "g"`.
    pub fn describe(&self, subject: &Subject) -> String {
        let mut out = String::with_capacity(128);
        self.describe_into(&mut out, subject);
        out
    }

    /// [`Binding::describe`] appended to `out` (a reason is built in one allocation).
    pub fn describe_into(&self, out: &mut String, subject: &Subject) {
        if self.namespace.is_empty() {
            out.push_str("ClusterRoleBinding ");
            push_go_quoted(out, &[&self.name]);
        } else {
            out.push_str("RoleBinding ");
            push_go_quoted(out, &[&self.name, "/", &self.namespace]);
        }
        out.push_str(" of ");
        out.push_str(&self.role_ref.kind);
        out.push(' ');
        push_go_quoted(out, &[&self.role_ref.name]);
        out.push_str(" to ");
        subject.describe_into(out, &self.namespace);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn subject(kind: &str, name: &str, namespace: &str) -> Subject {
        Subject {
            kind: kind.into(),
            name: name.into(),
            namespace: namespace.into(),
            ..Default::default()
        }
    }

    #[test]
    fn users_and_groups_match_by_name() {
        let jane = user("jane", &["devs", "system:authenticated"]);
        assert!(subject(USER, "jane", "").applies_to(&jane, ""));
        assert!(!subject(USER, "bob", "").applies_to(&jane, ""));
        assert!(subject(GROUP, "devs", "").applies_to(&jane, "ns"));
        assert!(!subject(GROUP, "ops", "").applies_to(&jane, "ns"));
        assert!(!subject("Robot", "jane", "").applies_to(&jane, ""));
    }

    #[test]
    fn service_accounts_match_their_user_name_in_their_namespace() {
        let sa = user(
            "system:serviceaccount:ci:builder",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:ci",
                "system:authenticated",
            ],
        );
        assert!(subject(SERVICE_ACCOUNT, "builder", "ci").applies_to(&sa, ""));
        assert!(subject(SERVICE_ACCOUNT, "builder", "ci").applies_to(&sa, "other"));
        // Without a namespace the binding's is meant; a cluster binding has none.
        assert!(subject(SERVICE_ACCOUNT, "builder", "").applies_to(&sa, "ci"));
        assert!(!subject(SERVICE_ACCOUNT, "builder", "").applies_to(&sa, "other"));
        assert!(!subject(SERVICE_ACCOUNT, "builder", "").applies_to(&sa, ""));
        assert!(!subject(SERVICE_ACCOUNT, "deployer", "ci").applies_to(&sa, ""));
        assert!(!subject(SERVICE_ACCOUNT, "builder", "c").applies_to(&sa, ""));
        // The groups every service account's token carries.
        assert!(subject(GROUP, "system:serviceaccounts", "").applies_to(&sa, ""));
        assert!(subject(GROUP, "system:serviceaccounts:ci", "").applies_to(&sa, ""));
        assert!(!subject(GROUP, "system:serviceaccounts:other", "").applies_to(&sa, ""));
        // And a User subject naming the service account's user.
        assert!(subject(USER, "system:serviceaccount:ci:builder", "").applies_to(&sa, ""));
        assert_eq!(
            subject(SERVICE_ACCOUNT, "builder", "").key("ci"),
            Some(SubjectKey::User("system:serviceaccount:ci:builder".into()))
        );
        assert_eq!(subject(SERVICE_ACCOUNT, "builder", "").key(""), None);
    }

    #[test]
    fn reasons_name_binding_role_and_subject_as_upstream() {
        let binding = Binding::from_object(&json!({
            "metadata": {"name": "read", "namespace": "ci"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "builder"}]
        }))
        .expect("binding");
        assert_eq!(
            binding.describe(&binding.subjects[0]),
            r#"RoleBinding "read/ci" of Role "reader" to ServiceAccount "builder/ci""#
        );
        let cluster = Binding::from_object(&json!({
            "metadata": {"name": "admins"},
            "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": null
        }))
        .expect("binding");
        assert!(cluster.subjects.is_empty());
        assert_eq!(
            cluster.describe(&subject(USER, "jane", "")),
            r#"ClusterRoleBinding "admins" of ClusterRole "cluster-admin" to User "jane""#
        );
    }
}
