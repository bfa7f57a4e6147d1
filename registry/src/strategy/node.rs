//! RuntimeClasses (node.k8s.io/v1; upstream's pkg/apis/node/validation): a handler named as a
//! DNS label and fixed once set, the pod overhead it adds, and where its pods may schedule.

use serde_json::Value;

use crate::error::Cause;
use crate::strategy::{at, Strategy};
use crate::types::parse_quantity;
use crate::validation::names::is_dns1123_label;
use crate::validation::{is_qualified_name, quote, validate_labels};

pub struct RuntimeClassStrategy;

fn handler(obj: &Value) -> &str {
    obj.get("handler")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Strategy for RuntimeClassStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let handler = handler(obj);
        for m in is_dns1123_label(handler) {
            causes.push(Cause::invalid("handler", quote(handler), &m));
        }
        if let Some(fixed) = at(obj, &["overhead", "podFixed"]).and_then(Value::as_object) {
            for (name, quantity) in fixed {
                let field = format!("overhead.podFixed[{name}]");
                for m in is_qualified_name(name) {
                    causes.push(Cause::invalid(&field, quote(name), &m));
                }
                let text = quantity
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| quantity.to_string());
                match parse_quantity(&text) {
                    Some(q) if q < 0.0 => causes.push(Cause::invalid(
                        &field,
                        quote(&text),
                        "must be greater than or equal to 0",
                    )),
                    Some(_) => {}
                    None => causes.push(Cause::invalid(
                        &field,
                        quote(&text),
                        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                    )),
                }
            }
        }
        if let Some(selector) = at(obj, &["scheduling", "nodeSelector"]) {
            causes.extend(validate_labels(selector, "scheduling.nodeSelector"));
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        if handler(new) != handler(old) {
            causes.push(Cause::invalid(
                "handler",
                quote(handler(new)),
                "field is immutable",
            ));
        }
        causes
    }
}
