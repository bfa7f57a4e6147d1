//! The ranges Services draw from (upstream's ipallocator and portallocator ranges): a service
//! CIDR and a node port range, each split into a static band for requested values and a
//! dynamic band random draws prefer (KEP-3070 and KEP-3668), so a value a user picks on
//! purpose rarely collides with one the server drew.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// `--service-cluster-ip-range`: an IPv4 CIDR. The network and broadcast addresses are never
/// handed out; offset 0 is the first usable address (the `kubernetes` Service's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceCidr {
    network: u32,
    prefix: u8,
}

impl ServiceCidr {
    /// Usable addresses.
    pub fn size(&self) -> u64 {
        (1u64 << (32 - self.prefix)) - 2
    }

    /// The address at `offset` from the first usable one.
    pub fn ip(&self, offset: u64) -> Ipv4Addr {
        Ipv4Addr::from(self.network.wrapping_add(1).wrapping_add(offset as u32))
    }

    /// Where `ip` sits in the usable addresses, if it is one of them.
    pub fn offset(&self, ip: Ipv4Addr) -> Option<u64> {
        let ip = u32::from(ip) as u64;
        let first = self.network as u64 + 1;
        (ip >= first && ip < first + self.size()).then(|| ip - first)
    }

    /// The first usable address, which the `kubernetes` Service holds.
    pub fn first(&self) -> Ipv4Addr {
        self.ip(0)
    }

    /// How many of the lowest offsets random draws avoid while the rest has room (upstream's
    /// calculateRangeOffset for IPs: a sixteenth of the range, between 16 and 256).
    pub fn static_band(&self) -> u64 {
        band(self.size(), 16, 256, 16)
    }
}

impl FromStr for ServiceCidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (addr, prefix) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not a CIDR (address/prefix)"))?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| {
            format!("{text:?} is not an IPv4 CIDR (IPv6 service ranges are not supported)")
        })?;
        let prefix: u8 = prefix
            .parse()
            .map_err(|_| format!("{text:?} has an invalid prefix length"))?;
        if !(8..=30).contains(&prefix) {
            return Err(format!(
                "{text:?}: the service range must have a prefix length between /8 and /30"
            ));
        }
        let mask = u32::MAX << (32 - prefix);
        Ok(Self {
            network: u32::from(addr) & mask,
            prefix,
        })
    }
}

impl fmt::Display for ServiceCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }
}

/// `--service-node-port-range`: `30000-32767`, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    pub base: u16,
    pub last: u16,
}

impl PortRange {
    pub fn size(&self) -> u64 {
        (self.last - self.base) as u64 + 1
    }

    pub fn contains(&self, port: i64) -> bool {
        (self.base as i64..=self.last as i64).contains(&port)
    }

    pub fn port(&self, offset: u64) -> u16 {
        self.base + offset as u16
    }

    /// Upstream's calculateRangeOffset for node ports: a thirty-second, between 16 and 128.
    pub fn static_band(&self) -> u64 {
        band(self.size(), 16, 128, 32)
    }
}

impl FromStr for PortRange {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a port range (e.g. 30000-32767)");
        let (base, last) = text.split_once('-').ok_or_else(bad)?;
        let base: u16 = base.trim().parse().map_err(|_| bad())?;
        let last: u16 = last.trim().parse().map_err(|_| bad())?;
        if base == 0 || last < base {
            return Err(bad());
        }
        Ok(Self { base, last })
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.base, self.last)
    }
}

fn band(size: u64, min: u64, max: u64, step: u64) -> u64 {
    if size < min {
        return 0;
    }
    (size / step).clamp(min, max)
}

/// Where the server's Services get their addresses and node ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceNetwork {
    pub cluster_ips: ServiceCidr,
    pub node_ports: PortRange,
}

impl Default for ServiceNetwork {
    /// kube-apiserver's defaults.
    fn default() -> Self {
        Self {
            cluster_ips: ServiceCidr {
                network: u32::from(Ipv4Addr::new(10, 96, 0, 0)),
                prefix: 12,
            },
            node_ports: PortRange {
                base: 30000,
                last: 32767,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_offsets_skip_network_and_broadcast() {
        let cidr: ServiceCidr = "10.96.0.0/12".parse().unwrap();
        assert_eq!(cidr.first(), Ipv4Addr::new(10, 96, 0, 1));
        assert_eq!(cidr.size(), (1 << 20) - 2);
        assert_eq!(cidr.offset(Ipv4Addr::new(10, 96, 0, 10)), Some(9));
        assert_eq!(cidr.offset(Ipv4Addr::new(10, 96, 0, 0)), None);
        assert_eq!(cidr.offset(Ipv4Addr::new(10, 111, 255, 255)), None);
        assert_eq!(cidr.offset(Ipv4Addr::new(10, 0, 0, 1)), None);
        assert_eq!(cidr.static_band(), 256);
        assert_eq!(
            "10.0.0.7/24".parse::<ServiceCidr>().unwrap().to_string(),
            "10.0.0.0/24"
        );
        assert!("fd00::/108".parse::<ServiceCidr>().is_err());
        assert!("10.0.0.0/31".parse::<ServiceCidr>().is_err());
    }

    #[test]
    fn port_ranges() {
        let ports: PortRange = "30000-32767".parse().unwrap();
        assert_eq!(ports.size(), 2768);
        assert_eq!(ports.static_band(), 86);
        assert!(ports.contains(30000) && ports.contains(32767) && !ports.contains(32768));
        assert!("3-1".parse::<PortRange>().is_err());
        assert!("x".parse::<PortRange>().is_err());
    }
}
