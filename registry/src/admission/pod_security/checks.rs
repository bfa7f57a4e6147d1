//! Evaluating a pod (or a workload's pod template) against a level and version of the Pod
//! Security Standards (upstream's policy package): which checks make up each level at each
//! version, in upstream's order, and how their refusals are joined into the messages users
//! see. The checks themselves are in [`super::baseline`] and [`super::restricted`].

use serde_json::Value;

use super::levels::{Level, LevelVersion};
use super::{baseline, restricted};

/// What one check found wrong: a short reason and, usually, the detail of where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forbidden {
    pub reason: String,
    pub detail: String,
}

impl Forbidden {
    pub fn new(reason: impl Into<String>, detail: impl Into<String>) -> Self {
        Forbidden {
            reason: reason.into(),
            detail: detail.into(),
        }
    }
}

/// A check over the pod's metadata and spec, at a minor version of the standards.
pub type CheckFn = fn(u32, &Value, &Value) -> Option<Forbidden>;

/// One check: upstream's ID (their sort order is the order of refusals), its level, the
/// first version it is part of, and for a restricted check the baseline check it replaces
/// from that version on.
pub struct Check {
    pub id: &'static str,
    pub level: Level,
    pub since: u32,
    pub overrides: Option<&'static str>,
    pub run: CheckFn,
}

const fn check(id: &'static str, level: Level, since: u32, run: CheckFn) -> Check {
    Check {
        id,
        level,
        since,
        overrides: None,
        run,
    }
}

const fn replacing(id: &'static str, since: u32, overrides: &'static str, run: CheckFn) -> Check {
    Check {
        id,
        level: Level::Restricted,
        since,
        overrides: Some(overrides),
        run,
    }
}

/// Every check, baseline ones first, each level's sorted by ID as upstream sorts them (byte
/// order: `seLinuxOptions` before `seccompProfile_baseline`).
pub static CHECKS: &[Check] = &[
    check(
        "appArmorProfile",
        Level::Baseline,
        0,
        baseline::app_armor_profile,
    ),
    check(
        "capabilities_baseline",
        Level::Baseline,
        0,
        baseline::capabilities,
    ),
    check(
        "hostNamespaces",
        Level::Baseline,
        0,
        baseline::host_namespaces,
    ),
    check(
        "hostPathVolumes",
        Level::Baseline,
        0,
        baseline::host_path_volumes,
    ),
    check("hostPorts", Level::Baseline, 0, baseline::host_ports),
    check(
        "hostProbesAndHostLifecycle",
        Level::Baseline,
        34,
        baseline::host_probes_and_lifecycle,
    ),
    check("privileged", Level::Baseline, 0, baseline::privileged),
    check("procMount", Level::Baseline, 0, baseline::proc_mount),
    check(
        "seLinuxOptions",
        Level::Baseline,
        0,
        baseline::se_linux_options,
    ),
    check(
        "seccompProfile_baseline",
        Level::Baseline,
        0,
        baseline::seccomp_profile,
    ),
    check("sysctls", Level::Baseline, 0, baseline::sysctls),
    check(
        "windowsHostProcess",
        Level::Baseline,
        0,
        baseline::windows_host_process,
    ),
    check(
        "allowPrivilegeEscalation",
        Level::Restricted,
        8,
        restricted::allow_privilege_escalation,
    ),
    replacing(
        "capabilities_restricted",
        22,
        "capabilities_baseline",
        restricted::capabilities,
    ),
    replacing(
        "procMount_restricted",
        35,
        "procMount",
        restricted::proc_mount,
    ),
    replacing(
        "restrictedVolumes",
        0,
        "hostPathVolumes",
        restricted::volumes,
    ),
    check(
        "runAsNonRoot",
        Level::Restricted,
        0,
        restricted::run_as_non_root,
    ),
    check("runAsUser", Level::Restricted, 23, restricted::run_as_user),
    replacing(
        "seccompProfile_restricted",
        19,
        "seccompProfile_baseline",
        restricted::seccomp_profile,
    ),
];

/// The checks of `level` at `minor`, in order: a restricted check replaces the baseline one
/// it overrides only from the version it joins.
pub fn checks_for(level: Level, minor: u32) -> Vec<&'static Check> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let joined = |c: &&Check| c.since <= minor;
    let overridden: Vec<&str> = match level {
        Level::Restricted => CHECKS
            .iter()
            .filter(joined)
            .filter_map(|c| c.overrides)
            .collect(),
        _ => Vec::new(),
    };
    CHECKS
        .iter()
        .filter(joined)
        .filter(|c| c.level <= level && !overridden.contains(&c.id))
        .collect()
}

/// The refusals of a pod at a level and version, in order (none: allowed).
pub fn evaluate(lv: LevelVersion, metadata: &Value, spec: &Value) -> Vec<Forbidden> {
    let minor = lv.version.effective_minor();
    checks_for(lv.level, minor)
        .into_iter()
        .filter_map(|c| (c.run)(minor, metadata, spec))
        .collect()
}

