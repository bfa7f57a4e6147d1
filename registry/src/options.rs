//! Request options as the API carries them (query parameters or a body), and their upstream
//! validation.

use serde::Deserialize;
use storage::ReadRevision;

use crate::error::{Cause, Qualified, RegistryError, Result};

fn options_error(kind: &str, causes: Vec<Cause>) -> RegistryError {
    RegistryError::invalid(&Qualified::new("meta.k8s.io", kind), "", causes)
}

/// The `dryRun` parameter: upstream accepts only `All`, and only once parsed does a write know
/// whether it persists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DryRun {
    /// Persist the write.
    #[default]
    Off,
    /// Run every stage of the write but storing it.
    All,
}

impl DryRun {
    /// Parses the parameter's values (it may repeat), refusing any but `All` with upstream's
    /// error on `kind` (CreateOptions, DeleteOptions...).
    pub fn parse<S: AsRef<str>>(values: &[S], kind: &str) -> Result<Self> {
        if let Some(bad) = values.iter().map(AsRef::as_ref).find(|v| *v != "All") {
            return Err(options_error(
                kind,
                vec![Cause::not_supported("dryRun", bad, &["All"])],
            ));
        }
        Ok(if values.is_empty() {
            Self::Off
        } else {
            Self::All
        })
    }

    pub fn is_all(self) -> bool {
        self == Self::All
    }
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PreconditionsSpec {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// metav1.DeletionPropagation: what becomes of an object's dependents when it is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropagationPolicy {
    /// Dependents lose their reference to the owner and stay.
    Orphan,
    /// The owner goes at once; the garbage collector deletes the dependents afterwards.
    Background,
    /// The owner stays (finalizer `foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
}

impl PropagationPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Orphan => "Orphan",
            Self::Background => "Background",
            Self::Foreground => "Foreground",
        }
    }

    fn parse(value: &str) -> Result<Self, Cause> {
        match value {
            "Orphan" => Ok(Self::Orphan),
            "Background" => Ok(Self::Background),
            "Foreground" => Ok(Self::Foreground),
            other => Err(Cause::not_supported(
                "propagationPolicy",
                other,
                &["Foreground", "Background", "Orphan", "nil"],
            )),
        }
    }
}

/// metav1.DeleteOptions, parsed and validated (see [`DeleteOptions::parse`]).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// Never negative: upstream reads a negative period as "as soon as possible", 1s.
    pub grace_period_seconds: Option<i64>,
    pub preconditions: Option<PreconditionsSpec>,
    /// The legacy form of a propagation policy; never set together with one.
    pub orphan_dependents: Option<bool>,
    pub propagation_policy: Option<PropagationPolicy>,
    pub dry_run: DryRun,
}

/// DeleteOptions as a request carries them (a body or query parameters), before validation.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptionsWire {
    pub grace_period_seconds: Option<i64>,
    pub preconditions: Option<PreconditionsSpec>,
    pub orphan_dependents: Option<bool>,
    pub propagation_policy: Option<String>,
    #[serde(default)]
    pub dry_run: Vec<String>,
}

