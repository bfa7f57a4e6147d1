//! The IP and CIDR libraries: `ip("10.0.0.1")`, `isIP`, `ip.isCanonical`, an address's
//! `family`, `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`, `isLinkLocalUnicast`,
//! `isGlobalUnicast`; `cidr("10.0.0.0/8")`, `isCIDR`, a prefix's `containsIP`,
//! `containsCIDR` (a value or its text), `ip`, `masked`, `prefixLength`; and `string()` of
//! both. As upstream (Go's net/netip), zones and IPv4-mapped IPv6 addresses are refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::common::types::{Type, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError};

use super::netip::parse_addr;
use super::{arg, boolean, fail, int, opaque_val, string, text, Out};

pub(in crate::cel) static IP_TYPE: Type = Type::new_unspecified_type("net.IP");
pub(in crate::cel) static CIDR_TYPE: Type = Type::new_unspecified_type("net.CIDR");

/// An address.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::cel) struct Ip(IpAddr);

/// A prefix: its address as written (not masked) and its length.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::cel) struct Cidr {
    addr: IpAddr,
    bits: u8,
}

opaque_val!(Ip, IP_TYPE);
opaque_val!(Cidr, CIDR_TYPE);

/// Parses an address as upstream does: Go's ParseAddr, then no zone and no IPv4-mapped
/// IPv6 address.
pub(in crate::cel) fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    let parsed = parse_addr(raw).map_err(|why| {
        format!("IP Address {raw:?} parse error during conversion from string: {why}")
    })?;
    if parsed.zone.is_some() {
        return Err(format!("IP address {raw:?} with zone value is not allowed"));
    }
    if is_mapped(&parsed.addr) {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(parsed.addr)
}

fn is_mapped(addr: &IpAddr) -> bool {
    matches!(addr, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// Go's netip.ParsePrefix, with its reasons; IPv4-mapped addresses refused.
pub(in crate::cel) fn parse_cidr(raw: &str) -> Result<(IpAddr, u8), String> {
    let bad = |why: String| {
        format!("network address parse error during conversion from string: netip.ParsePrefix({raw:?}): {why}")
    };
    let (addr, bits) = raw
        .split_once('/')
        .ok_or_else(|| bad("no '/'".to_string()))?;
    if addr.contains('%') {
        return Err(bad("IPv6 zones cannot be present in a prefix".to_string()));
    }
    let addr = parse_addr(addr).map_err(bad)?.addr;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let digits = !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && (bits == "0" || !bits.starts_with('0'));
    let bits: u8 = match bits.parse::<u32>() {
        Ok(n) if digits && n <= max => n as u8,
        Ok(_) if digits => return Err(bad("prefix length out of range".to_string())),
        _ => return Err(bad(format!("bad bits after slash: {bits:?}"))),
    };
    if is_mapped(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok((addr, bits))
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let ip = || IP_TYPE.to_owned();
    let cidr = || CIDR_TYPE.to_owned();
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], to_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload(
        "ip.isCanonical",
        "ip_is_canonical",
        vec![STRING_TYPE],
        canonical,
    )?;
    env.add_overload("string", "ip_to_string", vec![ip()], ip_text)?;
    env.add_member_overload("family", "ip_family", ip(), vec![], family)?;
    for (name, id, test) in IP_TESTS {
        env.add_member_overload(name, id, ip(), vec![], *test)?;
    }
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], to_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "cidr_to_string", vec![cidr()], cidr_text)?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        cidr(),
        vec![STRING_TYPE],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_ip",
        cidr(),
        vec![ip()],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        cidr(),
        vec![STRING_TYPE],
        contains_cidr,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr",
        cidr(),
        vec![cidr()],
        contains_cidr,
    )?;
    env.add_member_overload("ip", "cidr_ip", cidr(), vec![], cidr_ip)?;
    env.add_member_overload("masked", "cidr_masked", cidr(), vec![], masked)?;
    env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        cidr(),
        vec![],
        prefix_length,
    )?;
    Ok(())
}

type Test = for<'b, 'v> fn(Vec<CowVal<'b, 'v>>) -> Out<'b, 'v>;

