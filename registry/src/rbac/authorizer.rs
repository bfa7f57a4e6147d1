//! The RBAC authorizer (upstream's plugin/pkg/auth/authorizer/rbac with the DefaultRuleResolver
//! of pkg/registry/rbac/validation): a request is allowed when a rule of a role bound to its
//! user, one of the user's groups, or its service account grants it; otherwise RBAC has no
//! opinion (it never denies).

use std::ops::ControlFlow;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::covers;
use super::index::{Index, Kind, ResolveError, Visit};
use super::rules::{go_quote_list, PolicyRule};
use super::GROUP;
use crate::auth::{
    Attributes, Authorizer, NonResourceRule, ResourceRule, Rules, UserInfo, Verdict,
};
use crate::error::aggregate;
use crate::error::RegistryError;
use crate::resources::Registry;
use crate::store::Store;

pub struct RbacAuthorizer {
    pub(super) index: RwLock<Index>,
    /// The Stores of Role, ClusterRole, RoleBinding, ClusterRoleBinding, in [`Kind::ALL`]
    /// order.
    pub(super) stores: [Arc<Store>; 4],
    /// The kinds (bits) whose first list is indexed.
    pub(super) synced: tokio::sync::watch::Sender<u8>,
}

impl RbacAuthorizer {
    /// An authorizer over the registry's rbac.authorization.k8s.io/v1 Stores, knowing
    /// nothing until [`RbacAuthorizer::run`] has listed them.
    pub fn new(registry: &Registry) -> Result<Arc<Self>, super::RbacError> {
        let store = |kind: Kind| {
            registry.store(GROUP, "v1", kind.plural()).ok_or_else(|| {
                RegistryError::Internal(format!(
                    "RBAC needs the {}.{GROUP} resource, which is not served",
                    kind.plural()
                ))
            })
        };
        Ok(Arc::new(Self {
            index: RwLock::default(),
            stores: [
                store(Kind::Role)?,
                store(Kind::ClusterRole)?,
                store(Kind::RoleBinding)?,
                store(Kind::ClusterRoleBinding)?,
            ],
            synced: tokio::sync::watch::Sender::new(0),
        }))
    }

    pub(super) fn read(&self) -> RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn write(&self) -> RwLockWriteGuard<'_, Index> {
        self.index.write().unwrap_or_else(|p| p.into_inner())
    }

    /// How many of `kind` are indexed.
    pub fn count(&self, kind: Kind) -> usize {
        self.read().count(kind)
    }

    /// Every rule `user` holds through RBAC in `namespace`, and the bindings that could not
    /// be resolved (upstream's RulesFor).
    pub fn policy_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<PolicyRule>, Vec<ResolveError>) {
        self.read().rules_for(user, namespace)
    }

    /// The rules a binding in `binding_namespace` grants through its roleRef.
    pub fn role_ref_rules(
        &self,
        role_ref: &super::subjects::RoleRef,
        binding_namespace: &str,
    ) -> Result<Vec<PolicyRule>, ResolveError> {
        self.read()
            .role_ref_rules(role_ref, binding_namespace)
            .map(|rules| rules.to_vec())
    }

    /// Upstream's ConfirmNoEscalation: fine when `user`'s own rules in `namespace` cover every
    /// one of `rules`; otherwise the message of the refusal, listing what is missing.
    pub fn confirm_no_escalation(
        &self,
        user: &UserInfo,
        namespace: &str,
        rules: &[PolicyRule],
    ) -> Result<(), String> {
        let (owned, errors) = self.policy_rules_for(user, namespace);
        let (covered, missing) = covers::covers(&owned, rules);
        if covered {
            return Ok(());
        }
        let mut described: Vec<String> = covers::compact(missing)
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        described.sort();
        described.dedup();
        let mut message = format!(
            "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
            super::rules::go_quote(&user.name),
            go_quote_list(&user.groups),
            described.join("\n")
        );
        if !errors.is_empty() {
            let errors: Vec<String> = errors.iter().map(ResolveError::registry_message).collect();
            message.push_str(&format!("; resolution errors: [{}]", aggregate(&errors)));
        }
        Err(message)
    }
}

impl Authorizer for RbacAuthorizer {
    fn authorize(&self, attributes: &Attributes) -> Verdict {
        let index = self.read();
        let mut allowed = None;
        let mut errors = Vec::new();
        index.visit(
            &attributes.user,
            &attributes.namespace,
            |visit| match visit {
                Visit::Rule(granted) if granted.rule.allows(attributes) => {
                    allowed = Some(granted.binding);
                    ControlFlow::Break(())
                }
                Visit::Rule(_) => ControlFlow::Continue(()),
                Visit::Error(e) => {
                    errors.push(e.lister_message());
                    ControlFlow::Continue(())
                }
            },
        );
        if let Some(binding) = allowed {
            if let Some(subject) = binding.subject_for(&attributes.user) {
                let mut reason = String::with_capacity(160);
                reason.push_str("RBAC: allowed by ");
                binding.describe_into(&mut reason, subject);
                return Verdict::allow(reason);
            }
        }
        match errors.is_empty() {
            true => Verdict::no_opinion(),
            false => Verdict {
                decision: crate::auth::Decision::NoOpinion,
                reason: format!("RBAC: {}", aggregate(&errors)),
            },
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let (rules, errors) = self.policy_rules_for(user, namespace);
        let mut out = Rules::default();
        for rule in rules {
            if !rule.resources.is_empty() {
                out.resource_rules.push(ResourceRule {
                    verbs: rule.verbs.clone(),
                    api_groups: rule.api_groups.clone(),
                    resources: rule.resources.clone(),
                    resource_names: rule.resource_names.clone(),
                });
            }
            if !rule.non_resource_urls.is_empty() {
                out.non_resource_rules.push(NonResourceRule {
                    verbs: rule.verbs,
                    non_resource_urls: rule.non_resource_urls,
                });
            }
        }
        let errors: Vec<String> = errors.iter().map(ResolveError::lister_message).collect();
        out.evaluation_error = aggregate(&errors);
        out
    }
}
