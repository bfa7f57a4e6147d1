//! Whether one set of rules holds every permission of another (upstream's Covers,
//! BreakdownRule and ruleCovers), and the compaction escalation errors list the missing
//! permissions in (CompactRules).

use std::collections::HashMap;

use super::rules::{url_covers, PolicyRule, ALL};

/// Whether `owner` holds every permission of `servant`; if not, the permissions it lacks,
/// each as a rule of one verb on one group and resource (and name), or one URL.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let missing: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (missing.is_empty(), missing)
}

/// A rule as the single-verb, single-resource (single-name) or single-URL rules it grants.
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    out.extend(rule.resource_names.iter().map(|n| PolicyRule {
                        resource_names: one(n),
                        ..base.clone()
                    }));
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Default::default()
            });
        }
    }
    out
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(set, i))
}

/// `*` covers every resource, an exact entry its resource, `*/x` every resource's `x`.
fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| owner.iter().any(|o| o.strip_prefix("*/") == Some(sub)))
    })
}

fn urls_cover(owner: &[String], wanted: &[String]) -> bool {
    wanted
        .iter()
        .all(|path| owner.iter().any(|o| url_covers(o, path)))
}

/// Whether `owner` grants everything `sub` (one verb, resource, name or URL) does.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs
        && groups
        && resources_cover(&owner.resources, &sub.resources)
        && urls_cover(&owner.non_resource_urls, &sub.non_resource_urls)
        && names
}

/// Rules of one group and resource (and at most one name) that differ only in their verbs
/// become one rule with all those verbs; others stay as they are.
pub fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out = Vec::with_capacity(rules.len());
    let mut simple: HashMap<(String, String, Option<String>), usize> = HashMap::new();
    for rule in rules {
        let Some(key) = simple_key(&rule) else {
            out.push(rule);
            continue;
        };
        match simple.get(&key) {
            Some(&at) => {
                let verbs = &mut out[at].verbs;
                for verb in rule.verbs {
                    if !verbs.contains(&verb) {
                        verbs.push(verb);
                    }
                }
            }
            None => {
                simple.insert(key, out.len());
                out.push(rule);
            }
        }
    }
    out
}

fn simple_key(rule: &PolicyRule) -> Option<(String, String, Option<String>)> {
    let simple = rule.resource_names.len() <= 1
        && rule.non_resource_urls.is_empty()
        && rule.api_groups.len() == 1
        && rule.resources.len() == 1;
    simple.then(|| {
        (
            rule.api_groups[0].clone(),
            rule.resources[0].clone(),
            rule.resource_names.first().cloned(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: strings(verbs),
            api_groups: strings(groups),
            resources: strings(resources),
            ..Default::default()
        }
    }

    fn named(r: PolicyRule, names: &[&str]) -> PolicyRule {
        PolicyRule {
            resource_names: strings(names),
            ..r
        }
    }

    fn urls(verbs: &[&str], paths: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: strings(verbs),
            non_resource_urls: strings(paths),
            ..Default::default()
        }
    }

    #[test]
    fn exact_and_wildcard_owners_cover() {
        let wanted = [rule(&["get", "list"], &[""], &["pods", "pods/log"])];
        assert!(covers(&wanted, &wanted).0);
        assert!(covers(&[rule(&["*"], &["*"], &["*"])], &wanted).0);
        let (ok, missing) = covers(&[rule(&["get", "list"], &[""], &["pods"])], &wanted);
        assert!(!ok);
        assert_eq!(
            missing,
            [
                rule(&["get"], &[""], &["pods/log"]),
                rule(&["list"], &[""], &["pods/log"])
            ]
        );
        // `*/log` covers every resource's log, not the resource.
        let any_log = [rule(&["get", "list"], &[""], &["*/log", "pods"])];
        assert!(covers(&any_log, &wanted).0);
        assert!(
            !covers(
                &[rule(&["get"], &[""], &["*/log"])],
                &[rule(&["get"], &[""], &["pods"])]
            )
            .0
        );
    }

    #[test]
    fn names_narrow_and_an_unnamed_rule_covers_named_ones() {
        let unnamed = [rule(&["get"], &[""], &["secrets"])];
        let one = [named(rule(&["get"], &[""], &["secrets"]), &["a"])];
        assert!(covers(&unnamed, &one).0);
        assert!(!covers(&one, &unnamed).0);
        assert!(!covers(&one, &[named(rule(&["get"], &[""], &["secrets"]), &["b"])]).0);
    }

    #[test]
    fn url_prefixes_cover_paths_under_them() {
        let owner = [urls(&["get"], &["/healthz/*", "/version"])];
        assert!(covers(&owner, &[urls(&["get"], &["/healthz/etcd", "/version"])]).0);
        assert!(!covers(&owner, &[urls(&["get"], &["/metrics"])]).0);
        assert!(!covers(&owner, &[urls(&["post"], &["/version"])]).0);
        assert!(covers(&[urls(&["*"], &["*"])], &[urls(&["get"], &["/anything"])]).0);
        // A resource owner covers no URL.
        assert!(
            !covers(
                &[rule(&["*"], &["*"], &["*"])],
                &[urls(&["get"], &["/metrics"])]
            )
            .0
        );
    }

    #[test]
    fn compaction_merges_verbs_of_the_same_resource() {
        let missing = vec![
            rule(&["get"], &[""], &["pods"]),
            rule(&["list"], &[""], &["pods"]),
            rule(&["get"], &[""], &["pods/log"]),
            named(rule(&["get"], &[""], &["secrets"]), &["a"]),
            named(rule(&["list"], &[""], &["secrets"]), &["a"]),
            urls(&["get"], &["/metrics"]),
        ];
        assert_eq!(
            compact(missing),
            [
                rule(&["get", "list"], &[""], &["pods"]),
                rule(&["get"], &[""], &["pods/log"]),
                named(rule(&["get", "list"], &[""], &["secrets"]), &["a"]),
                urls(&["get"], &["/metrics"]),
            ]
        );
    }
}
