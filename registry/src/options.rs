//! Request options as the API carries them (query parameters or a body), and their upstream
//! validation.

use serde::Deserialize;
use storage::ReadRevision;

use crate::error::{Cause, Qualified, RegistryError, Result};

fn options_error(kind: &str, causes: Vec<Cause>) -> RegistryError {
    RegistryError::invalid(&Qualified::new("meta.k8s.io", kind), "", causes)
}

fn validate_dry_run(values: &[String], kind: &str) -> Result<bool> {
    for v in values {
        if v != "All" {
            return Err(options_error(
                kind,
                vec![Cause::not_supported("dryRun", v, &["All"])],
            ));
        }
    }
    Ok(!values.is_empty())
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PreconditionsSpec {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// metav1.DeleteOptions.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub preconditions: Option<PreconditionsSpec>,
    pub orphan_dependents: Option<bool>,
    pub propagation_policy: Option<String>,
    #[serde(default)]
    pub dry_run: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

impl DeleteOptions {
    /// Upstream's ValidateDeleteOptions, plus its normalisation of negative grace periods.
    pub fn validate(&mut self) -> Result<()> {
        let mut causes = Vec::new();
        if self.orphan_dependents.is_some() && self.propagation_policy.is_some() {
            causes.push(Cause::invalid(
                "propagationPolicy",
                format!(
                    "\"{}\"",
                    self.propagation_policy.clone().unwrap_or_default()
                ),
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        if let Some(p) = &self.propagation_policy {
            if !matches!(p.as_str(), "Orphan" | "Background" | "Foreground") {
                causes.push(Cause::not_supported(
                    "propagationPolicy",
                    p,
                    &["Foreground", "Background", "Orphan", "nil"],
                ));
            }
        }
        if !causes.is_empty() {
            return Err(options_error("DeleteOptions", causes));
        }
        validate_dry_run(&self.dry_run, "DeleteOptions")?;
        // Negative grace periods mean "as soon as possible", upstream treats them as 1s.
        if self.grace_period_seconds.is_some_and(|g| g < 0) {
            self.grace_period_seconds = Some(1);
        }
        Ok(())
    }

    pub fn is_dry_run(&self) -> bool {
        !self.dry_run.is_empty()
    }

    pub fn propagation(&self) -> Option<Propagation> {
        match self.propagation_policy.as_deref() {
            Some("Orphan") => Some(Propagation::Orphan),
            Some("Background") => Some(Propagation::Background),
            Some("Foreground") => Some(Propagation::Foreground),
            _ => None,
        }
    }
}

/// What to do with unknown or duplicate fields in a write (metav1 fieldValidation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and tell the client in Warning headers (upstream's default).
    #[default]
    Warn,
    /// Refuse the request.
    Strict,
}

impl FieldValidation {
    pub fn parse(value: Option<&str>) -> Result<Self> {
        match value {
            None | Some("") | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(RegistryError::BadRequest(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got: {other:?}"
            ))),
        }
    }
}

/// Options of create, update and patch.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    pub dry_run: Vec<String>,
    pub field_manager: Option<String>,
    pub field_validation: FieldValidation,
    /// Strict decoding errors the body's decoder found (`duplicate field "spec.replicas"`):
    /// the registry judges them with the unknown fields it finds, listing them first.
    pub decode_errors: Vec<String>,
}

impl WriteOptions {
    pub fn validate(&self) -> Result<bool> {
        validate_dry_run(&self.dry_run, "CreateOptions")
    }
}

/// List, get and watch options (metav1.ListOptions / GetOptions).
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: i64,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub allow_watch_bookmarks: bool,
    pub send_initial_events: Option<bool>,
}

pub fn parse_resource_version(rv: &str) -> Result<i64> {
    rv.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| RegistryError::BadRequest(format!("invalid resource version: \"{rv}\"")))
}

impl ListOptions {
    /// The storage read this list asks for (upstream's resourceVersion semantics).
    pub fn read_revision(&self) -> Result<ReadRevision> {
        let rv = self.resource_version.as_deref().filter(|r| !r.is_empty());
        let matching = self
            .resource_version_match
            .as_deref()
            .filter(|m| !m.is_empty());
        match (rv, matching) {
            (None, None) => Ok(ReadRevision::Latest),
            (None, Some(_)) => Err(options_error(
                "ListOptions",
                vec![Cause::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )],
            )),
            (Some("0"), None) => Ok(ReadRevision::Any),
            (Some(rv), None) => Ok(ReadRevision::NotOlderThan(parse_resource_version(rv)?)),
            (Some(rv), Some("NotOlderThan")) => match parse_resource_version(rv)? {
                0 => Ok(ReadRevision::Any),
                n => Ok(ReadRevision::NotOlderThan(n)),
            },
            (Some(rv), Some("Exact")) => match parse_resource_version(rv)? {
                0 => Err(options_error(
                    "ListOptions",
                    vec![Cause::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    )],
                )),
                n => Ok(ReadRevision::Exact(n)),
            },
            (Some(_), Some(other)) => Err(options_error(
                "ListOptions",
                vec![Cause::not_supported(
                    "resourceVersionMatch",
                    other,
                    &["Exact", "NotOlderThan", ""],
                )],
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(rv: Option<&str>, m: Option<&str>) -> ListOptions {
        ListOptions {
            resource_version: rv.map(Into::into),
            resource_version_match: m.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn resource_version_semantics() {
        assert_eq!(
            list(None, None).read_revision().ok(),
            Some(ReadRevision::Latest)
        );
        assert_eq!(
            list(Some("0"), None).read_revision().ok(),
            Some(ReadRevision::Any)
        );
        assert_eq!(
            list(Some("7"), None).read_revision().ok(),
            Some(ReadRevision::NotOlderThan(7))
        );
        assert_eq!(
            list(Some("7"), Some("Exact")).read_revision().ok(),
            Some(ReadRevision::Exact(7))
        );
        assert!(list(None, Some("Exact")).read_revision().is_err());
        assert!(list(Some("x"), None).read_revision().is_err());
        assert!(list(Some("0"), Some("Exact")).read_revision().is_err());
    }

    #[test]
    fn delete_options_validation() {
        let mut both = DeleteOptions {
            orphan_dependents: Some(true),
            propagation_policy: Some("Foreground".into()),
            ..Default::default()
        };
        assert_eq!(both.validate().map_err(|e| e.code()).err(), Some(422));
        let mut bad = DeleteOptions {
            propagation_policy: Some("Sideways".into()),
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        let mut negative = DeleteOptions {
            grace_period_seconds: Some(-5),
            ..Default::default()
        };
        negative.validate().expect("valid");
        assert_eq!(negative.grace_period_seconds, Some(1));
        let mut dry = DeleteOptions {
            dry_run: vec!["Some".into()],
            ..Default::default()
        };
        assert!(dry.validate().is_err());
    }
}
