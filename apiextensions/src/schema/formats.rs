//! The string formats upstream checks in CRD schemas (its supported list, checked as
//! kube-openapi's strfmt registry checks them). Other formats, int32 and int64 included, are
//! stripped before validation upstream and so assert nothing here.

use std::net::IpAddr;

/// A format check.
pub(super) type Check = fn(&str) -> bool;

/// The check for a format name, after upstream's normalization (dashes removed).
pub(super) fn checker(normalized: &str) -> Option<Check> {
    Some(match normalized {
        "bsonobjectid" => |s| s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri,
        "email" => is_email,
        "hostname" => is_hostname,
        "ipv4" => |s| s.parse::<IpAddr>().is_ok() && s.contains('.'),
        "ipv6" => |s| s.parse::<IpAddr>().is_ok() && s.contains(':'),
        "cidr" => is_cidr,
        "mac" => is_mac,
        "uuid" => |s| is_uuid(s, None),
        "uuid3" => |s| is_uuid(s, Some(b'3')),
        "uuid4" => |s| is_uuid(s, Some(b'4')),
        "uuid5" => |s| is_uuid(s, Some(b'5')),
        "isbn" => |s| is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10,
        "isbn13" => is_isbn13,
        "creditcard" => is_credit_card,
        "ssn" => is_ssn,
        "hexcolor" => is_hex_color,
        "rgbcolor" => is_rgb_color,
        "byte" => is_base64,
        "password" => |_| true,
        "date" => is_date,
        "duration" => is_duration,
        "datetime" => is_date_time,
        _ => return None,
    })
}

/// Go's url.ParseRequestURI succeeding: an absolute URI or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    let rest = match scheme_end(s) {
        Err(()) => return false,
        Ok(Some(end)) => &s[end + 1..],
        Ok(None) => {
            if !s.starts_with('/') {
                return false;
            }
            s
        }
    };
    let has_scheme = rest.len() != s.len();
    let rest = rest.split_once('?').map_or(rest, |(r, _)| r);
    if has_scheme && !rest.starts_with('/') {
        return true;
    }
    let path = match rest.strip_prefix("//").filter(|_| has_scheme) {
        Some(after) => {
            let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
            if !valid_authority(authority) {
                return false;
            }
            path
        }
        None => rest,
    };
    valid_escapes(path)
}

/// Where the scheme's colon is: None when there is no scheme, Err when the colon comes first.
fn scheme_end(s: &str) -> Result<Option<usize>, ()> {
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err(()),
            ':' => return Ok(Some(i)),
            _ => return Ok(None),
        }
    }
    Ok(None)
}

fn valid_authority(authority: &str) -> bool {
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((_, after)) => after.strip_prefix(':'),
            None => return false,
        }
    } else {
        host.rsplit_once(':').map(|(_, p)| p)
    };
    port.is_none_or(|p| p.bytes().all(|b| b.is_ascii_digit())) && valid_escapes(host)
}

fn valid_escapes(s: &str) -> bool {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !hex(i + 1) || !hex(i + 2) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

/// Roughly Go's net/mail.ParseAddress: `local@domain`, optionally as `Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = match (s.rfind('<'), s.strip_suffix('>')) {
        (Some(open), Some(inner)) => &inner[open + 1..],
        (None, None) => s,
        _ => return false,
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    let atext = |c: char| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii();
    let dot_atom = |part: &str| {
        !part.is_empty()
            && part
                .split('.')
                .all(|w| !w.is_empty() && w.chars().all(atext))
    };
    let quoted = local.len() >= 2 && local.starts_with('"') && local.ends_with('"');
    let literal = domain.starts_with('[') && domain.ends_with(']');
    (quoted || dot_atom(local)) && (literal || dot_atom(domain))
}

