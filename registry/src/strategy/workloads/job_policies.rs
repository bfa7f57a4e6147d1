//! The rules of a Job's `podFailurePolicy` and `successPolicy` (upstream's
//! validatePodFailurePolicy and validateSuccessPolicy), with upstream's field paths.

use serde_json::Value;

use crate::error::Cause;
use crate::validation::{is_qualified_name, quote};

const MAX_POD_FAILURE_POLICY_RULES: usize = 20;
const MAX_EXIT_CODE_VALUES: usize = 255;
const MAX_POD_CONDITION_PATTERNS: usize = 20;
const MAX_SUCCESS_POLICY_RULES: usize = 20;
const MAX_SUCCEEDED_INDEXES_LENGTH: usize = 64 * 1024;
const ACTIONS: &[&str] = &["Count", "FailIndex", "FailJob", "Ignore"];
const OPERATORS: &[&str] = &["In", "NotIn"];
const CONDITION_STATUSES: &[&str] = &["False", "True", "Unknown"];

/// Upstream's `valid values: ["A" "B"]` (Go's %q of a string list).
fn valid_values(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
    format!("valid values: [{}]", quoted.join(" "))
}

/// An Invalid cause whose value upstream leaves out.
fn invalid_omitted(field: &str, why: &str) -> Cause {
    Cause::new("FieldValueInvalid", field, format!("Invalid value: {why}"))
}

/// Go's %#v of an []int32, as upstream shows exit code lists.
fn go_int_list(values: Option<&Vec<Value>>) -> String {
    match values {
        None => "[]int32(nil)".into(),
        Some(values) => {
            let shown: Vec<String> = values.iter().map(Value::to_string).collect();
            format!("[]int32{{{}}}", shown.join(", "))
        }
    }
}

pub(super) fn validate_pod_failure_policy(spec: &Value, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let rules_field = format!("{field}.rules");
    let rules = spec["podFailurePolicy"]["rules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if rules.len() > MAX_POD_FAILURE_POLICY_RULES {
        causes.push(Cause::too_many(
            &rules_field,
            rules.len(),
            MAX_POD_FAILURE_POLICY_RULES,
        ));
    }
    let template = &spec["template"]["spec"];
    let containers: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|list| template[list].as_array().into_iter().flatten())
        .filter_map(|c| c["name"].as_str())
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        let rule_field = format!("{rules_field}[{i}]");
        let action_field = format!("{rule_field}.action");
        match rule["action"].as_str().unwrap_or_default() {
            "" => causes.push(Cause::new(
                "FieldValueRequired",
                &action_field,
                format!("Required value: {}", valid_values(ACTIONS)),
            )),
            "FailIndex" if spec["backoffLimitPerIndex"].is_null() => causes.push(Cause::invalid(
                &action_field,
                quote("FailIndex"),
                "requires the backoffLimitPerIndex to be set",
            )),
            action if !ACTIONS.contains(&action) => {
                causes.push(Cause::not_supported(&action_field, action, ACTIONS));
            }
            _ => {}
        }
        let on_exit_codes = !rule["onExitCodes"].is_null();
        let conditions = rule["onPodConditions"].as_array().filter(|c| !c.is_empty());
        if on_exit_codes {
            let exit_field = format!("{rule_field}.onExitCodes");
            causes.extend(exit_code_rules(
                &rule["onExitCodes"],
                &exit_field,
                &containers,
            ));
        }
        if let Some(patterns) = conditions {
            let field = format!("{rule_field}.onPodConditions");
            causes.extend(condition_rules(patterns, &field));
        }
        match (on_exit_codes, conditions.is_some()) {
            (true, true) => causes.push(invalid_omitted(
                &rule_field,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            )),
            (false, false) => causes.push(invalid_omitted(
                &rule_field,
                "specifying one of OnExitCodes and OnPodConditions is required",
            )),
            _ => {}
        }
    }
    causes
}

fn exit_code_rules(requirement: &Value, field: &str, containers: &[&str]) -> Vec<Cause> {
    let mut causes = Vec::new();
    let operator = requirement["operator"].as_str().unwrap_or_default();
    let operator_field = format!("{field}.operator");
    if operator.is_empty() {
        causes.push(Cause::new(
            "FieldValueRequired",
            &operator_field,
            format!("Required value: {}", valid_values(OPERATORS)),
        ));
    } else if !OPERATORS.contains(&operator) {
        causes.push(Cause::not_supported(&operator_field, operator, OPERATORS));
    }
    if let Some(name) = requirement["containerName"].as_str() {
        if !containers.contains(&name) {
            causes.push(Cause::invalid(
                &format!("{field}.containerName"),
                quote(name),
                "must be one of the container or initContainer names in the pod template",
            ));
        }
    }
    let values_field = format!("{field}.values");
    let list = requirement["values"].as_array();
    let values: Vec<i64> = list
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .collect();
    if values.is_empty() {
        causes.push(Cause::invalid(
            &values_field,
            go_int_list(list),
            "at least one value is required",
        ));
    } else if values.len() > MAX_EXIT_CODE_VALUES {
        causes.push(Cause::too_many(
            &values_field,
            values.len(),
            MAX_EXIT_CODE_VALUES,
        ));
    }
    let mut seen = Vec::with_capacity(values.len());
    for (j, value) in values.iter().enumerate() {
        let value_field = format!("{values_field}[{j}]");
        if operator == "In" && *value == 0 {
            causes.push(Cause::invalid(
                &value_field,
                0,
                "must not be 0 for the In operator",
            ));
        }
        if seen.contains(value) {
            causes.push(Cause::duplicate(&value_field, value));
        } else {
            seen.push(*value);
        }
    }
    if values.windows(2).any(|w| w[0] > w[1]) {
        causes.push(Cause::invalid(
            &values_field,
            go_int_list(list),
            "must be ordered",
        ));
    }
    causes
}

