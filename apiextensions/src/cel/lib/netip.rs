//! Go's net/netip address parsing, which upstream's IP and CIDR libraries use: the same
//! addresses accepted (dotted IPv4 without leading zeros, IPv6 with `::`, an embedded IPv4
//! tail and a zone) and the same reasons given for the others.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A parsed address and its zone (`fe80::1%eth0`), if any.
pub(super) struct Parsed {
    pub(super) addr: IpAddr,
    pub(super) zone: Option<String>,
}

/// Go's netip.ParseAddr; the error is its message (`ParseAddr("x"): reason`).
pub(super) fn parse_addr(text: &str) -> Result<Parsed, String> {
    let fail = |msg: &str, at: Option<&str>| match at {
        Some(at) if !at.is_empty() => format!("ParseAddr({text:?}): {msg} (at {at:?})"),
        _ => format!("ParseAddr({text:?}): {msg}"),
    };
    for b in text.bytes() {
        match b {
            b'.' => {
                return ipv4(text.as_bytes())
                    .map(|v4| Parsed {
                        addr: IpAddr::V4(v4),
                        zone: None,
                    })
                    .map_err(|(msg, at)| fail(msg, at.map(|i| &text[i..])))
            }
            b':' => return ipv6(text).map_err(|(msg, at)| fail(msg, at)),
            b'%' => return Err(fail("missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(fail("unable to parse IP", None))
}

/// A reason, and where in the text it was found (an offset into the IPv4 text).
type V4Error = (&'static str, Option<usize>);

fn ipv4(s: &[u8]) -> Result<Ipv4Addr, V4Error> {
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0usize);
    for (i, &c) in s.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                if digits == 1 && val == 0 {
                    return Err(("IPv4 field has octet with leading zero", None));
                }
                val = val * 10 + u32::from(c - b'0');
                digits += 1;
                if val > 255 {
                    return Err(("IPv4 field has value >255", None));
                }
            }
            b'.' => {
                if i == 0 || i == s.len() - 1 || s[i - 1] == b'.' {
                    return Err(("IPv4 field must have at least one digit", Some(i)));
                }
                if pos == 3 {
                    return Err(("IPv4 address too long", None));
                }
                fields[pos] = val as u8;
                pos += 1;
                val = 0;
                digits = 0;
            }
            _ => return Err(("unexpected character", Some(i))),
        }
    }
    if pos < 3 {
        return Err(("IPv4 address too short", None));
    }
    fields[3] = val as u8;
    Ok(Ipv4Addr::from(fields))
}

fn ipv6(text: &str) -> Result<Parsed, (&'static str, Option<&str>)> {
    let (mut s, zone) = match text.split_once('%') {
        Some((_, "")) => return Err(("zone must be a non-empty string", None)),
        Some((addr, zone)) => (addr, Some(zone.to_string())),
        None => (text, None),
    };
    let address_end = s.len();
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok(Parsed {
                addr: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                zone,
            });
        }
    }
    let mut i = 0;
    while i < 16 {
        let bytes = s.as_bytes();
        let mut off = 0;
        let mut acc = 0u32;
        while off < bytes.len() {
            let Some(digit) = (bytes[off] as char).to_digit(16) else {
                break;
            };
            acc = (acc << 4) + digit;
            if off > 3 {
                return Err(("each group must have 4 or less digits", Some(s)));
            }
            if acc > u32::from(u16::MAX) {
                return Err(("IPv6 field has value >=2^16", Some(s)));
            }
            off += 1;
        }
        if off == 0 {
            return Err((
                "each colon-separated field must have at least one digit",
                Some(s),
            ));
        }
        if bytes.get(off) == Some(&b'.') {
            if ellipsis.is_none() && i != 12 {
                return Err((
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    Some(s),
                ));
            }
            if i + 4 > 16 {
                return Err((
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    Some(s),
                ));
            }
            let tail = &text[address_end - s.len()..address_end];
            let v4 = ipv4(tail.as_bytes()).map_err(|(msg, _)| (msg, None))?;
            ip[i..i + 4].copy_from_slice(&v4.octets());
            i += 4;
            s = "";
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(("unexpected character, want colon", Some(s)));
        }
        if s.len() == 1 {
            return Err(("colon must be followed by more characters", Some(s)));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return Err(("multiple :: in address", Some(s)));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(("trailing garbage after address", Some(s)));
    }
    if i < 16 {
        let Some(at) = ellipsis else {
            return Err(("address string too short", None));
        };
        let n = 16 - i;
        ip.copy_within(at..i, at + n);
        ip[at..at + n].fill(0);
    } else if ellipsis.is_some() {
        return Err(("the :: must expand to at least one field of zeros", Some(s)));
    }
    Ok(Parsed {
        addr: IpAddr::V6(Ipv6Addr::from(ip)),
        zone,
    })
}
