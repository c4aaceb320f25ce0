//! Load-balancer addresses: the pool's usable addresses in a fixed order, and
//! where a service starts looking in it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// The pool's networks, each usable address numbered across all of them.
pub struct Pool<'a> {
    networks: &'a [IpNet],
}

/// At most this many addresses are numbered per network.
const MAX_PER_NETWORK: u128 = 1 << 32;

impl<'a> Pool<'a> {
    pub fn new(networks: &'a [IpNet]) -> Self {
        Pool { networks }
    }

    /// Usable addresses of one network: IPv4 networks of 30 bits or fewer
    /// exclude their network and broadcast addresses.
    fn span(network: &IpNet) -> (u128, u128) {
        match network {
            IpNet::V4(net) => {
                let size = 1u128 << (32 - u32::from(net.prefix_len()));
                if size > 2 { (1, size - 2) } else { (0, size) }
            }
            IpNet::V6(net) => {
                let bits = 128 - u32::from(net.prefix_len());
                let size = if bits >= 32 { MAX_PER_NETWORK } else { 1u128 << bits };
                (0, size)
            }
        }
    }

    /// How many addresses the pool numbers.
    pub fn len(&self) -> u128 {
        self.networks.iter().map(|network| Self::span(network).1).sum()
    }

    /// The address numbered `index`.
    pub fn get(&self, mut index: u128) -> Option<IpAddr> {
        for network in self.networks {
            let (first, count) = Self::span(network);
            if index < count {
                return Some(match network {
                    IpNet::V4(net) => {
                        let base = u128::from(u32::from(net.network()));
                        IpAddr::V4(Ipv4Addr::from(u32::try_from(base + first + index).ok()?))
                    }
                    IpNet::V6(net) => IpAddr::V6(Ipv6Addr::from(u128::from(net.network()) + first + index)),
                });
            }
            index -= count;
        }
        None
    }

    /// Whether `address` is one of the pool's usable addresses.
    pub fn contains(&self, address: IpAddr) -> bool {
        self.networks.iter().any(|network| {
            let (first, count) = Self::span(network);
            let offset = match (network, address) {
                (IpNet::V4(net), IpAddr::V4(ip)) if net.contains(&ip) => {
                    u128::from(u32::from(ip) - u32::from(net.network()))
                }
                (IpNet::V6(net), IpAddr::V6(ip)) if net.contains(&ip) => u128::from(ip) - u128::from(net.network()),
                _ => return false,
            };
            offset >= first && offset < first + count
        })
    }
}

/// Where `key` starts probing the pool: spreading services over the pool
/// makes a free address likely at the first try.
pub fn start(key: &str, len: u128) -> u128 {
    // FNV-1a, stable across builds and platforms.
    let hash = key
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3));
    u128::from(hash) % len.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|net| net.parse().unwrap()).collect()
    }

    #[test]
    fn numbers_usable_addresses_across_networks() {
        let networks = nets(&["10.0.0.0/30", "10.1.0.0/31", "2001:db8::/127"]);
        let pool = Pool::new(&networks);
        assert_eq!(pool.len(), 2 + 2 + 2);
        let all: Vec<String> = (0..pool.len()).map(|i| pool.get(i).unwrap().to_string()).collect();
        assert_eq!(all, ["10.0.0.1", "10.0.0.2", "10.1.0.0", "10.1.0.1", "2001:db8::", "2001:db8::1"]);
        assert_eq!(pool.get(6), None);
        assert!(pool.contains("10.0.0.2".parse().unwrap()));
        assert!(!pool.contains("10.0.0.3".parse().unwrap()), "broadcast address");
        assert!(!pool.contains("10.0.0.0".parse().unwrap()), "network address");
        assert!(!pool.contains("192.0.2.1".parse().unwrap()));
    }

    #[test]
    fn start_is_stable_and_in_range() {
        assert_eq!(start("uid-1", 254), start("uid-1", 254));
        assert!((0..100).all(|i| start(&format!("uid-{i}"), 10) < 10));
        assert_eq!(start("anything", 0), 0);
    }
}
