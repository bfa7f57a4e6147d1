//! The URL library: `url(text)`, `isURL`, and a URL's `getScheme`, `getHost`,
//! `getHostname`, `getPort`, `getEscapedPath`, `getQuery`. A URL is what Go's
//! url.ParseRequestURI accepts (an absolute URI or an absolute path, as received in a
//! request); the value is then read as url.Parse reads it (the fragment set apart).

use std::collections::HashMap;

use cel::common::types::{CelList, CelMap, CelString, Type, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env};

use super::{arg, boolean, fail, opaque_val, string, text, Out};

pub(in crate::cel) static URL_TYPE: Type = Type::new_unspecified_type("kubernetes.URL");

/// A parsed URL, as Go's url.URL holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(in crate::cel) struct Url {
    scheme: String,
    opaque: String,
    host: String,
    /// The path, unescaped.
    path: String,
    /// The path as written, when it escapes differently from the default.
    raw_path: String,
    raw_query: String,
}

opaque_val!(Url, URL_TYPE);

/// Go's url.ParseRequestURI.
pub(in crate::cel) fn parse_request_uri(raw: &str) -> Result<Url, String> {
    parse(raw, true).map_err(|e| format!("parse {raw:?}: {e}"))
}

/// Go's url.Parse: the fragment set apart, the rest parsed as a reference.
fn parse_reference(raw: &str) -> Result<Url, String> {
    let (rest, _fragment) = raw.split_once('#').unwrap_or((raw, ""));
    parse(rest, false).map_err(|e| format!("parse {raw:?}: {e}"))
}

fn parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_string());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".to_string());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = "*".to_string();
        return Ok(url);
    }
    let (scheme, rest) = scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    let mut rest = rest;
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        url.raw_query = query.to_string();
        rest = before;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // a rootless path is opaque, as RFC 3986 has it
            url.opaque = rest.to_string();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".to_string());
        }
        if let Some(colon) = rest.find(':') {
            if rest.find('/').is_none_or(|slash| colon < slash) {
                return Err("first path segment in URL cannot contain colon".to_string());
            }
        }
    }
    let mut path = rest;
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
        && rest.starts_with("//")
    {
        let authority_and_path = &rest[2..];
        let (authority, after) = match authority_and_path.find('/') {
            Some(i) => authority_and_path.split_at(i),
            None => (authority_and_path, ""),
        };
        url.host = authority_host(authority)?;
        path = after;
    }
    url.path = unescape(path, Mode::Path)?;
    let escaped = escape(&url.path);
    if path != escaped && valid_encoded(path) {
        url.raw_path = path.to_string();
    }
    Ok(url)
}

/// Splits off the scheme (letters, then letters, digits, `+`, `-`, `.`, up to a colon).
fn scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_string()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// The host of an authority (`user@host:port`), checked as Go checks it.
fn authority_host(authority: &str) -> Result<String, String> {
    let host = match authority.rfind('@') {
        Some(i) => {
            let user = &authority[..i];
            if !user
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&b))
            {
                return Err("net/url: invalid userinfo".to_string());
            }
            &authority[i + 1..]
        }
        None => authority,
    };
    if host.starts_with('[') {
        let Some(close) = host.rfind(']') else {
            return Err("missing ']' in host".to_string());
        };
        let port = &host[close + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
    } else if let Some(colon) = host.rfind(':') {
        let port = &host[colon..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
    }
    unescape(host, Mode::Host)
}

fn valid_optional_port(port: &str) -> bool {
    match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => digits.bytes().all(|b| b.is_ascii_digit()),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Path,
    Host,
    Query,
}

/// Characters a host may hold unescaped (Go's shouldEscape in host mode).
fn host_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&b)
}