impl DeleteOptions {
    /// Upstream's ValidateDeleteOptions, with its normalisation of negative grace periods.
    pub fn parse(wire: DeleteOptionsWire) -> Result<Self> {
        let mut causes = Vec::new();
        if let (Some(_), Some(policy)) = (wire.orphan_dependents, &wire.propagation_policy) {
            causes.push(Cause::invalid(
                "propagationPolicy",
                format!("\"{policy}\""),
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        let propagation_policy = match wire
            .propagation_policy
            .as_deref()
            .map(PropagationPolicy::parse)
        {
            Some(Ok(policy)) => Some(policy),
            Some(Err(cause)) => {
                causes.push(cause);
                None
            }
            None => None,
        };
        if !causes.is_empty() {
            return Err(options_error("DeleteOptions", causes));
        }
        Ok(Self {
            grace_period_seconds: wire.grace_period_seconds.map(|g| if g < 0 { 1 } else { g }),
            preconditions: wire.preconditions,
            orphan_dependents: wire.orphan_dependents,
            propagation_policy,
            dry_run: DryRun::parse(&wire.dry_run, "DeleteOptions")?,
        })
    }

    /// Background propagation: what a controller deleting on its own account asks for.
    pub fn background() -> Self {
        Self {
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
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
    pub dry_run: DryRun,
    pub field_manager: Option<String>,
    /// Server-side apply takes fields other managers own instead of failing on them.
    pub force: bool,
    pub field_validation: FieldValidation,
    /// Strict decoding errors the body's decoder found (`duplicate field "spec.replicas"`):
    /// the registry judges them with the unknown fields it finds, listing them first.
    pub decode_errors: Vec<String>,
    /// The user the write is made by (escalation checks judge it); None for in-process
    /// writers.
    pub user: Option<std::sync::Arc<crate::auth::UserInfo>>,
}

impl WriteOptions {
    /// Options of an in-process writer, named as its upstream component's field manager
    /// (`kubelet`, `kube-scheduler`).
    pub fn by(manager: &str) -> Self {
        WriteOptions {
            field_manager: Some(manager.to_string()),
            ..Default::default()
        }
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
    pub resource_version_match: Option<ResourceVersionMatch>,
    pub allow_watch_bookmarks: bool,
    pub send_initial_events: Option<bool>,
}

/// metav1.ResourceVersionMatch: how a list's resourceVersion is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    NotOlderThan,
    Exact,
}

impl ResourceVersionMatch {
    /// The parameter as given; empty means unset, as upstream reads it.
    pub fn parse(value: &str) -> Result<Option<Self>> {
        match value {
            "" => Ok(None),
            "NotOlderThan" => Ok(Some(Self::NotOlderThan)),
            "Exact" => Ok(Some(Self::Exact)),
            other => Err(options_error(
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

pub fn parse_resource_version(rv: &str) -> Result<i64> {
    rv.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| RegistryError::BadRequest(format!("invalid resource version: \"{rv}\"")))
}

impl ListOptions {
    /// resourceVersion="0": whatever state the watch cache holds, no store read.
    pub fn any() -> Self {
        Self {
            resource_version: Some("0".into()),
            ..Default::default()
        }
    }

    /// The storage read this list asks for (upstream's resourceVersion semantics).
    pub fn read_revision(&self) -> Result<ReadRevision> {
        let rv = self.resource_version.as_deref().filter(|r| !r.is_empty());
        match (rv, self.resource_version_match) {
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
            (Some(rv), Some(ResourceVersionMatch::NotOlderThan)) => {
                match parse_resource_version(rv)? {
                    0 => Ok(ReadRevision::Any),
                    n => Ok(ReadRevision::NotOlderThan(n)),
                }
            }
            (Some(rv), Some(ResourceVersionMatch::Exact)) => match parse_resource_version(rv)? {
                0 => Err(options_error(
                    "ListOptions",
                    vec![Cause::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    )],
                )),
                n => Ok(ReadRevision::Exact(n)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(rv: Option<&str>, m: Option<&str>) -> ListOptions {
        ListOptions {
            resource_version: rv.map(Into::into),
            resource_version_match: m.and_then(|m| ResourceVersionMatch::parse(m).ok().flatten()),
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
        let both = DeleteOptionsWire {
            orphan_dependents: Some(true),
            propagation_policy: Some("Foreground".into()),
            ..Default::default()
        };
        assert_eq!(
            DeleteOptions::parse(both).map_err(|e| e.code()).err(),
            Some(422)
        );
        let bad = DeleteOptionsWire {
            propagation_policy: Some("Sideways".into()),
            ..Default::default()
        };
        assert!(DeleteOptions::parse(bad).is_err());
        let negative = DeleteOptionsWire {
            grace_period_seconds: Some(-5),
            ..Default::default()
        };
        let negative = DeleteOptions::parse(negative).expect("valid");
        assert_eq!(negative.grace_period_seconds, Some(1));
        let dry = DeleteOptionsWire {
            dry_run: vec!["Some".into()],
            ..Default::default()
        };
        assert!(DeleteOptions::parse(dry).is_err());
    }

    #[test]
    fn unknown_resource_version_match_is_not_supported() {
        let err = ResourceVersionMatch::parse("Sometimes").map_err(|e| e.code());
        assert_eq!(err.err(), Some(422));
        assert_eq!(ResourceVersionMatch::parse("").ok(), Some(None));
    }
}
