//! Upstream's syntax rules for ports, host names, paths and addresses (k8s.io/apimachinery
//! util/validation), with upstream's message texts, as the networking, node and scheduling
//! kinds use them.

use std::net::IpAddr;

use super::names::{
    is_dns1123_subdomain, max_len_error, regex_error, DNS1123_SUBDOMAIN_MAX_LENGTH,
};
use super::quote;
use crate::error::Cause;

const IANA_SVC_NAME_MAX_LENGTH: usize = 15;
const WILDCARD_DNS1123_SUBDOMAIN_FMT: &str =
    "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const WILDCARD_DNS1123_SUBDOMAIN_ERR: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character";
const HTTP_PATH_FMT: &str = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";

/// A port number: 1 to 65535 (IsValidPortNum).
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".to_string()]
    }
}

/// A port name: an IANA service name, at most 15 lower-case alphanumerics and single inner
/// hyphens with at least one letter (IsValidPortName).
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > IANA_SVC_NAME_MAX_LENGTH {
        errs.push(max_len_error(IANA_SVC_NAME_MAX_LENGTH));
    }
    let charset = !port.is_empty()
        && port
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-');
    if !charset {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    } else if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `*.` then a DNS subdomain (IsWildcardDNS1123Subdomain).
pub fn is_wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let valid = value
        .strip_prefix("*.")
        .is_some_and(|rest| is_dns1123_subdomain(rest).is_empty());
    if !valid {
        errs.push(regex_error(
            WILDCARD_DNS1123_SUBDOMAIN_ERR,
            WILDCARD_DNS1123_SUBDOMAIN_FMT,
            &["*.example.com"],
        ));
    }
    errs
}

/// Whether Go's lenient parser (ParseIPSloppy) reads `value` as an IP address: IPv4 with
/// leading zeros is accepted there.
pub fn parses_as_ip(value: &str) -> bool {
    if value.parse::<IpAddr>().is_ok() {
        return true;
    }
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|c| c.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// A CIDR as Go's lenient parser reads it (ParseCIDRSloppy): the address and the prefix
/// length, the address masked to the network.
pub fn parse_cidr(value: &str) -> Option<(IpAddr, u8)> {
    let (ip, len) = value.split_once('/')?;
    let ip: IpAddr = match ip.parse() {
        Ok(ip) => ip,
        Err(_) if parses_as_ip(ip) => {
            let octets: Vec<u8> = ip.split('.').filter_map(|p| p.parse().ok()).collect();
            IpAddr::from(<[u8; 4]>::try_from(octets).ok()?)
        }
        Err(_) => return None,
    };
    if len.is_empty() || len.len() > 3 || !len.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let len: u8 = len.parse().ok()?;
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    (len <= bits).then(|| (mask(ip, len), len))
}

fn mask(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            IpAddr::V4(std::net::Ipv4Addr::from(u32::from(v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & m))
        }
    }
}

/// Whether the network `inner` lies inside `outer` and is strictly smaller.
pub fn cidr_strictly_within(outer: (IpAddr, u8), inner: (IpAddr, u8)) -> bool {
    outer.0.is_ipv4() == inner.0.is_ipv4() && inner.1 > outer.1 && mask(inner.0, outer.1) == outer.0
}

/// A CIDR in a field whose legacy values stay valid (IsValidCIDRForLegacyField): what Go's
/// lenient parser reads, unless the value was already stored (`existing`).
pub fn legacy_cidr(field: &str, value: &str, existing: &[&str]) -> Option<Cause> {
    if existing.contains(&value) || parse_cidr(value).is_some() {
        return None;
    }
    Some(Cause::invalid(
        field,
        quote(value),
        "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
    ))
}

