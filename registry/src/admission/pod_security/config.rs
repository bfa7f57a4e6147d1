//! The plugin's PodSecurityConfiguration (upstream's pod-security-admission/admission/api):
//! the policy of namespaces without labels (`defaults`, privileged:latest for every mode
//! unless set) and who or what is exempt (`exemptions`). It comes from the `PodSecurity`
//! entry of `--admission-control-config-file`; a bad one fails start with upstream's errors.

use serde::Deserialize;
use serde_json::Value;

use super::levels::{Level, LevelVersion, Policy, Version};
use crate::admission::PluginConfigError;
use crate::error::{aggregate, Cause};
use crate::validation::names::{is_dns1123_label, is_dns1123_subdomain};
use crate::validation::quote;

const GROUP: &str = "pod-security.admission.config.k8s.io";
const VERSIONS: [&str; 3] = ["v1", "v1beta1", "v1alpha1"];
const KIND: &str = "PodSecurityConfiguration";

/// The configuration the plugin runs with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    pub defaults: Policy,
    pub exemptions: Exemptions,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exemptions {
    pub usernames: Vec<String>,
    pub namespaces: Vec<String>,
    pub runtime_classes: Vec<String>,
}

impl Exemptions {
    pub fn user(&self, name: &str) -> bool {
        !name.is_empty() && self.usernames.iter().any(|u| u == name)
    }

    pub fn namespace(&self, name: &str) -> bool {
        !name.is_empty() && self.namespaces.iter().any(|n| n == name)
    }

    pub fn runtime_class(&self, name: Option<&str>) -> bool {
        name.is_some_and(|n| !n.is_empty() && self.runtime_classes.iter().any(|c| c == n))
    }
}

