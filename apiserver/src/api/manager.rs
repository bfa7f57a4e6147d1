//! The field manager of a write (upstream's managerOrUserAgent and ValidatePatchOptions):
//! the `fieldManager` parameter when given, else the part of the User-Agent before its first
//! `/`; apply requires it and alone may `force`.

use axum::http::{header, HeaderMap};
use registry::options::WriteOptions;
use registry::patch::PatchType;
use registry::{Cause, Qualified, RegistryError};

use super::params::Params;

/// Upstream's FieldManagerMaxLength.
const MAX_LENGTH: usize = 128;

/// The printable prefix of the User-Agent before its first `/`, at most 128 bytes.
fn prefix_from_user_agent(agent: &str) -> String {
    let head = agent.split('/').next().unwrap_or_default();
    let mut out = String::new();
    for c in head.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

fn validate(manager: &str, field: &str, causes: &mut Vec<Cause>) {
    if manager.len() > MAX_LENGTH {
        causes.push(Cause::new(
            "FieldValueTooLong",
            field,
            format!("Too long: may not be more than {MAX_LENGTH} bytes"),
        ));
    }
    for (i, c) in manager.char_indices() {
        if c.is_control() {
            causes.push(Cause::invalid(
                field,
                format!("{manager:?}"),
                &format!("invalid character U+{:04X} (at position {i})", c as u32),
            ));
        }
    }
}

/// The write options of a request: the parameters, `force`, and the manager resolved.
/// `patch` is the patch type of a PATCH.
pub fn write_options(
    params: &Params,
    headers: &HeaderMap,
    patch: Option<PatchType>,
) -> Result<WriteOptions, RegistryError> {
    let mut write = params.write()?;
    let force = params.get("force");
    let mut causes = Vec::new();
    let options_kind = match patch {
        Some(kind) => {
            if kind == PatchType::Apply {
                if write
                    .field_manager
                    .as_deref()
                    .unwrap_or_default()
                    .is_empty()
                {
                    causes.push(Cause::new(
                        "FieldValueRequired",
                        "fieldManager",
                        "Required value: is required for apply patch".into(),
                    ));
                }
            } else if force.is_some() {
                causes.push(Cause::forbidden(
                    "force",
                    "may not be specified for non-apply patch",
                ));
            }
            "PatchOptions"
        }
        None => "UpdateOptions",
    };
    if let Some(manager) = write.field_manager.as_deref() {
        validate(manager, "fieldManager", &mut causes);
    }
    if !causes.is_empty() {
        return Err(RegistryError::invalid(
            &Qualified::new("meta.k8s.io", options_kind),
            "",
            causes,
        ));
    }
    write.force = match force {
        None | Some("false" | "0") => false,
        Some("" | "true" | "1") => true,
        Some(other) => {
            return Err(RegistryError::BadRequest(format!(
                "invalid value for force: {other:?}"
            )))
        }
    };
    if write.field_manager.as_deref().is_none_or(str::is_empty) {
        let agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        write.field_manager = Some(prefix_from_user_agent(agent));
    }
    Ok(write)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        Params(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn agent(ua: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::USER_AGENT, ua.parse().expect("header"));
        h
    }

    #[test]
    fn manager_defaults_to_the_user_agent_prefix() {
        let w = write_options(
            &params(&[]),
            &agent("kubectl/v1.32.4 (linux/amd64) kubernetes/abc"),
            None,
        )
        .expect("options");
        assert_eq!(w.field_manager.as_deref(), Some("kubectl"));
        let w = write_options(&params(&[("fieldManager", "mine")]), &agent("x/1"), None)
            .expect("options");
        assert_eq!(w.field_manager.as_deref(), Some("mine"));
        let long = "a".repeat(300);
        let w = write_options(&params(&[]), &agent(&long), None).expect("options");
        assert_eq!(w.field_manager.map(|m| m.len()), Some(128));
    }

    #[test]
    fn apply_needs_a_manager_and_only_apply_may_force() {
        let e = write_options(&params(&[]), &agent("kubectl/1"), Some(PatchType::Apply))
            .expect_err("no manager");
        assert_eq!(e.code(), 422);
        assert_eq!(
            e.to_string(),
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        let e = write_options(
            &params(&[("force", "true")]),
            &agent("kubectl/1"),
            Some(PatchType::Merge),
        )
        .expect_err("force on a merge patch");
        assert_eq!(
            e.to_string(),
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
        let w = write_options(
            &params(&[("force", "true"), ("fieldManager", "m")]),
            &agent("kubectl/1"),
            Some(PatchType::Apply),
        )
        .expect("apply");
        assert!(w.force);
    }
}
