//! Upstream's name and label syntax rules (k8s.io/apimachinery util/validation, api/validation
//! and api/validation/path, as of the Kubernetes version this server follows), returning
//! upstream's exact message texts so clients see the same errors as from kube-apiserver.

use rand::Rng;

pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Upstream's SimpleNameGenerator: names are at most 63 bytes, 5 of them random.
pub const MAX_GENERATED_NAME_LENGTH: usize = 58;
const RANDOM_LENGTH: usize = 5;
/// Upstream's util/rand alphabet: no vowels (no accidental words) and no look-alikes (0/1/3).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// "must be no more than N characters" (upstream's MaxLenError).
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// Upstream's RegexError, including its odd `',  or '` spacing between examples, which clients
/// may match on.
pub fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{regex}')");
    }
    let mut out = format!("{message} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{regex}')"));
    out
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            edge(first) && edge(last) && b.iter().all(|&c| edge(c) || c == b'-')
        }
        _ => false,
    }
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1035_label(s: &str) -> bool {
    s.as_bytes().first().is_some_and(u8::is_ascii_lowercase) && matches_dns1123_label(s)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// A DNS (RFC 1123) label: namespace names and most single-segment names.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            // A valid subdomain that is not a valid label can only be failing on its dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// A DNS (RFC 1123) subdomain: the name rule of most resources.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// A DNS (RFC 1035) label: service names.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// A qualified name (label and annotation keys, finalizers): `[prefix/]name`, the prefix a DNS
/// subdomain, the name at most 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// A label value: empty, or at most 63 alphanumerics with `-_.` inside.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Whether `name` can be a path segment of the REST API and the storage key (upstream's
/// ValidatePathSegmentName). With `prefix` (a generateName), only the substrings are checked,
/// since a suffix will follow.
pub fn path_segment_name(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for illegal in [".", ".."] {
            if name == illegal {
                return vec![format!("may not be '{illegal}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|illegal| name.contains(*illegal))
        .map(|illegal| format!("may not contain '{illegal}'"))
        .collect()
}

/// A generateName may end in '-' (the random suffix follows), so upstream checks it with that
/// dash masked. Upstream replaces the last two bytes by 'a'; when the byte before the dash is
/// part of a multi-byte character we keep that character, which fails the rule regardless.
fn mask_trailing_dash(name: &str) -> String {
    let Some(stem) = name.strip_suffix('-') else {
        return name.to_string();
    };
    if stem.is_empty() {
        return name.to_string();
    }
    match stem.char_indices().last() {
        Some((i, c)) if c.is_ascii() => format!("{}a", &stem[..i]),
        _ => format!("{stem}a"),
    }
}

/// The name rule of resources named as DNS subdomains (upstream's NameIsDNSSubdomain).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_dns1123_subdomain(&mask_trailing_dash(name));
    }
    is_dns1123_subdomain(name)
}

/// The name rule of resources named as DNS labels, e.g. namespaces (NameIsDNSLabel).
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_dns1123_label(&mask_trailing_dash(name));
    }
    is_dns1123_label(name)
}

/// The name rule of resources named as RFC 1035 labels, e.g. services (NameIsDNS1035Label).
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        return is_dns1035_label(&mask_trailing_dash(name));
    }
    is_dns1035_label(name)
}

/// A name from `metadata.generateName`: the base cut to 58 bytes, then 5 random characters.
/// Upstream cuts at a byte; we cut at the char boundary at or below it so the result stays a
/// string (such a name fails validation either way).
pub fn generate_name(base: &str) -> String {
    let mut cut = base.len().min(MAX_GENERATED_NAME_LENGTH);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut rng = rand::rng();
    let mut name = String::with_capacity(cut + RANDOM_LENGTH);
    name.push_str(&base[..cut]);
    for _ in 0..RANDOM_LENGTH {
        name.push(char::from(
            NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())],
        ));
    }
    name
}
