//! The semver library: `semver("1.2.3-rc.1")` (and `semver(text, true)`, which normalizes a
//! `v` prefix, missing minor and patch numbers and leading zeros), `isSemver`, a version's
//! `major`, `minor`, `patch`, `isGreaterThan`, `isLessThan`, `compareTo`. Parsing and
//! precedence are those of Semantic Versioning 2.0 as the blang/semver package upstream uses
//! implements them; build metadata does not take part in comparisons.

use std::cmp::Ordering;

use cel::common::types::{CelBool, Type, BOOL_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env};

use super::{arg, boolean, fail, int, opaque_val, ordering, text, Out};

pub(in crate::cel) static SEMVER_TYPE: Type = Type::new_unspecified_type("kubernetes.Semver");

/// A prerelease identifier.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pre {
    Number(u64),
    Text(String),
}

/// A version.
#[derive(Clone, Debug)]
pub(in crate::cel) struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
}

/// Versions are equal when they have the same precedence (build metadata aside).
impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.precedence(other) == Ordering::Equal
    }
}

opaque_val!(Semver, SEMVER_TYPE);

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn identifier_chars(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn number(s: &str, what: &str) -> Result<u64, String> {
    if !all_digits(s) {
        return Err(format!("Invalid character(s) found in {what} number {s:?}"));
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(format!(
            "{} number must not contain leading zeroes {s:?}",
            capital(what)
        ));
    }
    s.parse().map_err(|e| format!("{e}"))
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Parses a version strictly.
pub(in crate::cel) fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".to_string());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts[..] else {
        return Err("No Major.Minor.Patch elements found".to_string());
    };
    let mut patch = rest;
    if let Some((p, build)) = patch.split_once('+') {
        for part in build.split('.') {
            if part.is_empty() {
                return Err("Build meta data is empty".to_string());
            }
            if !identifier_chars(part) {
                return Err(format!(
                    "Invalid character(s) found in build meta data {part:?}"
                ));
            }
        }
        patch = p;
    }
    let mut pre = Vec::new();
    if let Some((p, prerelease)) = patch.split_once('-') {
        for part in prerelease.split('.') {
            if part.is_empty() {
                return Err("Prerelease is empty".to_string());
            }
            if all_digits(part) {
                if part.len() > 1 && part.starts_with('0') {
                    return Err(format!(
                        "Numeric PreRelease version must not contain leading zeroes {part:?}"
                    ));
                }
                pre.push(Pre::Number(part.parse().map_err(|e| format!("{e}"))?));
            } else if identifier_chars(part) {
                pre.push(Pre::Text(part.to_string()));
            } else {
                return Err(format!("Invalid character(s) found in prerelease {part:?}"));
            }
        }
        patch = p;
    }
    Ok(Semver {
        major: number(major, "major")?,
        minor: number(minor, "minor")?,
        patch: number(patch, "patch")?,
        pre,
    })
}

/// Parses after normalizing as upstream's normalizeAndParse does.
fn parse_normalized(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() > 1 {
                let trimmed = p.trim_start_matches('0');
                if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                    return format!("0{trimmed}");
                }
                return trimmed.to_string();
            }
            p.to_string()
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_string());
        }
        parts.resize(3, "0".to_string());
    }
    parse(&parts.join("."))
}

impl Semver {
    fn precedence(&self, other: &Semver) -> Ordering {
        let core =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let order = match (a, b) {
                (Pre::Number(a), Pre::Number(b)) => a.cmp(b),
                (Pre::Number(_), Pre::Text(_)) => Ordering::Less,
                (Pre::Text(_), Pre::Number(_)) => Ordering::Greater,
                (Pre::Text(a), Pre::Text(b)) => a.cmp(b),
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let v = || SEMVER_TYPE.to_owned();
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], to_semver)?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        to_semver,
    )?;
    env.add_overload("isSemver", "is_semver", vec![STRING_TYPE], is_semver)?;
    env.add_overload(
        "isSemver",
        "is_semver_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        is_semver,
    )?;
    env.add_member_overload("major", "semver_major", v(), vec![], |a| {
        int(as_i64(arg::<Semver>("major", &a, 0)?.major))
    })?;
    env.add_member_overload("minor", "semver_minor", v(), vec![], |a| {
        int(as_i64(arg::<Semver>("minor", &a, 0)?.minor))
    })?;
    env.add_member_overload("patch", "semver_patch", v(), vec![], |a| {
        int(as_i64(arg::<Semver>("patch", &a, 0)?.patch))
    })?;
    env.add_member_overload(
        "isGreaterThan",
        "semver_is_greater_than",
        v(),
        vec![v()],
        |a| boolean(order("isGreaterThan", &a)? == Ordering::Greater),
    )?;
    env.add_member_overload("isLessThan", "semver_is_less_than", v(), vec![v()], |a| {
        boolean(order("isLessThan", &a)? == Ordering::Less)
    })?;
    env.add_member_overload("compareTo", "semver_compare_to", v(), vec![v()], |a| {
        ordering(order("compareTo", &a)?)
    })?;
    Ok(())
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn order(function: &str, args: &[CowVal<'_, '_>]) -> Result<Ordering, cel::ExecutionError> {
    let a = arg::<Semver>(function, args, 0)?;
    let b = arg::<Semver>(function, args, 1)?;
    Ok(a.precedence(b))
}

/// The version of `semver(text)` or `semver(text, normalize)`.
fn version(
    function: &str,
    args: &[CowVal<'_, '_>],
) -> Result<Result<Semver, String>, cel::ExecutionError> {
    let s = text(function, args, 0)?;
    let normalize = match args.len() {
        2 => bool::from(*arg::<CelBool>(function, args, 1)?),
        _ => false,
    };
    Ok(if normalize {
        parse_normalized(s)
    } else {
        parse(s)
    })
}

fn to_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    match version("semver", &args)? {
        Ok(v) => Ok(CowVal::owned(v)),
        Err(e) => Err(fail("semver", e)),
    }
}

fn is_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(version("isSemver", &args)?.is_ok())
}
