//! IngressClasses: the controller that implements the class (a domain-prefixed path, fixed
//! once set) and an optional reference to its parameters, cluster- or namespace-scoped.

use serde_json::{json, Value};

use super::text;
use crate::error::Cause;
use crate::strategy::{at, Strategy};
use crate::validation::names::{is_dns1123_subdomain, name_is_dns_label};
use crate::validation::net::domain_prefixed_path;
use crate::validation::{path_segment_name, quote};

const MAX_CONTROLLER_LENGTH: usize = 250;
const SCOPES: &[&str] = &["Cluster", "Namespace"];

pub struct IngressClassStrategy;

impl Strategy for IngressClassStrategy {
    /// SetDefaults_IngressClass: parameters are cluster-scoped unless they say otherwise.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(params) = obj
            .get_mut("spec")
            .and_then(|s| s.get_mut("parameters"))
            .and_then(Value::as_object_mut)
        {
            params.entry("scope").or_insert_with(|| json!("Cluster"));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let controller = text(obj, &["spec", "controller"]);
        if controller.is_empty() {
            causes.push(Cause::required("spec.controller"));
        } else {
            if controller.len() > MAX_CONTROLLER_LENGTH {
                causes.push(Cause::too_long("spec.controller", MAX_CONTROLLER_LENGTH));
            }
            causes.extend(domain_prefixed_path("spec.controller", controller));
        }
        if let Some(params) = at(obj, &["spec", "parameters"]).filter(|p| !p.is_null()) {
            causes.extend(validate_parameters(params));
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let controller = text(new, &["spec", "controller"]);
        if controller != text(old, &["spec", "controller"]) {
            causes.push(Cause::invalid(
                "spec.controller",
                quote(controller),
                "field is immutable",
            ));
        }
        causes.extend(self.validate(new));
        causes
    }
}

fn validate_parameters(params: &Value) -> Vec<Cause> {
    const FIELD: &str = "spec.parameters";
    let mut causes = Vec::new();
    if let Some(group) = params.get("apiGroup").and_then(Value::as_str) {
        for m in is_dns1123_subdomain(group) {
            causes.push(Cause::invalid(
                &format!("{FIELD}.apiGroup"),
                quote(group),
                &m,
            ));
        }
    }
    for key in ["kind", "name"] {
        let value = text(params, &[key]);
        if value.is_empty() {
            causes.push(Cause::required(&format!("{FIELD}.{key}")));
        }
        for m in path_segment_name(value, false) {
            causes.push(Cause::invalid(&format!("{FIELD}.{key}"), quote(value), &m));
        }
    }
    let Some(scope) = params.get("scope").and_then(Value::as_str) else {
        causes.push(Cause::required(&format!("{FIELD}.scope")));
        return causes;
    };
    let namespace = params.get("namespace").and_then(Value::as_str);
    match (scope, namespace) {
        ("Namespace", None) => causes.push(Cause::required_because(
            &format!("{FIELD}.namespace"),
            "`parameters.scope` is set to 'Namespace'",
        )),
        ("Namespace", Some(ns)) => {
            for m in name_is_dns_label(ns, false) {
                causes.push(Cause::invalid(&format!("{FIELD}.namespace"), quote(ns), &m));
            }
        }
        ("Cluster", Some(_)) => causes.push(Cause::forbidden(
            &format!("{FIELD}.namespace"),
            "`parameters.scope` is set to 'Cluster'",
        )),
        ("Cluster", None) => {}
        (other, _) => causes.push(Cause::not_supported(
            &format!("{FIELD}.scope"),
            other,
            SCOPES,
        )),
    }
    causes
}
