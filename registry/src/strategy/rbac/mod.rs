//! Roles, ClusterRoles and their bindings (upstream's pkg/registry/rbac/{role,clusterrole,
//! rolebinding,clusterrolebinding} strategies): the RBAC authorizer reads these objects, so
//! malformed ones are refused on write (`validation`). A PUT may create any of them, which
//! `kubectl auth reconcile` relies on.
//!
//! Upstream's ValidateUpdate runs the create checks and then ValidateXUpdate, which runs them
//! again: an update lists each of those causes twice in the Status details (its message names
//! each once). We keep that, so clients see the same details.

mod validation;

#[cfg(test)]
mod tests;

use serde_json::Value;

use super::Strategy;
use crate::error::Cause;

/// Twice the create checks, then what only an update checks (see the module's note).
fn update_causes(create: Vec<Cause>, update_only: Option<Cause>) -> Vec<Cause> {
    let mut causes = create.clone();
    causes.extend(create);
    causes.extend(update_only);
    causes
}

/// Roles (`namespaced`) and ClusterRoles.
pub struct RoleStrategy {
    namespaced: bool,
}

impl RoleStrategy {
    pub fn role() -> Self {
        Self { namespaced: true }
    }

    pub fn cluster_role() -> Self {
        Self { namespaced: false }
    }

    fn checks(&self, role: &Value, allow_invalid_label_values: bool) -> Vec<Cause> {
        let mut causes = validation::rules(role, self.namespaced);
        if !self.namespaced {
            causes.extend(validation::aggregation_rule(
                role,
                allow_invalid_label_values,
            ));
        }
        causes
    }
}

impl Strategy for RoleStrategy {
    /// RBAC objects' names need only be path segments (`system:controller:x`).
    fn name_problems(&self, name: &str) -> Vec<String> {
        crate::validation::names::path_segment_name(name, false)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        self.checks(obj, false)
    }

    /// A ClusterRole stored with selector values upstream now refuses may keep them.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let allow = !self.namespaced && validation::has_invalid_selector_values(old);
        update_causes(self.checks(new, allow), None)
    }
}

/// RoleBindings (`namespaced`) and ClusterRoleBindings.
pub struct BindingStrategy {
    namespaced: bool,
}

impl BindingStrategy {
    pub fn role_binding() -> Self {
        Self { namespaced: true }
    }

    pub fn cluster_role_binding() -> Self {
        Self { namespaced: false }
    }
}

impl Strategy for BindingStrategy {
    /// RBAC objects' names need only be path segments (`system:controller:x`).
    fn name_problems(&self, name: &str) -> Vec<String> {
        crate::validation::names::path_segment_name(name, false)
    }

    /// Upstream's v1 defaults, which its decoder applies to every write.
    fn prepare_for_create(&self, obj: &mut Value) {
        validation::default_binding(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        validation::default_binding(new);
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validation::binding(obj, self.namespaced)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        update_causes(
            validation::binding(new, self.namespaced),
            validation::role_ref_unchanged(new, old),
        )
    }
}
