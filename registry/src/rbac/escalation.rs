//! Escalation prevention on writes of roles and bindings (upstream's policybased storages of
//! the four RBAC resources and pkg/registry/rbac/escalation_check.go): nobody grants, through
//! a role or a binding, a permission they do not hold themselves, unless they may `escalate`
//! roles or `bind` the role in question.

use std::sync::Arc;

use serde_json::Value;
use tracing::warn;

use super::authorizer::RbacAuthorizer;
use super::index::{role_rules, Kind};
use super::rules::{PolicyRule, ALL};
use super::subjects::{Binding, RoleRef};
use super::GROUP;
use crate::auth::{Attributes, Authorizer, UserInfo, MASTERS};
use crate::error::{Qualified, RegistryError, Result};
use crate::object::{self, Object};
use crate::resources::Registry;
use crate::store::hooks::{GuardedWrite, WriteGuard};

/// Guards writes of the four RBAC resources from now on: `rbac` knows the writer's rules,
/// `authorizer` (the whole chain) whether the writer may `escalate` or `bind`.
pub fn install_escalation_checks(
    registry: &Registry,
    rbac: Arc<RbacAuthorizer>,
    authorizer: Arc<dyn Authorizer>,
) {
    for kind in Kind::ALL {
        let Some(store) = registry.store(GROUP, "v1", kind.plural()) else {
            warn!(
                resource = kind.plural(),
                "not served; its writes are not checked for escalation"
            );
            continue;
        };
        let installed = store.set_guard(Arc::new(EscalationCheck {
            kind,
            rbac: rbac.clone(),
            authorizer: authorizer.clone(),
        }));
        if !installed {
            warn!(
                resource = kind.plural(),
                "escalation checks were already installed; the first stay"
            );
        }
    }
}

/// The escalation check of one RBAC resource.
pub struct EscalationCheck {
    kind: Kind,
    rbac: Arc<RbacAuthorizer>,
    authorizer: Arc<dyn Authorizer>,
}

impl WriteGuard for EscalationCheck {
    fn admit(&self, write: &GuardedWrite<'_>) -> Result<()> {
        // In-process writers, and system:masters (the loopback user), may grant anything.
        let Some(user) = write.user else {
            return Ok(());
        };
        if user.in_group(MASTERS) {
            return Ok(());
        }
        if write
            .old
            .is_some_and(|old| only_gc_fields_change(write.new, old))
        {
            return Ok(());
        }
        let namespace = write.namespace.unwrap_or_default();
        match self.kind {
            Kind::Role | Kind::ClusterRole => self.check_role(write, user, namespace),
            Kind::RoleBinding | Kind::ClusterRoleBinding => {
                self.check_binding(write.new, user, namespace)
            }
        }
    }
}

impl EscalationCheck {
    /// A role may hold what its writer holds, anything if the writer may `escalate` it; an
    /// aggregationRule, which can gather anything, needs every permission there is.
    fn check_role(
        &self,
        write: &GuardedWrite<'_>,
        user: &Arc<UserInfo>,
        namespace: &str,
    ) -> Result<()> {
        if self.authorized(
            user,
            "escalate",
            namespace,
            GROUP,
            self.kind.plural(),
            write.path_name,
        ) {
            return Ok(());
        }
        let name = object::name(write.new);
        let rules = role_rules(write.new)
            .map_err(|e| RegistryError::BadRequest(format!("reading rules: {e}")))?;
        self.rbac
            .confirm_no_escalation(user, namespace, &rules)
            .map_err(|message| self.forbidden(name, message))?;
        let aggregating =
            has_aggregation_rule(write.new) || write.old.is_some_and(has_aggregation_rule);
        if self.kind == Kind::ClusterRole && aggregating {
            self.rbac
                .confirm_no_escalation(user, "", &full_authority())
                .map_err(|_| {
                    self.forbidden(
                        name,
                        "must have cluster-admin privileges to use the aggregationRule".into(),
                    )
                })?;
        }
        Ok(())
    }

