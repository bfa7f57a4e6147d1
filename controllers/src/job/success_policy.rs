//! `spec.successPolicy` of Indexed Jobs (upstream's success_policy.go): the Job succeeds as
//! soon as one rule holds, through its set of required indexes and/or a count of succeeded
//! ones, even while other indexes still run.

use serde_json::Value;

use super::intervals::Intervals;

/// "Matched rules at index N" for the first rule the succeeded indexes satisfy.
pub fn matched(policy: &Value, completions: i64, succeeded: &Intervals) -> Option<String> {
    let rules = policy["rules"].as_array()?;
    if succeeded.is_empty() {
        return None;
    }
    let holds = |rule: &Value| {
        let count = rule["succeededCount"].as_i64();
        match rule["succeededIndexes"].as_str() {
            Some(indexes) => {
                let required = Intervals::parse(indexes, completions);
                if required.is_empty() {
                    // A rule whose indexes do not parse never holds.
                    return false;
                }
                let shared = succeeded.overlap(&required);
                shared == required.total() || count.is_some_and(|c| shared >= c)
            }
            None => count.is_some_and(|c| succeeded.total() >= c),
        }
    };
    rules
        .iter()
        .position(holds)
        .map(|index| format!("Matched rules at index {index}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_rule_that_holds_wins() {
        let policy = json!({"rules": [
            {"succeededIndexes": "0-2"},
            {"succeededIndexes": "3-9", "succeededCount": 2},
            {"succeededCount": 4},
        ]});
        let done = |s: &str| matched(&policy, 10, &Intervals::parse(s, 10));
        assert_eq!(done("0,2"), None);
        assert_eq!(done("0-2").as_deref(), Some("Matched rules at index 0"));
        assert_eq!(done("0,4,9").as_deref(), Some("Matched rules at index 1"));
        assert_eq!(done("0,2,4,5").as_deref(), Some("Matched rules at index 1"));
        assert_eq!(done("0,1,3").as_deref(), None);
        assert_eq!(done("0,1,3,7").as_deref(), Some("Matched rules at index 1"));
        assert_eq!(done("").as_deref(), None);
    }
}
