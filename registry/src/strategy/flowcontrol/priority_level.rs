//! PriorityLevelConfigurations (upstream's pkg/apis/flowcontrol/validation and v1
//! defaults): a share of the server's concurrency and what happens to requests beyond it
//! (queued, or rejected), or no limit at all for the one `exempt` level.

use serde_json::{json, Map, Value};

use super::configuration::{mandatory_spec, specs_equal, EXEMPT};
use super::flow_schema::supported;
use super::{conditions, go_value, name_of};
use crate::error::Cause;
use crate::strategy::Strategy;

const TYPES: &[&str] = &["Exempt", "Limited"];
const RESPONSES: &[&str] = &["Queue", "Reject"];
/// The most queues a level may have (10^7).
const MAX_QUEUES: i64 = 10_000_000;
/// The hash bits shuffle sharding has to deal a hand from (shufflesharding.MaxHashBits).
const MAX_HASH_BITS: f64 = 60.0;

pub struct PriorityLevelConfigurationStrategy;

/// Sets `map[key] = value` when the key is absent or null.
fn default_field(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), value);
    }
}

/// Sets `map[key] = value` when the key is absent or zero (Go's non-pointer int fields).
fn default_int(map: &mut Map<String, Value>, key: &str, value: i64) {
    if map.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
        map.insert(key.into(), json!(value));
    }
}

/// The v1 defaults (SetDefaults_PriorityLevelConfiguration and the defaults of its parts).
pub fn set_defaults(spec: &mut Value) {
    if let Some(limited) = spec.get_mut("limited").and_then(Value::as_object_mut) {
        default_field(limited, "nominalConcurrencyShares", json!(30));
        default_field(limited, "lendablePercent", json!(0));
        let queuing = limited
            .get_mut("limitResponse")
            .and_then(|r| r.get_mut("queuing"))
            .and_then(Value::as_object_mut);
        if let Some(queuing) = queuing {
            default_int(queuing, "handSize", 8);
            default_int(queuing, "queues", 64);
            default_int(queuing, "queueLengthLimit", 50);
        }
    }
    if let Some(exempt) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
        default_field(exempt, "nominalConcurrencyShares", json!(0));
        default_field(exempt, "lendablePercent", json!(0));
    }
}

impl Strategy for PriorityLevelConfigurationStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec") {
            set_defaults(spec);
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let name = name_of(obj);
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let mut causes = validate_spec(name, &spec);
        if let Some(mut fixed) = mandatory_spec("PriorityLevelConfiguration", name) {
            set_defaults(&mut fixed);
            // Admins may tune the exempt level's own fields, nothing else of it.
            let detail = if name == EXEMPT {
                fixed["exempt"] = spec.get("exempt").cloned().unwrap_or(Value::Null);
                format!(
                    "spec of '{name}' except the 'spec.exempt' field must equal the fixed value"
                )
            } else {
                format!("spec of '{name}' must equal the fixed value")
            };
            if !specs_equal(&spec, &fixed) {
                causes.push(Cause::invalid("spec", go_value(&spec), &detail));
            }
        }
        causes.extend(conditions(obj));
        causes
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        conditions(new)
    }
}

fn int(obj: &Value, field: &str) -> Option<i64> {
    obj.get(field).and_then(Value::as_i64)
}

fn present<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj.get(field).filter(|v| !v.is_null())
}

