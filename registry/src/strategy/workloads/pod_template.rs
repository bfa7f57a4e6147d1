//! PodTemplates (core/v1; upstream's pkg/registry/core/podtemplate): a pod template kept for
//! others to copy, defaulted and validated as any workload's template; a change of the
//! template moves the generation on.

use serde_json::Value;

use super::template::{default_template, validate_template};
use crate::error::Cause;
use crate::strategy::{at, Strategy};

pub struct PodTemplateStrategy;

impl Strategy for PodTemplateStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        default_template(obj, &["template"]);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_template(at(obj, &["template"]), "template")
    }
}
