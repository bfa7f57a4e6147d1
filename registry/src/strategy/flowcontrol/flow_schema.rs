//! FlowSchemas (upstream's pkg/apis/flowcontrol/validation): which requests go to which
//! priority level, matched by subjects and RBAC-like rules in order of precedence.

use serde_json::{json, Value};

use super::configuration::{mandatory_spec, specs_equal, EXEMPT};
use super::{conditions, go_value, name_of, strings};
use crate::error::Cause;
use crate::go_fmt;
use crate::strategy::{at, Strategy};
use crate::validation::{names, quote};

/// The highest precedence a schema may have (FlowSchemaMaxMatchingPrecedence).
const MAX_PRECEDENCE: i64 = 10000;
/// SetDefaults_FlowSchemaSpec's precedence.
const DEFAULT_PRECEDENCE: i64 = 1000;
const DISTINGUISHERS: &[&str] = &["ByNamespace", "ByUser"];
const SUBJECT_KINDS: &[&str] = &["Group", "ServiceAccount", "User"];
/// The verbs a rule may name (sorted, as upstream lists them).
pub(super) const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];
const NS_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

pub struct FlowSchemaStrategy;

impl Strategy for FlowSchemaStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        let precedence = at(obj, &["spec", "matchingPrecedence"]).and_then(Value::as_i64);
        if matches!(precedence, None | Some(0)) {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("matchingPrecedence".into(), json!(DEFAULT_PRECEDENCE));
            } else if let Some(map) = obj.as_object_mut() {
                map.insert(
                    "spec".into(),
                    json!({"matchingPrecedence": DEFAULT_PRECEDENCE}),
                );
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let name = name_of(obj);
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let mut causes = validate_spec(name, &spec);
        if let Some(fixed) = mandatory_spec("FlowSchema", name) {
            if !specs_equal(&spec, &fixed) {
                causes.push(Cause::invalid(
                    "spec",
                    go_value(&spec),
                    &format!("spec of '{name}' must equal the fixed value"),
                ));
            }
        }
        causes.extend(conditions(obj));
        causes
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        conditions(new)
    }
}

