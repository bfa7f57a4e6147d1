//! IPv4 ranges: the cluster CIDR, split into one /24 podCIDR per node (upstream's node IPAM
//! controller with its default --node-cidr-mask-size of 24).

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// The node mask size of upstream's range allocator for IPv4.
pub const NODE_MASK: u8 = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Cidr {
    pub base: Ipv4Addr,
    pub prefix: u8,
}

impl FromStr for Ipv4Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (ip, prefix) = s.split_once('/').ok_or_else(|| {
            "expected an address and a prefix length, as 10.244.0.0/16".to_string()
        })?;
        let ip: Ipv4Addr = ip
            .parse()
            .map_err(|_| format!("{ip:?} is not an IPv4 address (only IPv4 is supported)"))?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= 32)
            .ok_or_else(|| format!("{prefix:?} is not a prefix length from 0 to 32"))?;
        let mask = mask(prefix);
        if u32::from(ip) & !mask != 0 {
            return Err(format!("{s} has host bits set"));
        }
        Ok(Self { base: ip, prefix })
    }
}

impl fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

fn mask(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

impl Ipv4Cidr {
    /// The `index`-th /24 of this range, if there are that many.
    pub fn node_subnet(&self, index: usize) -> Option<Ipv4Cidr> {
        if self.prefix > NODE_MASK {
            return None;
        }
        let count = 1u64 << (NODE_MASK - self.prefix);
        if index as u64 >= count {
            return None;
        }
        let base = u32::from(self.base) + ((index as u32) << (32 - u32::from(NODE_MASK)));
        Some(Ipv4Cidr {
            base: Ipv4Addr::from(base),
            prefix: NODE_MASK,
        })
    }

    /// How many addresses the range holds.
    pub fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }

    /// The `offset`-th address of the range.
    pub fn nth(&self, offset: u64) -> Option<Ipv4Addr> {
        (offset < self.size()).then(|| Ipv4Addr::from(u32::from(self.base) + offset as u32))
    }

    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & mask(self.prefix) == u32::from(self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_into_node_subnets() {
        let cidr: Ipv4Cidr = "10.244.0.0/16".parse().unwrap();
        assert_eq!(cidr.node_subnet(0).unwrap().to_string(), "10.244.0.0/24");
        assert_eq!(cidr.node_subnet(3).unwrap().to_string(), "10.244.3.0/24");
        assert_eq!(
            cidr.node_subnet(255).unwrap().to_string(),
            "10.244.255.0/24"
        );
        assert!(cidr.node_subnet(256).is_none());
        assert!(cidr
            .node_subnet(3)
            .unwrap()
            .contains("10.244.3.7".parse().unwrap()));
    }

    #[test]
    fn refuses_bad_ranges() {
        assert!("10.244.0.1/16".parse::<Ipv4Cidr>().is_err());
        assert!("fd00::/64".parse::<Ipv4Cidr>().is_err());
        assert!("10.0.0.0".parse::<Ipv4Cidr>().is_err());
        assert!("10.0.0.0/33".parse::<Ipv4Cidr>().is_err());
    }
}
