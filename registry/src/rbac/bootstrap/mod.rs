//! Upstream's bootstrap RBAC policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy): the
//! ClusterRoles, ClusterRoleBindings, Roles and RoleBindings every cluster starts with, and
//! their reconciliation at start (`reconcile`), which creates what is missing and adds back
//! permissions and subjects taken from roles and bindings that are still auto-updated.

mod cluster_roles;
mod controller_roles;
mod namespace_roles;
mod objects;
mod plan;
mod reconcile;
pub mod rule;

pub use objects::{AUTOUPDATE_ANNOTATION, BOOTSTRAPPING_LABEL, BOOTSTRAPPING_VALUE};
pub use reconcile::{reconcile, Change, Report};

use serde_json::Value;

pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The labels the default aggregated roles gather their rules by.
pub const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
pub const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
pub const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The whole bootstrap policy, as full rbac/v1 objects.
#[derive(Clone, Debug)]
pub struct Policy {
    pub cluster_roles: Vec<Value>,
    pub cluster_role_bindings: Vec<Value>,
    /// Namespaced; each names its namespace.
    pub roles: Vec<Value>,
    pub role_bindings: Vec<Value>,
}

/// The policy this server bootstraps: upstream's cluster roles and bindings, the roles of the
/// controllers it runs, and the kube-system / kube-public roles.
pub fn policy() -> Policy {
    let mut cluster_roles = cluster_roles::cluster_roles();
    cluster_roles.extend(controller_roles::controller_roles());
    let mut cluster_role_bindings = cluster_roles::cluster_role_bindings();
    cluster_role_bindings.extend(controller_roles::controller_role_bindings());
    Policy {
        cluster_roles,
        cluster_role_bindings,
        roles: namespace_roles::roles(),
        role_bindings: namespace_roles::role_bindings(),
    }
}

#[cfg(test)]
mod tests;