/// kube-openapi's hostname: its pattern (one label, or dotted labels ending in a label of at
/// least two characters), at most 255 bytes, labels at most 63 bytes.
fn is_hostname(s: &str) -> bool {
    if s.len() > 255 || s.split('.').any(|label| label.len() > 63) {
        return false;
    }
    // Letters, digits and symbols (\p{L}, \p{S}); non-ASCII ones are taken as either.
    let ok = |c: char| {
        c.is_ascii_alphanumeric()
            || "$+<=>^`|~".contains(c)
            || (!c.is_ascii() && !c.is_whitespace() && !c.is_control())
    };
    let labels: Vec<&str> = s.split('.').collect();
    let Some((last, rest)) = labels.split_last() else {
        return false;
    };
    if rest.is_empty() {
        // A single label: one character, an optional dash, then up to 62 more.
        let mut chars = last.chars();
        if !chars.next().is_some_and(ok) {
            return false;
        }
        let tail: &str = chars.as_str();
        let tail = tail.strip_prefix('-').unwrap_or(tail);
        return tail.chars().count() <= 62 && tail.chars().all(ok);
    }
    let inner_label = |label: &str| {
        let chars: Vec<char> = label.chars().collect();
        match chars.as_slice() {
            [only] => ok(*only),
            [first, middle @ .., end] => {
                ok(*first)
                    && ok(*end)
                    && middle.len() <= 61
                    && middle.iter().all(|c| ok(*c) || *c == '-')
            }
            [] => false,
        }
    };
    // The last label: no leading, trailing or doubled dash, two characters at least.
    let chars: Vec<char> = last.chars().collect();
    let last_ok = chars.len() >= 2
        && chars.first().is_some_and(|c| ok(*c))
        && chars.last().is_some_and(|c| ok(*c))
        && chars.iter().all(|c| ok(*c) || *c == '-')
        && !last.contains("--");
    rest.iter().all(|l| inner_label(l)) && last_ok
}

/// Go's net.ParseCIDR.
fn is_cidr(s: &str) -> bool {
    let Some((addr, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(ip) = addr.parse::<IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|n| n <= max)
}

/// Go's net.ParseMAC: 6, 8 or 20 octets as `01:23:...`, `01-23-...` or `0123.4567...`.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 14 {
        return false;
    }
    let hex2 = |x: &[u8]| x.len() >= 2 && x[0].is_ascii_hexdigit() && x[1].is_ascii_hexdigit();
    let octets_ok = |n: usize| n == 6 || n == 8 || n == 20;
    if b[2] == b':' || b[2] == b'-' {
        let sep = b[2];
        if !(b.len() + 1).is_multiple_of(3) || !octets_ok((b.len() + 1) / 3) {
            return false;
        }
        return b
            .chunks(3)
            .all(|c| hex2(c) && (c.len() == 2 || c[2] == sep));
    }
    if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) || !octets_ok(2 * (b.len() + 1) / 5) {
            return false;
        }
        return b
            .chunks(5)
            .all(|c| hex2(c) && hex2(&c[2..]) && (c.len() == 4 || c[4] == b'.'));
    }
    false
}

/// kube-openapi's UUID patterns: hex groups of 8-4-4-4-12, dashes optional, any case; a
/// version digit leads the third group, and v4/v5 need a variant of 8, 9, a or b.
fn is_uuid(s: &str, version: Option<u8>) -> bool {
    if !s.is_ascii() {
        return false;
    }
    let groups: Vec<&str> = if s.len() == 32 {
        vec![&s[..8], &s[8..12], &s[12..16], &s[16..20], &s[20..]]
    } else {
        s.split('-').collect()
    };
    let lengths = [8, 4, 4, 4, 12];
    if groups.len() != 5
        || groups.iter().zip(lengths).any(|(g, n)| g.len() != n)
        || !groups
            .iter()
            .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return false;
    }
    let Some(version) = version else {
        return true;
    };
    let variant_ok = version == b'3'
        || matches!(
            groups[3].as_bytes()[0].to_ascii_lowercase(),
            b'8' | b'9' | b'a' | b'b'
        );
    groups[2].as_bytes()[0] == version && variant_ok
}

fn isbn_digits(s: &str) -> String {
    s.chars().filter(|c| *c != ' ' && *c != '-').collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 10 || !b[..9].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let last = match b[9] {
        b'X' => 10,
        c if c.is_ascii_digit() => u32::from(c - b'0'),
        _ => return false,
    };
    let sum: u32 = (0..9)
        .map(|i| (i as u32 + 1) * u32::from(b[i] - b'0'))
        .sum::<u32>()
        + 10 * last;
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = (0..12)
        .map(|i| if i % 2 == 0 { 1 } else { 3 } * u32::from(b[i] - b'0'))
        .sum();
    u32::from(b[12] - b'0') == (10 - sum % 10) % 10
}

