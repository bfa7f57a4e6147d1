//! Who a request acts as and what it asks to do (upstream's user.Info and
//! authorizer.Attributes), and the authorizer interface every mode implements. HTTP knows how a
//! request becomes a user and attributes; the registry only judges them.

use std::collections::BTreeMap;
use std::sync::Arc;

pub const ANONYMOUS: &str = "system:anonymous";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const AUTHENTICATED: &str = "system:authenticated";
pub const APISERVER_USER: &str = "system:apiserver";
pub const MASTERS: &str = "system:masters";
/// upstream's user.CredentialIDKey.
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// upstream's user.Info.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn anonymous() -> Self {
        Self {
            name: ANONYMOUS.into(),
            groups: vec![UNAUTHENTICATED.into()],
            ..Default::default()
        }
    }

    /// The trusted local (plain HTTP, loopback) port's user, and the in-process components'.
    pub fn loopback() -> Self {
        Self {
            name: APISERVER_USER.into(),
            groups: vec![MASTERS.into(), AUTHENTICATED.into()],
            ..Default::default()
        }
    }

    pub fn is_anonymous(&self) -> bool {
        self.name == ANONYMOUS
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// upstream's authorizer.Attributes: one request, as an authorizer judges it. Verbs are
/// upstream's lower-case API verbs (`get`, `list`, `watch`, `create`, `update`, `patch`,
/// `delete`, `deletecollection`, and `impersonate`, `escalate`, `bind`, `use`...) for resource
/// requests, and the lower-cased HTTP method for non-resource requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub user: Arc<UserInfo>,
    pub verb: String,
    /// True for `/api/...` and `/apis/...` requests naming a resource; false for every other
    /// path (`/healthz`, `/version`, `/apis`, discovery of a group), judged by `path`.
    pub resource_request: bool,
    pub namespace: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The request's path (non-resource requests are judged by it).
    pub path: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
    /// This authorizer has nothing to say; the next one in the chain decides.
    NoOpinion,
}

/// An authorizer's answer and why (upstream's reason string, shown in 403 messages and
/// SubjectAccessReview status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    pub reason: String,
}

impl Verdict {
    pub fn allow(reason: impl Into<String>) -> Self {
        Self {
            decision: Decision::Allow,
            reason: reason.into(),
        }
    }

    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            decision: Decision::Deny,
            reason: reason.into(),
        }
    }

    pub fn no_opinion() -> Self {
        Self {
            decision: Decision::NoOpinion,
            reason: String::new(),
        }
    }

    pub fn allowed(&self) -> bool {
        self.decision == Decision::Allow
    }
}

/// upstream's rbacv1.PolicyRule as SelfSubjectRulesReview reports rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

/// The rules a user has in a namespace (upstream's authorizer.RuleResolver answer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    pub resource_rules: Vec<ResourceRule>,
    pub non_resource_rules: Vec<NonResourceRule>,
    /// Some authorizer in the chain cannot list its rules.
    pub incomplete: bool,
    pub evaluation_error: String,
}

/// upstream's authorizer.Authorizer and authorizer.RuleResolver in one.
pub trait Authorizer: Send + Sync {
    fn authorize(&self, attributes: &Attributes) -> Verdict;

    /// The rules `user` has in `namespace` (empty: cluster-wide rules only).
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules;
}

/// `--authorization-mode=AlwaysAllow`.
pub struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _: &Attributes) -> Verdict {
        Verdict::allow("")
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> Rules {
        Rules {
            resource_rules: vec![ResourceRule {
                verbs: vec!["*".into()],
                api_groups: vec!["*".into()],
                resources: vec!["*".into()],
                resource_names: Vec::new(),
            }],
            non_resource_rules: vec![NonResourceRule {
                verbs: vec!["*".into()],
                non_resource_urls: vec!["*".into()],
            }],
            incomplete: false,
            evaluation_error: String::new(),
        }
    }
}

/// `--authorization-mode=AlwaysDeny`: as upstream's, it allows nothing but has no opinion
/// (a later mode could still allow), and grants no rules.
pub struct AlwaysDeny;

impl Authorizer for AlwaysDeny {
    fn authorize(&self, _: &Attributes) -> Verdict {
        Verdict {
            decision: Decision::NoOpinion,
            reason: "Everything is forbidden.".into(),
        }
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> Rules {
        Rules::default()
    }
}

/// upstream's privileged-group authorizer, always first: `system:masters` may do anything,
/// whatever the configured modes say.
pub struct PrivilegedGroups;

impl Authorizer for PrivilegedGroups {
    fn authorize(&self, attributes: &Attributes) -> Verdict {
        if attributes.user.in_group(MASTERS) {
            Verdict::allow("")
        } else {
            Verdict::no_opinion()
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        if user.in_group(MASTERS) {
            AlwaysAllow.rules_for(user, namespace)
        } else {
            Rules::default()
        }
    }
}

/// The modes of `--authorization-mode`, in order: the first that allows or denies decides
/// (upstream's union authorizer). With none deciding, the request is denied with every
/// reason given.
#[derive(Clone, Default)]
pub struct Chain {
    pub authorizers: Vec<Arc<dyn Authorizer>>,
}

impl Chain {
    pub fn new(authorizers: Vec<Arc<dyn Authorizer>>) -> Self {
        Self { authorizers }
    }
}

impl Authorizer for Chain {
    fn authorize(&self, attributes: &Attributes) -> Verdict {
        let mut reasons = Vec::new();
        for authorizer in &self.authorizers {
            let verdict = authorizer.authorize(attributes);
            match verdict.decision {
                Decision::Allow | Decision::Deny => return verdict,
                Decision::NoOpinion if !verdict.reason.is_empty() => reasons.push(verdict.reason),
                Decision::NoOpinion => {}
            }
        }
        Verdict {
            decision: Decision::NoOpinion,
            reason: reasons.join("\n"),
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let mut all = Rules::default();
        let mut errors = Vec::new();
        for authorizer in &self.authorizers {
            let rules = authorizer.rules_for(user, namespace);
            all.resource_rules.extend(rules.resource_rules);
            all.non_resource_rules.extend(rules.non_resource_rules);
            all.incomplete |= rules.incomplete;
            if !rules.evaluation_error.is_empty() {
                errors.push(rules.evaluation_error);
            }
        }
        all.evaluation_error = crate::error::aggregate(&errors);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attributes(user: UserInfo) -> Attributes {
        Attributes {
            user: Arc::new(user),
            verb: "get".into(),
            resource_request: true,
            api_version: "v1".into(),
            resource: "pods".into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_first_deciding_mode_wins_and_no_opinion_is_not_allowed() {
        let chain = Chain::new(vec![Arc::new(PrivilegedGroups), Arc::new(AlwaysDeny)]);
        assert!(chain.authorize(&attributes(UserInfo::loopback())).allowed());
        let jane = UserInfo {
            name: "jane".into(),
            ..Default::default()
        };
        let denied = chain.authorize(&attributes(jane.clone()));
        assert_eq!(
            (denied.decision, denied.reason.as_str()),
            (Decision::NoOpinion, "Everything is forbidden.")
        );
        assert!(!denied.allowed());
        let undecided = Chain::new(vec![Arc::new(PrivilegedGroups)]);
        assert_eq!(
            undecided.authorize(&attributes(jane)).decision,
            Decision::NoOpinion
        );
    }
}