/// Go's unescape: `%XX` decoded; in hosts, only `%25` below 0x80 and no character that
/// needs escaping; in queries, `+` is a space.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = |j: usize| bytes.get(j).and_then(|c| (*c as char).to_digit(16));
                let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2)) else {
                    let end = (i + 3).min(bytes.len());
                    return Err(format!(
                        "invalid URL escape {:?}",
                        String::from_utf8_lossy(&bytes[i..end])
                    ));
                };
                if mode == Mode::Host && hi < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {:?}", &s[i..i + 3]));
                }
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            b'+' if mode == Mode::Query => {
                out.push(b' ');
                i += 1;
            }
            b if mode == Mode::Host && b < 0x80 && !host_char(b) => {
                return Err(format!(
                    "invalid character {:?} in host name",
                    (b as char).to_string()
                ));
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Characters a path keeps unescaped (Go's shouldEscape in path mode).
fn path_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b)
}

/// Go's escape of a path.
fn escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if path_char(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Go's validEncoded for paths: every byte allowed as written.
fn valid_encoded(s: &str) -> bool {
    s.bytes()
        .all(|b| b"!$&'()*+,;=:@[]%".contains(&b) || path_char(b))
}

impl Url {
    /// Go's EscapedPath.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path)
            && unescape(&self.raw_path, Mode::Path).as_deref() == Ok(self.path.as_str())
        {
            return self.raw_path.clone();
        }
        if self.path == "*" {
            return "*".to_string();
        }
        escape(&self.path)
    }

    /// Go's splitHostPort of the host: the name without brackets, and the port.
    fn host_port(&self) -> (&str, &str) {
        let mut host = self.host.as_str();
        let mut port = "";
        if let Some(colon) = host.rfind(':') {
            if valid_optional_port(&host[colon..]) {
                port = &host[colon + 1..];
                host = &host[..colon];
            }
        }
        if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
            host = &host[1..host.len() - 1];
        }
        (host, port)
    }

    /// Go's Query: the pairs of the query, by key; pairs with bad escapes or `;` left out.
    fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(key), Ok(value)) = (unescape(key, Mode::Query), unescape(value, Mode::Query))
            else {
                continue;
            };
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some((_, values)) => values.push(value),
                None => out.push((key, vec![value])),
            }
        }
        out
    }
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let url = || URL_TYPE.to_owned();
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], to_url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "url_get_scheme", url(), vec![], get_scheme)?;
    env.add_member_overload("getHost", "url_get_host", url(), vec![], get_host)?;
    env.add_member_overload(
        "getHostname",
        "url_get_hostname",
        url(),
        vec![],
        get_hostname,
    )?;
    env.add_member_overload("getPort", "url_get_port", url(), vec![], get_port)?;
    env.add_member_overload(
        "getEscapedPath",
        "url_get_escaped_path",
        url(),
        vec![],
        get_path,
    )?;
    env.add_member_overload("getQuery", "url_get_query", url(), vec![], get_query)?;
    Ok(())
}

fn to_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let raw = text("url", &args, 0)?;
    let bad = |e: String| {
        fail(
            "url",
            format!("URL parse error during conversion from string: {e}"),
        )
    };
    parse_request_uri(raw).map_err(bad)?;
    Ok(CowVal::owned(parse_reference(raw).map_err(bad)?))
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(parse_request_uri(text("isURL", &args, 0)?).is_ok())
}

fn get_scheme<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    string(arg::<Url>("getScheme", &args, 0)?.scheme.clone())
}

fn get_host<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    string(arg::<Url>("getHost", &args, 0)?.host.clone())
}

fn get_hostname<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    string(
        arg::<Url>("getHostname", &args, 0)?
            .host_port()
            .0
            .to_string(),
    )
}

fn get_port<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    string(arg::<Url>("getPort", &args, 0)?.host_port().1.to_string())
}

fn get_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    string(arg::<Url>("getEscapedPath", &args, 0)?.escaped_path())
}

fn get_query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let url = arg::<Url>("getQuery", &args, 0)?;
    let mut map = HashMap::new();
    for (key, values) in url.query() {
        let list: Vec<Box<dyn Val + 'v>> = values
            .into_iter()
            .map(|v| Box::new(CelString::from(v)) as Box<dyn Val + 'v>)
            .collect();
        map.insert(
            key.into(),
            Box::new(CelList::from(list)) as Box<dyn Val + 'v>,
        );
    }
    Ok(CowVal::owned(CelMap::from(map)))
}