/// govalidator's credit card check, simplified: 12 to 19 digits (spaces and dashes aside)
/// passing the Luhn checksum.
fn is_credit_card(s: &str) -> bool {
    let digits: Vec<u32> = s
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_digit(10))
        .collect::<Option<Vec<u32>>>()
        .unwrap_or_default();
    if !(12..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| match (i % 2, d * 2) {
            (1, doubled) if doubled > 9 => doubled - 9,
            (1, doubled) => doubled,
            _ => *d,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// `ddd-dd-dddd` (or spaces) in exactly 11 characters.
fn is_ssn(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 11
        && [0, 1, 2, 4, 5, 7, 8, 9, 10]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
        && matches!(b[3], b'-' | b' ')
        && matches!(b[6], b'-' | b' ')
}

fn is_hex_color(s: &str) -> bool {
    let hex = s.strip_prefix('#').unwrap_or(s);
    (hex.len() == 3 || hex.len() == 6) && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `rgb(r, g, b)` with each part 0..=255 written without leading zeros.
fn is_rgb_color(s: &str) -> bool {
    let Some(inner) = s.strip_prefix("rgb(").and_then(|r| r.strip_suffix(')')) else {
        return false;
    };
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && (p.len() == 1 || !p.starts_with('0'))
                && p.parse::<u32>().is_ok_and(|n| n <= 255)
        })
}

/// Standard base64 with padding, not empty (govalidator's IsBase64 pattern).
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let alphabet = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    let body = s.trim_end_matches('=');
    let padding = b.len() - body.len();
    padding <= 2 && body.as_bytes().iter().all(alphabet)
}

/// Go's time.Parse with "2006-01-02": four-digit year, two-digit month and a day that exists.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// kube-openapi's date-time: lower-cased and split at `t`, a valid date, then
/// `HH:MM:SS[.frac](z|±hh:mm)` with hours up to 23 and minutes and seconds up to 59.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    let (Some(date), Some(time)) = (parts.first(), parts.get(1)) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let b = time.as_bytes();
    let two = |i: usize| {
        b.get(i..i + 2)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    if b.len() < 9 || !two(0) || b[2] != b':' || !two(3) || b[5] != b':' || !two(6) {
        return false;
    }
    let mut rest = &time[8..];
    // The pattern's fraction starts with any one character, then digits.
    if let Some(c) = rest
        .chars()
        .next()
        .filter(|c| *c != 'z' && *c != '+' && *c != '-')
    {
        let digits = rest[c.len_utf8()..].trim_start_matches(|d: char| d.is_ascii_digit());
        if digits.len() == rest.len() - c.len_utf8() {
            return false;
        }
        rest = digits;
    }
    let zone_ok = rest == "z"
        || (rest.len() == 6
            && matches!(rest.as_bytes()[0], b'+' | b'-')
            && rest.as_bytes()[3] == b':'
            && [1, 2, 4, 5]
                .iter()
                .all(|&i| rest.as_bytes()[i].is_ascii_digit()));
    zone_ok && &time[0..2] <= "23" && &time[3..5] <= "59" && &time[6..8] <= "59"
}

/// Go's time.ParseDuration, or kube-openapi's fallback: `<digits> <unit>` groups with units
/// like `d`, `day`, `w`, `hour`.
fn is_duration(s: &str) -> bool {
    go_duration(s) || loose_duration(s)
}

fn go_duration(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let int_len = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let mut digits = int_len;
        let mut after = &rest[int_len..];
        if let Some(frac) = after.strip_prefix('.') {
            let frac_len = frac.len() - frac.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            digits += frac_len;
            after = &frac[frac_len..];
        }
        if digits == 0 {
            return false;
        }
        let unit_len = after.len()
            - after
                .trim_start_matches(|c: char| c != '.' && !c.is_ascii_digit())
                .len();
        if !matches!(
            &after[..unit_len],
            "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h"
        ) {
            return false;
        }
        rest = &after[unit_len..];
    }
    true
}

fn loose_duration(s: &str) -> bool {
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut rest = s.trim_start();
    let mut any_unit = false;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return false;
        }
        let after = rest[digits..].trim_start();
        let letters = after.len()
            - after
                .trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == 'µ')
                .len();
        if letters == 0 {
            return false;
        }
        let unit = after[..letters].to_lowercase();
        any_unit |= UNITS.iter().any(|variants| {
            variants.iter().enumerate().any(|(i, v)| {
                (i == variants.len() - 1 && unit.starts_with(v)) || v.eq_ignore_ascii_case(&unit)
            })
        });
        rest = after[letters..].trim_start();
    }
    any_unit
}
