//! Role-based access control (upstream's RBAC authorizer, rule resolver and escalation
//! checks): roles hold rules, bindings grant a role to users, groups and service accounts,
//! in one namespace (RoleBinding) or everywhere (ClusterRoleBinding). Decisions come from an
//! in-memory index of the four rbac.authorization.k8s.io/v1 resources, kept current from the
//! registry's watch streams, with bindings filed by subject.
//!
//! Wiring: [`RbacAuthorizer::new`] over the registry, [`RbacAuthorizer::run`] in the
//! background, [`RbacAuthorizer::synced`] before serving, the authorizer in the chain, and
//! [`install_escalation_checks`] with that chain.

mod authorizer;
pub mod bootstrap;
pub mod covers;
mod escalation;
pub mod index;
pub mod rules;
pub mod subjects;
mod sync;

pub use authorizer::RbacAuthorizer;
pub use escalation::{install_escalation_checks, EscalationCheck};
pub use index::Kind;
pub use rules::PolicyRule;
pub use subjects::{Binding, RoleRef, Subject};

/// The API group of roles and bindings.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// What building RBAC can fail with: the registry's error (a resource not served).
pub type RbacError = crate::error::RegistryError;