    /// A binding may grant its role if its writer may `bind` that role here, or holds every
    /// permission of it already.
    fn check_binding(&self, new: &Object, user: &Arc<UserInfo>, namespace: &str) -> Result<()> {
        let binding = Binding::from_object(new)
            .map_err(|e| RegistryError::BadRequest(format!("reading the binding: {e}")))?;
        if self.may_bind(user, &binding.role_ref, namespace) {
            return Ok(());
        }
        let rules = self
            .rbac
            .role_ref_rules(&binding.role_ref, namespace)
            .map_err(|e| e.to_registry_error())?;
        self.rbac
            .confirm_no_escalation(user, namespace, &rules)
            .map_err(|message| self.forbidden(&binding.name, message))
    }

    /// Upstream's BindingAuthorized: `bind` on the referenced role, in the binding's
    /// namespace (none for a ClusterRoleBinding).
    fn may_bind(&self, user: &Arc<UserInfo>, role_ref: &RoleRef, namespace: &str) -> bool {
        let resource = match role_ref.kind.as_str() {
            "ClusterRole" => "clusterroles",
            "Role" => "roles",
            _ => return false,
        };
        self.authorized(
            user,
            "bind",
            namespace,
            &role_ref.api_group,
            resource,
            &role_ref.name,
        )
    }

    fn authorized(
        &self,
        user: &Arc<UserInfo>,
        verb: &str,
        namespace: &str,
        group: &str,
        resource: &str,
        name: &str,
    ) -> bool {
        self.authorizer
            .authorize(&Attributes {
                user: user.clone(),
                verb: verb.into(),
                resource_request: true,
                namespace: namespace.into(),
                api_group: group.into(),
                api_version: ALL.into(),
                resource: resource.into(),
                subresource: String::new(),
                name: name.into(),
                path: String::new(),
            })
            .allowed()
    }

    fn forbidden(&self, name: &str, message: String) -> RegistryError {
        RegistryError::forbidden(&Qualified::new(GROUP, self.kind.plural()), name, message)
    }
}

/// Every permission there is: `*` on `*.*`, and every URL.
fn full_authority() -> Vec<PolicyRule> {
    let all = || vec![ALL.to_string()];
    vec![
        PolicyRule {
            verbs: all(),
            api_groups: all(),
            resources: all(),
            ..Default::default()
        },
        PolicyRule {
            verbs: all(),
            non_resource_urls: all(),
            ..Default::default()
        },
    ]
}

fn has_aggregation_rule(obj: &Object) -> bool {
    obj.pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .is_some_and(|selectors| !selectors.is_empty())
}

/// The metadata the garbage collector (and the server) changes on its way to deleting an
/// object: an update changing only these grants nothing new (upstream's
/// IsOnlyMutatingGCFields, with the server-kept versions).
const GC_FIELDS: [&str; 7] = [
    "ownerReferences",
    "finalizers",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "resourceVersion",
    "managedFields",
];

fn only_gc_fields_change(new: &Object, old: &Object) -> bool {
    let mut stomped = new.clone();
    let meta = object::meta_mut(&mut stomped);
    for field in GC_FIELDS {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(value) => meta.insert(field.to_string(), value.clone()),
            None => meta.remove(field),
        };
    }
    &stomped == old
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn gc_field_changes_are_told_apart_from_grants() {
        let old = json!({"metadata": {"name": "r", "resourceVersion": "5"}, "rules": [{"verbs": ["get"]}]});
        let finalized = json!({"metadata": {"name": "r", "finalizers": ["x"], "ownerReferences": []}, "rules": [{"verbs": ["get"]}]});
        assert!(only_gc_fields_change(&finalized, &old));
        let widened =
            json!({"metadata": {"name": "r", "finalizers": ["x"]}, "rules": [{"verbs": ["*"]}]});
        assert!(!only_gc_fields_change(&widened, &old));
        let labelled =
            json!({"metadata": {"name": "r", "labels": {"a": "b"}}, "rules": [{"verbs": ["get"]}]});
        assert!(!only_gc_fields_change(&labelled, &old));
    }

    #[test]
    fn aggregation_rules_need_selectors() {
        assert!(has_aggregation_rule(
            &json!({"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}})
        ));
        assert!(!has_aggregation_rule(
            &json!({"aggregationRule": {"clusterRoleSelectors": []}})
        ));
        assert!(!has_aggregation_rule(&json!({"rules": []})));
    }
}