/// Upstream's ForbiddenDetail: each reason with its detail in parentheses.
pub fn forbidden_detail(found: &[Forbidden]) -> String {
    found
        .iter()
        .map(|f| match f.detail.is_empty() {
            true => f.reason.clone(),
            false => format!("{} ({})", f.reason, f.detail),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Upstream's ForbiddenReason: the reasons alone (what pods of a namespace are grouped by).
pub fn forbidden_reason(found: &[Forbidden]) -> String {
    found
        .iter()
        .map(|f| f.reason.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

// Helpers the checks share, worded as upstream's messages need them.

/// `"a", "b"`.
pub fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let inner: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("\"{}\"", inner.join("\", \""))
}

pub fn pluralize(singular: &'static str, plural: &'static str, count: usize) -> &'static str {
    match count {
        1 => singular,
        _ => plural,
    }
}

/// `container "a"` / `containers "a", "b"`.
pub fn containers_phrase<S: AsRef<str>>(names: &[S]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

/// Init containers, containers, then ephemeral containers, as upstream visits them.
pub fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |field| spec[field].as_array().into_iter().flatten())
}

pub fn name_of(container: &Value) -> String {
    container["name"].as_str().unwrap_or_default().to_string()
}

/// Whether a pointer field is set (present and not null).
pub fn is_set(value: &Value) -> bool {
    !value.is_null()
}

/// The pod runs on Windows: the Linux-only restricted checks pass from v1.25.
pub fn windows(spec: &Value) -> bool {
    spec["os"]["name"] == "windows"
}

/// The pod runs in a user namespace (`hostUsers: false`): root-related checks relax from v1.35.
pub fn user_namespaced(spec: &Value) -> bool {
    spec["hostUsers"] == Value::Bool(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::pod_security::levels::Version;

    fn ids(level: Level, minor: u32) -> Vec<&'static str> {
        checks_for(level, minor).iter().map(|c| c.id).collect()
    }

    #[test]
    fn checks_are_sorted_by_id_within_their_level() {
        for level in [Level::Baseline, Level::Restricted] {
            let ids: Vec<&str> = CHECKS
                .iter()
                .filter(|c| c.level == level)
                .map(|c| c.id)
                .collect();
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            assert_eq!(ids, sorted);
        }
    }

    #[test]
    fn levels_are_made_of_upstreams_checks_at_each_version() {
        assert!(ids(Level::Privileged, 35).is_empty());
        assert_eq!(ids(Level::Baseline, 35).len(), 12);
        assert!(!ids(Level::Baseline, 33).contains(&"hostProbesAndHostLifecycle"));
        assert_eq!(
            ids(Level::Restricted, 35),
            [
                "appArmorProfile",
                "hostNamespaces",
                "hostPorts",
                "hostProbesAndHostLifecycle",
                "privileged",
                "seLinuxOptions",
                "sysctls",
                "windowsHostProcess",
                "allowPrivilegeEscalation",
                "capabilities_restricted",
                "procMount_restricted",
                "restrictedVolumes",
                "runAsNonRoot",
                "runAsUser",
                "seccompProfile_restricted",
            ]
        );
        // Before v1.19 and v1.22 the baseline seccomp and capabilities checks still judge
        // restricted pods; before v1.35 the baseline procMount check does.
        let v18 = ids(Level::Restricted, 18);
        assert!(v18.contains(&"seccompProfile_baseline") && v18.contains(&"capabilities_baseline"));
        assert!(!v18.contains(&"runAsUser") && v18.contains(&"allowPrivilegeEscalation"));
        let v34 = ids(Level::Restricted, 34);
        assert!(v34.contains(&"procMount") && !v34.contains(&"procMount_restricted"));
    }

    #[test]
    fn refusals_join_as_upstream_prints_them() {
        let found = [
            Forbidden::new(
                "privileged",
                "container \"c\" must not set securityContext.privileged=true",
            ),
            Forbidden::new("host namespaces", ""),
        ];
        assert_eq!(
            forbidden_detail(&found),
            "privileged (container \"c\" must not set securityContext.privileged=true), host namespaces"
        );
        assert_eq!(forbidden_reason(&found), "privileged, host namespaces");
        assert_eq!(join_quote(&["a", "b"]), "\"a\", \"b\"");
        assert_eq!(containers_phrase(&["a"]), "container \"a\"");
    }

    #[test]
    fn newer_versions_than_known_are_judged_as_the_newest() {
        let spec = serde_json::json!({"containers": [{"name": "c", "securityContext": {"privileged": true}}]});
        let lv = |version| LevelVersion {
            level: Level::Baseline,
            version,
        };
        let meta = serde_json::json!({});
        assert_eq!(
            evaluate(lv(Version::Minor(99)), &meta, &spec),
            evaluate(lv(Version::Latest), &meta, &spec)
        );
    }
}