fn condition_rules(patterns: &[Value], field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if patterns.len() > MAX_POD_CONDITION_PATTERNS {
        causes.push(Cause::too_many(
            field,
            patterns.len(),
            MAX_POD_CONDITION_PATTERNS,
        ));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        let type_ = pattern["type"].as_str().unwrap_or_default();
        for message in is_qualified_name(type_) {
            causes.push(Cause::invalid(
                &format!("{field}[{j}].type"),
                quote(type_),
                &message,
            ));
        }
        let status_field = format!("{field}[{j}].status");
        match pattern["status"].as_str().unwrap_or_default() {
            "" => causes.push(Cause::new(
                "FieldValueRequired",
                &status_field,
                format!("Required value: {}", valid_values(CONDITION_STATUSES)),
            )),
            status if !CONDITION_STATUSES.contains(&status) => {
                causes.push(Cause::not_supported(
                    &status_field,
                    status,
                    CONDITION_STATUSES,
                ));
            }
            _ => {}
        }
    }
    causes
}

pub(super) fn validate_success_policy(spec: &Value, field: &str) -> Vec<Cause> {
    let policy = &spec["successPolicy"];
    if spec["completionMode"] != "Indexed" {
        return vec![Cause::invalid(
            field,
            policy,
            "requires indexed completion mode",
        )];
    }
    let mut causes = Vec::new();
    let rules_field = format!("{field}.rules");
    let rules = policy["rules"].as_array().cloned().unwrap_or_default();
    if rules.is_empty() {
        causes.push(Cause::new(
            "FieldValueRequired",
            &rules_field,
            "Required value: at least one rules must be specified when the successPolicy is specified".into(),
        ));
    }
    if rules.len() > MAX_SUCCESS_POLICY_RULES {
        causes.push(Cause::too_many(
            &rules_field,
            rules.len(),
            MAX_SUCCESS_POLICY_RULES,
        ));
    }
    // Without completions (itself an error for Indexed Jobs) the indexes cannot be judged.
    let Some(completions) = spec["completions"].as_i64() else {
        return causes;
    };
    for (i, rule) in rules.iter().enumerate() {
        let rule_field = format!("{rules_field}[{i}]");
        let count = rule["succeededCount"].as_i64();
        let indexes = rule["succeededIndexes"].as_str();
        if count.is_none() && indexes.is_none() {
            causes.push(Cause::new(
                "FieldValueRequired",
                &rule_field,
                "Required value: at least one of succeededCount or succeededIndexes must be specified".into(),
            ));
        }
        let mut total = 0;
        if let Some(indexes) = indexes {
            let indexes_field = format!("{rule_field}.succeededIndexes");
            if indexes.len() > MAX_SUCCEEDED_INDEXES_LENGTH {
                causes.push(Cause::new(
                    "FieldValueTooLong",
                    &indexes_field,
                    format!("Too long: may not be more than {MAX_SUCCEEDED_INDEXES_LENGTH} bytes"),
                ));
            }
            match index_total(indexes, completions) {
                Ok(n) => total = n,
                Err(e) => causes.push(Cause::invalid(
                    &indexes_field,
                    quote(indexes),
                    &format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
        if let Some(count) = count {
            let count_field = format!("{rule_field}.succeededCount");
            if count < 0 {
                causes.push(Cause::invalid(
                    &count_field,
                    count,
                    "must be greater than or equal to 0",
                ));
            }
            if count > completions {
                let why = format!("must be less than or equal to {completions} (the number of specified completions)");
                causes.push(Cause::invalid(&count_field, count, &why));
            }
            if indexes.is_some() && count > total {
                let why = format!("must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)");
                causes.push(Cause::invalid(&count_field, count, &why));
            }
        }
    }
    causes
}

/// How many indexes a strictly increasing interval list ("0,2-4") names, or why it is not
/// one (upstream's validateIndexesFormat).
fn index_total(indexes: &str, completions: i64) -> Result<i64, String> {
    if indexes.is_empty() {
        return Ok(0);
    }
    let (mut total, mut last) = (0, None);
    for fragment in indexes.split(',') {
        let limits: Vec<&str> = fragment.split('-').collect();
        if limits.len() > 2 {
            return Err(format!("the fragment \"{fragment}\" violates the requirement that an index interval can have at most two parts separated by '-'"));
        }
        let parse = |s: &str| -> Result<i64, String> {
            let n = s
                .parse::<i64>()
                .map_err(|_| format!("cannot convert string to integer for index: \"{s}\""))?;
            if n >= completions {
                return Err(format!("too large index: \"{s}\""));
            }
            Ok(n)
        };
        let first = parse(limits[0])?;
        let end = match limits.get(1) {
            Some(s) => parse(s)?,
            None => first,
        };
        if limits.len() == 2 && first >= end {
            return Err(format!(
                "non-increasing order, previous: {first}, current: {end}"
            ));
        }
        if let Some(previous) = last.filter(|l| *l >= first) {
            return Err(format!(
                "non-increasing order, previous: {previous}, current: {first}"
            ));
        }
        total += end - first + 1;
        last = Some(end);
    }
    Ok(total)
}
