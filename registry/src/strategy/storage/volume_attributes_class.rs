//! VolumeAttributesClasses: a driver and the parameters it applies to volumes of the class;
//! neither changes once the class exists.

use serde_json::Value;

use super::{parameters, provisioner};
use crate::error::Cause;
use crate::strategy::Strategy;

pub struct VolumeAttributesClassStrategy;

fn driver(obj: &Value) -> &str {
    obj["driverName"].as_str().unwrap_or_default()
}

impl Strategy for VolumeAttributesClassStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = provisioner(driver(obj), "driverName");
        causes.extend(parameters(obj.get("parameters"), false, "parameters"));
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        if driver(new) != driver(old) {
            causes.push(Cause::forbidden(
                "driverName",
                "updates to driverName are forbidden.",
            ));
        }
        let params = |o: &Value| o.get("parameters").cloned().unwrap_or(Value::Null);
        if params(new) != params(old) {
            causes.push(Cause::forbidden(
                "parameters",
                "updates to parameters are forbidden.",
            ));
        }
        causes.extend(self.validate(new));
        causes
    }
}