/// The file's form (every version has the same fields).
#[derive(Deserialize, Default)]
#[serde(default)]
struct File {
    defaults: Defaults,
    exemptions: FileExemptions,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Defaults {
    enforce: String,
    #[serde(rename = "enforce-version")]
    enforce_version: String,
    audit: String,
    #[serde(rename = "audit-version")]
    audit_version: String,
    warn: String,
    #[serde(rename = "warn-version")]
    warn_version: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct FileExemptions {
    usernames: Vec<String>,
    namespaces: Vec<String>,
    runtime_classes: Vec<String>,
}

fn or_default(value: &str, default: &'static str) -> String {
    match value {
        "" => default.to_string(),
        v => v.to_string(),
    }
}

impl Config {
    /// Reads the plugin's configuration: none (or an empty one) is upstream's defaults.
    pub fn parse(data: Option<&[u8]>) -> Result<Config, PluginConfigError> {
        let data = match data {
            Some(d) if !d.iter().all(u8::is_ascii_whitespace) => d,
            _ => return Ok(Config::default()),
        };
        let bad = |message: String| PluginConfigError::Configuration {
            plugin: "PodSecurity",
            message,
        };
        let value: Value = serde_yaml_ng::from_slice(data).map_err(|e| bad(e.to_string()))?;
        let api_version = value["apiVersion"].as_str().unwrap_or_default();
        let kind = value["kind"].as_str().unwrap_or_default();
        if kind.is_empty() {
            return Err(bad("Object 'Kind' is missing in the configuration".into()));
        }
        let known = api_version
            .strip_prefix(GROUP)
            .and_then(|v| v.strip_prefix('/'))
            .is_some_and(|v| VERSIONS.contains(&v));
        if !known || kind != KIND {
            return Err(bad(format!(
                "no kind {} is registered for version {} in scheme \"k8s.io/pod-security-admission/admission/api/scheme\"",
                quote(kind),
                quote(api_version)
            )));
        }
        let file: File = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        let d = &file.defaults;
        let defaults = to_policy(&[
            ("enforce", or_default(&d.enforce, "privileged")),
            ("enforce-version", or_default(&d.enforce_version, "latest")),
            ("audit", or_default(&d.audit, "privileged")),
            ("audit-version", or_default(&d.audit_version, "latest")),
            ("warn", or_default(&d.warn, "privileged")),
            ("warn-version", or_default(&d.warn_version, "latest")),
        ])?;
        let e = file.exemptions;
        let errors = validate_exemptions(&e);
        if !errors.is_empty() {
            let messages: Vec<String> = errors.iter().map(Cause::full_message).collect();
            return Err(PluginConfigError::Invalid {
                plugin: "PodSecurity",
                message: aggregate(&messages),
            });
        }
        Ok(Config {
            defaults,
            exemptions: Exemptions {
                usernames: e.usernames,
                namespaces: e.namespaces,
                runtime_classes: e.runtime_classes,
            },
        })
    }
}

/// Upstream's ToPolicy: each default parsed, every error reported as `<field>: <why>`.
fn to_policy(fields: &[(&str, String); 6]) -> Result<Policy, PluginConfigError> {
    let mut errors = Vec::new();
    let mut level = |i: usize| {
        let (name, value) = &fields[i];
        Level::parse(value).unwrap_or_else(|(fallback, why)| {
            errors.push(format!("{name}: {why}"));
            fallback
        })
    };
    let levels = [level(0), level(2), level(4)];
    let mut version = |i: usize| {
        let (name, value) = &fields[i];
        Version::parse(value).unwrap_or_else(|(fallback, why)| {
            errors.push(format!("{name}: {why}"));
            fallback
        })
    };
    let versions = [version(1), version(3), version(5)];
    if !errors.is_empty() {
        // Upstream reports them in field order: enforce, its version, audit, ...
        let order = [
            "enforce",
            "enforce-version",
            "audit",
            "audit-version",
            "warn",
            "warn-version",
        ];
        errors.sort_by_key(|e| order.iter().position(|o| e.starts_with(&format!("{o}: "))));
        return Err(PluginConfigError::Configuration {
            plugin: "PodSecurity",
            message: aggregate(&errors),
        });
    }
    let lv = |i: usize| LevelVersion {
        level: levels[i],
        version: versions[i],
    };
    Ok(Policy {
        enforce: lv(0),
        audit: lv(1),
        warn: lv(2),
    })
}

/// Upstream's ValidatePodSecurityConfiguration of the exemptions: namespaces are namespace
/// names, runtime classes object names, usernames non-empty; none twice.
fn validate_exemptions(e: &FileExemptions) -> Vec<Cause> {
    let mut errors = Vec::new();
    let mut list = |field: &str, items: &[String], check: &dyn Fn(&str) -> Vec<String>| {
        let mut seen: Vec<&str> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let path = format!("exemptions.{field}[{i}]");
            let problems = check(item);
            if !problems.is_empty() {
                errors.push(Cause::invalid(&path, quote(item), &problems.join(", ")));
            } else if seen.contains(&item.as_str()) {
                errors.push(Cause::duplicate(&path, quote(item)));
            } else {
                seen.push(item);
            }
        }
    };
    list("namespaces", &e.namespaces, &|n| is_dns1123_label(n));
    list("runtimeClasses", &e.runtime_classes, &|n| {
        is_dns1123_subdomain(n)
    });
    list("usernames", &e.usernames, &|n| match n {
        "" => vec!["username must not be empty".to_string()],
        _ => Vec::new(),
    });
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_configuration_is_privileged_everywhere_with_no_exemptions() {
        assert_eq!(Config::parse(None).unwrap(), Config::default());
        assert_eq!(Config::parse(Some(b"\n")).unwrap(), Config::default());
        assert!(Config::default().defaults.fully_privileged());
    }

    #[test]
    fn defaults_and_exemptions_are_read_with_unset_modes_defaulted() {
        let config = Config::parse(Some(
            br#"
apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: baseline
  enforce-version: v1.30
  warn: restricted
exemptions:
  usernames: [system:admin]
  namespaces: [kube-system]
  runtimeClasses: [kata]
"#,
        ))
        .unwrap();
        assert_eq!(config.defaults.enforce.to_string(), "baseline:v1.30");
        assert_eq!(config.defaults.warn.to_string(), "restricted:latest");
        assert_eq!(config.defaults.audit.to_string(), "privileged:latest");
        assert!(config.exemptions.user("system:admin") && !config.exemptions.user(""));
        assert!(config.exemptions.namespace("kube-system"));
        assert!(config.exemptions.runtime_class(Some("kata")));
        assert!(!config.exemptions.runtime_class(None));
    }

    #[test]
    fn bad_configurations_are_refused_with_upstreams_errors() {
        let err = |text: &str| {
            Config::parse(Some(text.as_bytes()))
                .unwrap_err()
                .to_string()
        };
        let header =
            "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n";
        assert_eq!(
            err(&format!("{header}defaults: {{enforce: strict, warn-version: v2}}")),
            "PodSecurity configuration error: [enforce: must be one of privileged, baseline, restricted, warn-version: must be \"latest\" or \"v1.x\"]"
        );
        assert_eq!(
            err(&format!("{header}exemptions: {{usernames: [a, a, \"\"], namespaces: [Bad_NS]}}")),
            "PodSecurity invalid: [exemptions.namespaces[0]: Invalid value: \"Bad_NS\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'), exemptions.usernames[1]: Duplicate value: \"a\", exemptions.usernames[2]: Invalid value: \"\": username must not be empty]"
        );
        assert!(err("apiVersion: v1\nkind: Pod\n").starts_with(
            "PodSecurity configuration error: no kind \"Pod\" is registered for version \"v1\""
        ));
        assert!(err("defaults: {}\n").contains("Object 'Kind' is missing"));
    }
}