fn validate_spec(name: &str, spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or_default();
    if (name == EXEMPT) != (kind == "Exempt") {
        causes.push(Cause::invalid(
            "spec.type",
            crate::validation::quote(kind),
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    match kind {
        "Exempt" => {
            if present(spec, "limited").is_some() {
                causes.push(Cause::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            if let Some(exempt) = present(spec, "exempt") {
                causes.extend(shares_and_lending(exempt, "spec.exempt"));
            }
        }
        "Limited" => {
            if present(spec, "exempt").is_some() {
                causes.push(Cause::forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            match present(spec, "limited") {
                None => causes.push(Cause::required_because(
                    "spec.limited",
                    "must not be empty when type is Limited",
                )),
                Some(limited) => causes.extend(validate_limited(limited)),
            }
        }
        other => causes.push(Cause::not_supported("spec.type", other, TYPES)),
    }
    causes
}

/// A level's nominal share and lendable percent (v1 allows a zero share).
fn shares_and_lending(obj: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(shares) = int(obj, "nominalConcurrencyShares").filter(|s| *s < 0) {
        causes.push(Cause::invalid(
            &format!("{path}.nominalConcurrencyShares"),
            shares,
            "must be a non-negative integer",
        ));
    }
    if let Some(lendable) = int(obj, "lendablePercent").filter(|p| !(0..=100).contains(p)) {
        causes.push(Cause::invalid(
            &format!("{path}.lendablePercent"),
            lendable,
            "must be between 0 and 100, inclusive",
        ));
    }
    causes
}

fn validate_limited(limited: &Value) -> Vec<Cause> {
    const PATH: &str = "spec.limited";
    let mut causes = Vec::new();
    if let Some(shares) = int(limited, "nominalConcurrencyShares").filter(|s| *s < 0) {
        causes.push(Cause::invalid(
            &format!("{PATH}.nominalConcurrencyShares"),
            shares,
            "must be a non-negative integer",
        ));
    }
    let response = limited.get("limitResponse").cloned().unwrap_or(Value::Null);
    causes.extend(validate_limit_response(&response));
    if let Some(lendable) = int(limited, "lendablePercent").filter(|p| !(0..=100).contains(p)) {
        causes.push(Cause::invalid(
            &format!("{PATH}.lendablePercent"),
            lendable,
            "must be between 0 and 100, inclusive",
        ));
    }
    if let Some(limit) = int(limited, "borrowingLimitPercent").filter(|p| *p < 0) {
        causes.push(Cause::invalid(
            &format!("{PATH}.borrowingLimitPercent"),
            limit,
            "if specified, must be a non-negative integer",
        ));
    }
    causes
}

fn validate_limit_response(response: &Value) -> Vec<Cause> {
    const PATH: &str = "spec.limited.limitResponse";
    let kind = response
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let queuing = present(response, "queuing");
    match (kind, queuing) {
        ("Reject", Some(_)) => vec![Cause::forbidden(
            &format!("{PATH}.queuing"),
            "must be nil if limited.limitResponse.type is not Limited",
        )],
        ("Reject", None) => Vec::new(),
        ("Queue", None) => vec![Cause::required_because(
            &format!("{PATH}.queuing"),
            "must not be empty if limited.limitResponse.type is Limited",
        )],
        ("Queue", Some(queuing)) => validate_queuing(queuing),
        (other, _) => vec![Cause::new(
            "FieldValueNotSupported",
            &format!("{PATH}.type"),
            format!(
                "Unsupported value: {}: supported values: {}",
                crate::validation::quote(other),
                supported(RESPONSES)
            ),
        )],
    }
}

/// Shuffle sharding's limits: positive sizes, a hand no bigger than the deck, and a deal
/// that fits the hash (upstream's RequiredEntropyBits against MaxHashBits).
fn validate_queuing(queuing: &Value) -> Vec<Cause> {
    const PATH: &str = "spec.limited.limitResponse.queuing";
    let mut causes = Vec::new();
    let limit = int(queuing, "queueLengthLimit").unwrap_or(0);
    if limit <= 0 {
        causes.push(Cause::invalid(
            &format!("{PATH}.queueLengthLimit"),
            limit,
            "must be positive",
        ));
    }
    let queues = int(queuing, "queues").unwrap_or(0);
    if queues <= 0 {
        causes.push(Cause::invalid(
            &format!("{PATH}.queues"),
            queues,
            "must be positive",
        ));
    } else if queues > MAX_QUEUES {
        causes.push(Cause::invalid(
            &format!("{PATH}.queues"),
            queues,
            &format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand = int(queuing, "handSize").unwrap_or(0);
    let field = format!("{PATH}.handSize");
    if hand <= 0 {
        causes.push(Cause::invalid(&field, hand, "must be positive"));
    } else if hand > queues {
        causes.push(Cause::invalid(
            &field,
            hand,
            &format!("should not be greater than queues ({queues})"),
        ));
    } else if ((queues as f64).log2() * hand as f64).ceil() > MAX_HASH_BITS {
        causes.push(Cause::invalid(
            &field,
            hand,
            &format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than 60"
            ),
        ));
    }
    causes
}
