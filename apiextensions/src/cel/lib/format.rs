//! The format library: named string formats, `format.dns1123Label()` and the like or
//! `format.named("dns1123Label")` (an optional: none for an unknown name), and a format's
//! `validate(text)`: `optional.none()` when the text is valid, else the list of what is wrong
//! with it. The name formats are the registry's own name validation.

use base64::Engine;
use cel::common::types::{CelList, CelOptional, CelString, Type, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env};
use registry::validation as names;

use super::{arg, fail, text, Out};

pub(in crate::cel) static FORMAT_TYPE: Type = Type::new_unspecified_type("kubernetes.NamedFormat");

/// A named format.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::cel) struct Format(usize);

super::opaque_val!(Format, FORMAT_TYPE);

type Validate = fn(&str) -> Vec<String>;

/// The formats: the name `format.<name>()` and `format.named` know them by, and how they
/// validate.
const FORMATS: &[(&str, Validate)] = &[
    ("dns1123Label", |s| names::name_is_dns_label(s, false)),
    ("dns1123Subdomain", |s| {
        names::name_is_dns_subdomain(s, false)
    }),
    ("dns1035Label", |s| names::name_is_dns1035_label(s, false)),
    ("qualifiedName", names::is_qualified_name),
    ("dns1123LabelPrefix", |s| names::name_is_dns_label(s, true)),
    ("dns1123SubdomainPrefix", |s| {
        names::name_is_dns_subdomain(s, true)
    }),
    ("dns1035LabelPrefix", |s| {
        names::name_is_dns1035_label(s, true)
    }),
    ("labelValue", names::is_valid_label_value),
    ("uri", uri),
    ("uuid", uuid),
    ("byte", byte),
    ("date", date),
    ("datetime", datetime),
];

fn uri(s: &str) -> Vec<String> {
    match super::url::parse_request_uri(s) {
        Ok(_) => Vec::new(),
        Err(e) => vec![e],
    }
}

/// strfmt's uuid: 8-4-4-4-12 hex digits, or 32 without dashes, any case.
fn uuid(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let hex = |range: &[u8]| range.iter().all(u8::is_ascii_hexdigit);
    let dashed = b.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && hex(&b[..8])
        && hex(&b[9..13])
        && hex(&b[14..18])
        && hex(&b[19..23])
        && hex(&b[24..]);
    let plain = b.len() == 32 && hex(b);
    if dashed || plain {
        Vec::new()
    } else {
        vec!["does not match the UUID format".to_string()]
    }
}

fn byte(s: &str) -> Vec<String> {
    match base64::engine::general_purpose::STANDARD.decode(s) {
        Ok(_) => Vec::new(),
        Err(_) => vec!["invalid base64".to_string()],
    }
}

fn date(s: &str) -> Vec<String> {
    let shaped = s.len() == 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[7] == b'-';
    if shaped && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() {
        Vec::new()
    } else {
        vec!["invalid date".to_string()]
    }
}

fn datetime(s: &str) -> Vec<String> {
    if chrono::DateTime::parse_from_rfc3339(s).is_ok() {
        Vec::new()
    } else {
        vec!["invalid datetime".to_string()]
    }
}

/// The names of the formats, for the checker.
pub(in crate::cel) fn names() -> impl Iterator<Item = &'static str> {
    FORMATS.iter().map(|(name, _)| *name)
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    for (i, (name, _)) in FORMATS.iter().enumerate() {
        env.add_overload(
            &format!("format.{name}"),
            &format!("format_{name}"),
            vec![],
            CONSTANTS[i],
        )?;
    }
    env.add_overload("format.named", "format_named", vec![STRING_TYPE], named)?;
    env.add_member_overload(
        "validate",
        "format_validate",
        FORMAT_TYPE.to_owned(),
        vec![STRING_TYPE],
        validate,
    )?;
    Ok(())
}

type Constant = for<'b, 'v> fn(Vec<CowVal<'b, 'v>>) -> Out<'b, 'v>;

/// `format.<name>()`, one function per format (overloads are plain fns, with no data).
const CONSTANTS: [Constant; 13] = [
    |_| Ok(CowVal::owned(Format(0))),
    |_| Ok(CowVal::owned(Format(1))),
    |_| Ok(CowVal::owned(Format(2))),
    |_| Ok(CowVal::owned(Format(3))),
    |_| Ok(CowVal::owned(Format(4))),
    |_| Ok(CowVal::owned(Format(5))),
    |_| Ok(CowVal::owned(Format(6))),
    |_| Ok(CowVal::owned(Format(7))),
    |_| Ok(CowVal::owned(Format(8))),
    |_| Ok(CowVal::owned(Format(9))),
    |_| Ok(CowVal::owned(Format(10))),
    |_| Ok(CowVal::owned(Format(11))),
    |_| Ok(CowVal::owned(Format(12))),
];

fn named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let name = text("format.named", &args, 0)?;
    let found = FORMATS.iter().position(|(n, _)| *n == name);
    Ok(CowVal::owned(match found {
        Some(i) => CelOptional::of(Box::new(Format(i))),
        None => CelOptional::none(),
    }))
}

fn validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let format = arg::<Format>("validate", &args, 0)?;
    let value = text("validate", &args, 1)?;
    let (_, check) = FORMATS
        .get(format.0)
        .ok_or_else(|| fail("validate", "unknown format"))?;
    let errors = check(value);
    if errors.is_empty() {
        return Ok(CowVal::owned(CelOptional::none()));
    }
    let list: Vec<Box<dyn Val + 'v>> = errors
        .into_iter()
        .map(|e| Box::new(CelString::from(e)) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelOptional::of(Box::new(CelList::from(
        list,
    )))))
}