fn validate_spec(name: &str, spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let precedence = spec
        .get("matchingPrecedence")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    const PRECEDENCE: &str = "spec.matchingPrecedence";
    if precedence <= 0 {
        causes.push(Cause::invalid(
            PRECEDENCE,
            precedence,
            "must be a positive value",
        ));
    }
    if precedence > MAX_PRECEDENCE {
        causes.push(Cause::invalid(
            PRECEDENCE,
            precedence,
            &format!("must not be greater than {MAX_PRECEDENCE}"),
        ));
    }
    if precedence == 1 && name != EXEMPT {
        causes.push(Cause::invalid(
            PRECEDENCE,
            precedence,
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(method) = spec.get("distinguisherMethod").filter(|m| !m.is_null()) {
        let kind = method
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !DISTINGUISHERS.contains(&kind) {
            causes.push(Cause::new(
                "FieldValueNotSupported",
                "spec.distinguisherMethod.type",
                format!(
                    "Unsupported value: flowcontrol.FlowDistinguisherMethod{{Type:{}}}: supported values: {}",
                    quote(kind),
                    supported(DISTINGUISHERS)
                ),
            ));
        }
    }
    const LEVEL: &str = "spec.priorityLevelConfiguration.name";
    let level = at(spec, &["priorityLevelConfiguration", "name"])
        .and_then(Value::as_str)
        .unwrap_or_default();
    if level.is_empty() {
        causes.push(Cause::required_because(
            LEVEL,
            "must reference a priority level",
        ));
    } else {
        for msg in names::name_is_dns_subdomain(level, false) {
            causes.push(Cause::invalid(LEVEL, quote(level), &msg));
        }
    }
    let rules = spec.get("rules").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        causes.extend(validate_rule(rule, &format!("spec.rules[{i}]")));
    }
    causes
}

/// `"a", "b"`, as field.NotSupported lists the supported values.
pub(super) fn supported(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| quote(v)).collect();
    quoted.join(", ")
}

fn validate_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let list = |field: &str| rule.get(field).and_then(Value::as_array).cloned();
    let subjects = list("subjects").unwrap_or_default();
    if subjects.is_empty() {
        causes.push(Cause::required_because(
            &format!("{path}.subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (i, subject) in subjects.iter().enumerate() {
        causes.extend(validate_subject(subject, &format!("{path}.subjects[{i}]")));
    }
    let resource_rules = list("resourceRules").unwrap_or_default();
    let non_resource_rules = list("nonResourceRules").unwrap_or_default();
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        causes.push(Cause::required_because(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in resource_rules.iter().enumerate() {
        causes.extend(validate_resource_rule(
            r,
            &format!("{path}.resourceRules[{i}]"),
        ));
    }
    for (i, r) in non_resource_rules.iter().enumerate() {
        causes.extend(validate_non_resource_rule(
            r,
            &format!("{path}.nonResourceRules[{i}]"),
        ));
    }
    causes
}

fn validate_subject(subject: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = subject
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let present = |field: &str| subject.get(field).is_some_and(|v| !v.is_null());
    let forbid = |causes: &mut Vec<Cause>, field: &str, why: &str| {
        if present(field) {
            causes.push(Cause::forbidden(&format!("{path}.{field}"), why));
        }
    };
    const NOT_USER: &str = "user is forbidden when subject kind is not 'User'";
    const NOT_GROUP: &str = "group is forbidden when subject kind is not 'Group'";
    const NOT_ACCOUNT: &str =
        "serviceAccount is forbidden when subject kind is not 'ServiceAccount'";
    match kind {
        "ServiceAccount" => {
            causes.extend(validate_account(subject.get("serviceAccount"), path));
            forbid(&mut causes, "user", NOT_USER);
            forbid(&mut causes, "group", NOT_GROUP);
        }
        "User" | "Group" => {
            let field = if kind == "User" { "user" } else { "group" };
            match subject.get(field).filter(|v| !v.is_null()) {
                None => causes.push(Cause::required_because(
                    &format!("{path}.{field}"),
                    &format!("{field} is required when subject kind is '{kind}'"),
                )),
                Some(named) => {
                    if named
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .is_empty()
                    {
                        causes.push(Cause::required(&format!("{path}.{field}.name")));
                    }
                }
            }
            forbid(&mut causes, "serviceAccount", NOT_ACCOUNT);
            if kind == "User" {
                forbid(&mut causes, "group", NOT_GROUP);
            } else {
                forbid(&mut causes, "user", NOT_USER);
            }
        }
        other => causes.push(Cause::not_supported(
            &format!("{path}.kind"),
            other,
            SUBJECT_KINDS,
        )),
    }
    causes
}

fn validate_account(account: Option<&Value>, path: &str) -> Vec<Cause> {
    let field = format!("{path}.serviceAccount");
    let Some(account) = account.filter(|a| !a.is_null()) else {
        return vec![Cause::required_because(
            &field,
            "serviceAccount is required when subject kind is 'ServiceAccount'",
        )];
    };
    let mut causes = Vec::new();
    let text = |f: &str| account.get(f).and_then(Value::as_str).unwrap_or_default();
    let name = text("name");
    if name.is_empty() {
        causes.push(Cause::required(&format!("{field}.name")));
    } else if name != "*" {
        for msg in names::name_is_dns_subdomain(name, false) {
            causes.push(Cause::invalid(&format!("{field}.name"), quote(name), &msg));
        }
    }
    let namespace = text("namespace");
    if namespace.is_empty() {
        causes.push(Cause::required_because(
            &format!("{field}.namespace"),
            "must specify namespace for service account",
        ));
    } else {
        for msg in names::name_is_dns_label(namespace, false) {
            causes.push(Cause::invalid(
                &format!("{field}.namespace"),
                quote(namespace),
                &msg,
            ));
        }
    }
    causes
}

/// The verbs of a rule: one or more supported verbs, or `*` alone.
fn validate_verbs(rule: &Value, path: &str) -> Option<Cause> {
    let field = format!("{path}.verbs");
    let verbs = strings(rule.get("verbs"));
    if verbs.is_empty() {
        return Some(Cause::required_because(
            &field,
            "verbs must contain at least one value",
        ));
    }
    let shown = go_fmt::string_slice(rule.get("verbs"));
    if verbs.contains(&"*") {
        return (verbs.len() > 1).then(|| {
            Cause::invalid(
                &field,
                &shown,
                "if '*' is present, must not specify other verbs",
            )
        });
    }
    if verbs.iter().all(|v| VERBS.contains(v)) {
        return None;
    }
    Some(Cause::new(
        "FieldValueNotSupported",
        &field,
        format!(
            "Unsupported value: {shown}: supported values: {}",
            supported(VERBS)
        ),
    ))
}

/// A list that must not be empty and may hold `*` only alone.
fn wildcard_list(rule: &Value, path: &str, field: &str, empty: &str, other: &str) -> Option<Cause> {
    let values = strings(rule.get(field));
    let at = format!("{path}.{field}");
    if values.is_empty() {
        return Some(Cause::required_because(&at, empty));
    }
    (values.len() > 1 && values.contains(&"*")).then(|| {
        Cause::invalid(
            &at,
            go_fmt::string_slice(rule.get(field)),
            &format!("if '*' is present, must not specify other {other}"),
        )
    })
}

fn validate_resource_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes: Vec<Cause> = validate_verbs(rule, path).into_iter().collect();
    causes.extend(wildcard_list(
        rule,
        path,
        "apiGroups",
        "resource rules must supply at least one api group",
        "api groups",
    ));
    causes.extend(wildcard_list(
        rule,
        path,
        "resources",
        "resource rules must supply at least one resource",
        "resources",
    ));
    let namespaces = strings(rule.get("namespaces"));
    let cluster = rule.get("clusterScope").and_then(Value::as_bool) == Some(true);
    let field = format!("{path}.namespaces");
    if namespaces.is_empty() && !cluster {
        causes.push(Cause::required_because(
            &field,
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if namespaces.contains(&"*") {
        if namespaces.len() > 1 {
            causes.push(Cause::invalid(
                &field,
                go_fmt::string_slice(rule.get("namespaces")),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for msg in names::name_is_dns_label(ns, false) {
                causes.push(Cause::invalid(
                    &format!("{field}[{i}]"),
                    quote(ns),
                    &format!("{NS_INTRO}{msg}"),
                ));
            }
        }
    }
    causes
}

fn validate_non_resource_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes: Vec<Cause> = validate_verbs(rule, path).into_iter().collect();
    let urls = strings(rule.get("nonResourceURLs"));
    let field = format!("{path}.nonResourceURLs");
    if urls.is_empty() {
        causes.push(Cause::required_because(
            &field,
            "nonResourceURLs must contain at least one value",
        ));
    } else if urls.contains(&"*") {
        if urls.len() > 1 {
            causes.push(Cause::invalid(
                &field,
                go_fmt::string_slice(rule.get("nonResourceURLs")),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, url) in urls.iter().enumerate() {
            if let Some(why) = url_problem(url) {
                causes.push(Cause::invalid(&format!("{field}[{i}]"), quote(url), why));
            }
        }
    }
    causes
}

/// ValidateNonResourceURLPath: rooted, no spaces or double slashes, `*` only as a final
/// path segment.
fn url_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("must not be empty");
    }
    if path == "/" {
        return None;
    }
    if !path.starts_with('/') {
        return Some("must start with slash");
    }
    if path.contains(' ') {
        return Some("must not contain white-space");
    }
    if path.contains("//") {
        return Some("must not contain double slash");
    }
    let wildcards = path.matches('*').count();
    if wildcards > 1 || (wildcards == 1 && !path.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}