/// `domain/path`, as `acme.io/foo` (IsDomainPrefixedPath).
pub fn domain_prefixed_path(field: &str, value: &str) -> Vec<Cause> {
    if value.is_empty() {
        return vec![Cause::required(field)];
    }
    let Some((host, path)) = value
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        return vec![Cause::invalid(
            field,
            quote(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut causes: Vec<Cause> = is_dns1123_subdomain(host)
        .into_iter()
        .map(|m| Cause::invalid(field, quote(host), &m))
        .collect();
    let http_path = path
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&c));
    if !http_path {
        causes.push(Cause::invalid(
            field,
            quote(path),
            &regex_error("Invalid path", HTTP_PATH_FMT, &[]),
        ));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_names_follow_iana_rules() {
        assert!(is_valid_port_name("http").is_empty());
        assert!(is_valid_port_name("h2-c").is_empty());
        assert_eq!(
            is_valid_port_name("8080"),
            ["must contain at least one letter (a-z)"]
        );
        assert_eq!(
            is_valid_port_name("a--b"),
            ["must not contain consecutive hyphens"]
        );
        assert_eq!(
            is_valid_port_name("Http"),
            ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"]
        );
        assert_eq!(
            is_valid_port_name("very-long-port-name"),
            ["must be no more than 15 characters"]
        );
    }

    #[test]
    fn wildcard_hosts_need_a_subdomain_after_the_star() {
        assert!(is_wildcard_dns1123_subdomain("*.example.com").is_empty());
        assert_eq!(is_wildcard_dns1123_subdomain("*example.com").len(), 1);
        assert_eq!(is_wildcard_dns1123_subdomain("*.*.example.com").len(), 1);
    }

    #[test]
    fn cidrs_parse_leniently_and_nest() {
        let outer = parse_cidr("10.0.0.0/16").expect("cidr");
        assert_eq!(parse_cidr("010.0.0.0/16"), Some(outer));
        assert!(parse_cidr("10.0.0.0/33").is_none());
        assert!(parse_cidr("10.0.0.0").is_none());
        assert!(parse_cidr("fd00::/8").is_some());
        assert!(cidr_strictly_within(
            outer,
            parse_cidr("10.0.1.0/24").expect("cidr")
        ));
        assert!(!cidr_strictly_within(
            outer,
            parse_cidr("10.0.0.0/16").expect("cidr")
        ));
        assert!(!cidr_strictly_within(
            outer,
            parse_cidr("10.1.0.0/24").expect("cidr")
        ));
    }

    #[test]
    fn domain_prefixed_paths() {
        assert!(domain_prefixed_path("c", "k8s.io/ingress-nginx").is_empty());
        assert_eq!(
            domain_prefixed_path("c", "nginx")[0].message,
            "Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")"
        );
        assert_eq!(domain_prefixed_path("c", "Bad.io/x").len(), 1);
        assert_eq!(domain_prefixed_path("c", "a.io/x y").len(), 1);
    }
}

/// What is wrong with an IP address as upstream's strict IsValidIP reads it (Go's
/// netip.ParseAddr: no leading zeros, no IPv4-mapped IPv6, the canonical spelling).
pub fn strict_ip_problem(value: &str) -> Option<String> {
    let Ok(ip) = value.parse::<IpAddr>() else {
        return Some("must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into());
    };
    if let IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return Some("must not be an IPv4-mapped IPv6 address".into());
        }
    }
    let canonical = ip.to_string();
    (canonical != value).then(|| format!("must be in canonical form ({})", quote(&canonical)))
}

/// A CIDR as Go's netip.ParsePrefix reads it: the address as written and the length.
pub fn strict_cidr(value: &str) -> Option<(IpAddr, u8)> {
    let (ip, len) = value.split_once('/')?;
    let ip: IpAddr = ip.parse().ok()?;
    let digits_ok = !len.is_empty()
        && len.bytes().all(|c| c.is_ascii_digit())
        && (len == "0" || !len.starts_with('0'));
    let len: u8 = len.parse().ok().filter(|_| digits_ok)?;
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    (len <= bits).then_some((ip, len))
}

/// What is wrong with a CIDR as upstream's strict IsValidCIDR reads it.
pub fn strict_cidr_problem(value: &str) -> Option<String> {
    let Some((ip, len)) = strict_cidr(value) else {
        return Some("must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)".into());
    };
    if let IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return Some("must not have an IPv4-mapped IPv6 address".into());
        }
    }
    let canonical = format!("{}/{len}", mask(ip, len));
    (canonical != value).then(|| format!("must be in canonical form ({})", quote(&canonical)))
}

#[cfg(test)]
mod strict_tests {
    use super::*;

    #[test]
    fn strict_addresses_and_ranges() {
        assert_eq!(strict_ip_problem("10.96.0.1"), None);
        assert!(strict_ip_problem("010.96.0.1").is_some());
        assert_eq!(
            strict_ip_problem("2001:DB8::1").as_deref(),
            Some("must be in canonical form (\"2001:db8::1\")")
        );
        assert_eq!(strict_cidr_problem("10.96.0.0/12"), None);
        assert_eq!(
            strict_cidr_problem("10.96.0.1/12").as_deref(),
            Some("must be in canonical form (\"10.96.0.0/12\")")
        );
        assert!(strict_cidr_problem("10.96.0.0/33").is_some());
        assert!(strict_cidr_problem("10.96.0.0").is_some());
    }
}