const IP_TESTS: &[(&str, &str, Test)] = &[
    ("isUnspecified", "ip_is_unspecified", |a| {
        test(a, "isUnspecified", IpAddr::is_unspecified)
    }),
    ("isLoopback", "ip_is_loopback", |a| {
        test(a, "isLoopback", IpAddr::is_loopback)
    }),
    ("isLinkLocalMulticast", "ip_is_link_local_multicast", |a| {
        test(a, "isLinkLocalMulticast", link_local_multicast)
    }),
    ("isLinkLocalUnicast", "ip_is_link_local_unicast", |a| {
        test(a, "isLinkLocalUnicast", link_local_unicast)
    }),
    ("isGlobalUnicast", "ip_is_global_unicast", |a| {
        test(a, "isGlobalUnicast", global_unicast)
    }),
];

fn test<'b, 'v>(args: Vec<CowVal<'b, 'v>>, function: &str, f: fn(&IpAddr) -> bool) -> Out<'b, 'v> {
    boolean(f(&arg::<Ip>(function, &args, 0)?.0))
}

/// Go's IsLinkLocalMulticast: 224.0.0.0/24, ff02::/16.
fn link_local_multicast(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

/// Go's IsLinkLocalUnicast: 169.254.0.0/16, fe80::/10.
fn link_local_unicast(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's IsGlobalUnicast: anything but the unspecified, loopback, multicast, link-local
/// unicast and (IPv4) broadcast addresses; private addresses count.
fn global_unicast(addr: &IpAddr) -> bool {
    if addr.is_unspecified() || addr.is_loopback() || addr.is_multicast() {
        return false;
    }
    if link_local_unicast(addr) {
        return false;
    }
    !matches!(addr, IpAddr::V4(v4) if *v4 == Ipv4Addr::BROADCAST)
}

fn error(function: &str, message: String) -> ExecutionError {
    fail(function, message)
}

fn to_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let addr = parse_ip(text("ip", &args, 0)?).map_err(|m| error("ip", m))?;
    Ok(CowVal::owned(Ip(addr)))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(parse_ip(text("isIP", &args, 0)?).is_ok())
}

fn canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let raw = text("ip.isCanonical", &args, 0)?;
    let addr = parse_ip(raw).map_err(|m| error("ip.isCanonical", m))?;
    boolean(addr.to_string() == raw)
}

fn ip_text<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    string(arg::<Ip>("string", &args, 0)?.0.to_string())
}

fn family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    int(match arg::<Ip>("family", &args, 0)?.0 {
        IpAddr::V4(_) => 4,
        IpAddr::V6(_) => 6,
    })
}

fn to_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    // upstream names the conversion twice
    let (addr, bits) = parse_cidr(text("cidr", &args, 0)?).map_err(|m| {
        error(
            "cidr",
            format!("network address parse error during conversion from string: {m}"),
        )
    })?;
    Ok(CowVal::owned(Cidr { addr, bits }))
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(parse_cidr(text("isCIDR", &args, 0)?).is_ok())
}

fn cidr_text<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let c = arg::<Cidr>("string", &args, 0)?;
    string(format!("{}/{}", c.addr, c.bits))
}

/// The address with the bits past the prefix cleared.
fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & m))
        }
    }
}

impl Cidr {
    fn contains(&self, addr: &IpAddr) -> bool {
        addr.is_ipv4() == self.addr.is_ipv4()
            && mask(*addr, self.bits) == mask(self.addr, self.bits)
    }
}

fn contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let c = arg::<Cidr>("containsIP", &args, 0)?;
    let addr = match arg::<Ip>("containsIP", &args, 1) {
        Ok(ip) => ip.0,
        Err(_) => parse_ip(text("containsIP", &args, 1)?).map_err(|m| error("containsIP", m))?,
    };
    boolean(c.contains(&addr))
}

fn contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let c = arg::<Cidr>("containsCIDR", &args, 0)?;
    let (addr, bits) = match arg::<Cidr>("containsCIDR", &args, 1) {
        Ok(other) => (other.addr, other.bits),
        Err(_) => {
            parse_cidr(text("containsCIDR", &args, 1)?).map_err(|m| error("containsCIDR", m))?
        }
    };
    boolean(c.bits <= bits && c.contains(&addr))
}

fn cidr_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    Ok(CowVal::owned(Ip(arg::<Cidr>("ip", &args, 0)?.addr)))
}

fn masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let c = arg::<Cidr>("masked", &args, 0)?;
    Ok(CowVal::owned(Cidr {
        addr: mask(c.addr, c.bits),
        bits: c.bits,
    }))
}

fn prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    int(i64::from(arg::<Cidr>("prefixLength", &args, 0)?.bits))
}
