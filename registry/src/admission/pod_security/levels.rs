//! Pod Security Standards levels and versions, and the policy a namespace's labels ask for
//! (upstream's k8s.io/pod-security-admission/api): `pod-security.kubernetes.io/<mode>` names a
//! level, `<mode>-version` the version of the standard it is judged by.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::Cause;
use crate::validation::quote;

const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";
pub const ENFORCE_VERSION_LABEL: &str = "pod-security.kubernetes.io/enforce-version";
pub const AUDIT_LABEL: &str = "pod-security.kubernetes.io/audit";
pub const AUDIT_VERSION_LABEL: &str = "pod-security.kubernetes.io/audit-version";
pub const WARN_LABEL: &str = "pod-security.kubernetes.io/warn";
pub const WARN_VERSION_LABEL: &str = "pod-security.kubernetes.io/warn-version";

/// The newest version of the standards this server knows (kube-apiserver 1.35's checks end
/// there): `latest`, and any newer version asked for, are judged as this one.
pub const NEWEST_MINOR: u32 = 35;

const LEVEL_ERROR: &str = "must be one of privileged, baseline, restricted";
const VERSION_ERROR: &str = "must be \"latest\" or \"v1.x\"";

/// The key an audit annotation of this plugin is recorded under.
pub fn annotation_key(name: &str) -> String {
    format!("{LABEL_PREFIX}{name}")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    /// Upstream's ParseLevel: an unknown level reads as restricted (so that a bad enforce
    /// label fails closed), with the error.
    pub fn parse(text: &str) -> Result<Level, (Level, &'static str)> {
        match text {
            "privileged" => Ok(Level::Privileged),
            "baseline" => Ok(Level::Baseline),
            "restricted" => Ok(Level::Restricted),
            _ => Err((Level::Restricted, LEVEL_ERROR)),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A version of the standards: `latest` or `v1.<minor>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    Latest,
    Minor(u32),
}

impl Version {
    /// Upstream's ParseVersion: `latest` or `v1.x` (no leading zero); anything else reads as
    /// latest, with the error.
    pub fn parse(text: &str) -> Result<Version, (Version, &'static str)> {
        if text == "latest" {
            return Ok(Version::Latest);
        }
        let bad = Err((Version::Latest, VERSION_ERROR));
        let Some(minor) = text.strip_prefix("v1.") else {
            return bad;
        };
        let digits = !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit());
        if !digits || (minor.len() > 1 && minor.starts_with('0')) {
            return bad;
        }
        match minor.parse::<u32>() {
            Ok(n) => Ok(Version::Minor(n)),
            Err(_) => bad,
        }
    }

    /// The minor version whose checks judge this one.
    pub fn effective_minor(self) -> u32 {
        match self {
            Version::Latest => NEWEST_MINOR,
            Version::Minor(n) => n.min(NEWEST_MINOR),
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Latest => f.write_str("latest"),
            Version::Minor(n) => write!(f, "v1.{n}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LevelVersion {
    pub level: Level,
    pub version: Version,
}

impl LevelVersion {
    pub const PRIVILEGED_LATEST: LevelVersion = LevelVersion {
        level: Level::Privileged,
        version: Version::Latest,
    };

    /// Privileged at any version is the same policy (no checks).
    fn equivalent(&self, other: &LevelVersion) -> bool {
        (self.level == Level::Privileged && other.level == Level::Privileged) || self == other
    }
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level.as_str(), self.version)
    }
}

/// The three modes' levels and versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub enforce: LevelVersion,
    pub audit: LevelVersion,
    pub warn: LevelVersion,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            enforce: LevelVersion::PRIVILEGED_LATEST,
            audit: LevelVersion::PRIVILEGED_LATEST,
            warn: LevelVersion::PRIVILEGED_LATEST,
        }
    }
}

impl Policy {
    pub fn fully_privileged(&self) -> bool {
        [self.enforce, self.audit, self.warn]
            .iter()
            .all(|lv| lv.level == Level::Privileged)
    }

    pub fn equivalent(&self, other: &Policy) -> bool {
        self.enforce.equivalent(&other.enforce)
            && self.audit.equivalent(&other.audit)
            && self.warn.equivalent(&other.warn)
    }
}

fn label_error(label: &str, value: &str, why: &str) -> Cause {
    Cause::invalid(&format!("metadata.labels[{label}]"), quote(value), why)
}

fn read_version(
    labels: &BTreeMap<String, String>,
    label: &str,
    target: &mut Version,
    errors: &mut Vec<Cause>,
) {
    if let Some(value) = labels.get(label) {
        *target = Version::parse(value).unwrap_or_else(|(fallback, why)| {
            errors.push(label_error(label, value, why));
            fallback
        });
    }
}

/// An audit or warn level: a bad one audits or warns nothing (fails open).
fn read_level_open(
    labels: &BTreeMap<String, String>,
    label: &str,
    target: &mut Level,
    errors: &mut Vec<Cause>,
) {
    if let Some(value) = labels.get(label) {
        *target = Level::parse(value).unwrap_or_else(|(_, why)| {
            errors.push(label_error(label, value, why));
            Level::Privileged
        });
    }
}

/// Upstream's PolicyToEvaluate: the namespace's labels over the configured defaults, with an
/// error for each bad label. A bad enforce level enforces restricted; a bad audit or warn
/// level audits or warns nothing; a bad version is latest. Warn follows a stricter enforce
/// level when no warn label is set, so users hear of what enforce would refuse.
pub fn policy_to_evaluate(
    labels: &BTreeMap<String, String>,
    defaults: Policy,
) -> (Policy, Vec<Cause>) {
    let mut policy = defaults;
    let mut errors = Vec::new();
    if labels.is_empty() {
        return (policy, errors);
    }
    let mut valid_enforce_level = false;
    if let Some(value) = labels.get(ENFORCE_LABEL) {
        policy.enforce.level = match Level::parse(value) {
            Ok(level) => {
                valid_enforce_level = true;
                level
            }
            Err((level, why)) => {
                errors.push(label_error(ENFORCE_LABEL, value, why));
                level
            }
        };
    }
    read_version(
        labels,
        ENFORCE_VERSION_LABEL,
        &mut policy.enforce.version,
        &mut errors,
    );
    read_level_open(labels, AUDIT_LABEL, &mut policy.audit.level, &mut errors);
    read_version(
        labels,
        AUDIT_VERSION_LABEL,
        &mut policy.audit.version,
        &mut errors,
    );
    read_level_open(labels, WARN_LABEL, &mut policy.warn.level, &mut errors);
    read_version(
        labels,
        WARN_VERSION_LABEL,
        &mut policy.warn.version,
        &mut errors,
    );

    let has_warn_level = labels.contains_key(WARN_LABEL);
    if !has_warn_level && valid_enforce_level && policy.enforce.level > policy.warn.level {
        policy.warn.level = policy.enforce.level;
        if !labels.contains_key(WARN_VERSION_LABEL) {
            policy.warn.version = policy.enforce.version;
        }
    }
    (policy, errors)
}

/// A namespace's labels (none when absent or not a map of strings).
pub fn labels_of(object: &serde_json::Value) -> BTreeMap<String, String> {
    object["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn versions_parse_as_upstream() {
        assert_eq!(Version::parse("latest"), Ok(Version::Latest));
        assert_eq!(Version::parse("v1.0"), Ok(Version::Minor(0)));
        assert_eq!(Version::parse("v1.25"), Ok(Version::Minor(25)));
        for bad in ["v1.025", "1.25", "v2.1", "v1.", "v1.x", "Latest", ""] {
            assert_eq!(
                Version::parse(bad),
                Err((Version::Latest, "must be \"latest\" or \"v1.x\"")),
                "{bad}"
            );
        }
        assert_eq!(Version::Minor(99).effective_minor(), NEWEST_MINOR);
        assert_eq!(Version::Latest.to_string(), "latest");
        assert_eq!(
            LevelVersion {
                level: Level::Baseline,
                version: Version::Minor(23)
            }
            .to_string(),
            "baseline:v1.23"
        );
    }

    #[test]
    fn levels_parse_and_order() {
        assert_eq!(Level::parse("baseline"), Ok(Level::Baseline));
        assert_eq!(
            Level::parse("Restricted"),
            Err((
                Level::Restricted,
                "must be one of privileged, baseline, restricted"
            ))
        );
        assert!(Level::Restricted > Level::Baseline && Level::Baseline > Level::Privileged);
    }

    #[test]
    fn warn_follows_a_stricter_enforce_level() {
        let (p, errs) = policy_to_evaluate(
            &labels(&[
                (ENFORCE_LABEL, "baseline"),
                (ENFORCE_VERSION_LABEL, "v1.22"),
            ]),
            Policy::default(),
        );
        assert!(errs.is_empty());
        assert_eq!(p.warn.to_string(), "baseline:v1.22");
        assert_eq!(p.audit.to_string(), "privileged:latest");

        // An explicit warn level or version is kept.
        let (p, _) = policy_to_evaluate(
            &labels(&[(ENFORCE_LABEL, "restricted"), (WARN_VERSION_LABEL, "v1.20")]),
            Policy::default(),
        );
        assert_eq!(p.warn.to_string(), "restricted:v1.20");
        let (p, _) = policy_to_evaluate(
            &labels(&[(ENFORCE_LABEL, "restricted"), (WARN_LABEL, "privileged")]),
            Policy::default(),
        );
        assert_eq!(p.warn.to_string(), "privileged:latest");
    }

    #[test]
    fn bad_labels_fail_closed_for_enforce_and_open_for_audit_and_warn() {
        let (p, errs) = policy_to_evaluate(
            &labels(&[
                (ENFORCE_LABEL, "strict"),
                (AUDIT_LABEL, "loud"),
                (WARN_VERSION_LABEL, "v2"),
            ]),
            Policy::default(),
        );
        assert_eq!(p.enforce.level, Level::Restricted);
        assert_eq!(p.audit.level, Level::Privileged);
        // A bad enforce level does not make warn follow it.
        assert_eq!(p.warn.level, Level::Privileged);
        let messages: Vec<String> = errs.iter().map(Cause::full_message).collect();
        assert_eq!(
            messages,
            [
                "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted",
                "metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: \"loud\": must be one of privileged, baseline, restricted",
                "metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: \"v2\": must be \"latest\" or \"v1.x\"",
            ]
        );
    }

    #[test]
    fn privileged_policies_are_equivalent_at_any_version() {
        let mut a = Policy::default();
        a.enforce.version = Version::Minor(20);
        assert!(a.equivalent(&Policy::default()));
        a.enforce.level = Level::Baseline;
        assert!(!a.equivalent(&Policy::default()));
        assert!(!a.fully_privileged());
    }
}
