//! Cluster IPs from 10.96.0.0/12 and node ports from 30000-32767, held by Services.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::ops::RangeInclusive;

/// The Service cluster IP range, as the real server's `--service-cluster-ip-range` default.
pub(crate) const SERVICE_CIDR: &str = "10.96.0.0/12";
const CIDR_BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const CIDR_SIZE: u32 = 1 << 20;
/// The offsets handed out: neither the network address, nor `.1` (the `kubernetes` Service), nor broadcast.
const IP_OFFSETS: RangeInclusive<u32> = 2..=CIDR_SIZE - 2;

/// The node port range, as the real server's `--service-node-port-range` default.
pub(crate) const NODE_PORTS: RangeInclusive<u16> = 30000..=32767;

/// What one Service holds: its cluster IP within the range and its node ports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Held {
    pub ips: BTreeSet<Ipv4Addr>,
    pub ports: BTreeSet<u16>,
}

/// Everything held by all Services, and where the next search for a free value starts.
#[derive(Debug)]
pub(crate) struct Allocations {
    ips: BTreeSet<Ipv4Addr>,
    ports: BTreeSet<u16>,
    next_ip: u32,
    next_port: u16,
}

impl Default for Allocations {
    fn default() -> Self {
        Self {
            ips: BTreeSet::new(),
            ports: BTreeSet::new(),
            next_ip: *IP_OFFSETS.start(),
            next_port: *NODE_PORTS.start(),
        }
    }
}

/// Whether `ip` lies in [`SERVICE_CIDR`].
pub(crate) fn in_service_range(ip: Ipv4Addr) -> bool {
    u32::from(ip).wrapping_sub(CIDR_BASE) < CIDR_SIZE
}

impl Allocations {
    /// Whether `ip` is held by a Service other than the one holding `own`.
    pub fn ip_taken(&self, ip: Ipv4Addr, own: &Held) -> bool {
        self.ips.contains(&ip) && !own.ips.contains(&ip)
    }

    /// Whether `port` is held by a Service other than the one holding `own`.
    pub fn port_taken(&self, port: u16, own: &Held) -> bool {
        self.ports.contains(&port) && !own.ports.contains(&port)
    }

    /// A free cluster IP that is not in `pending`, if the range has one.
    pub fn free_ip(&self, pending: &BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
        let span = IP_OFFSETS.end() - IP_OFFSETS.start() + 1;
        (0..span)
            .map(|step| IP_OFFSETS.start() + (self.next_ip - IP_OFFSETS.start() + step) % span)
            .map(|offset| Ipv4Addr::from(CIDR_BASE + offset))
            .find(|ip| !self.ips.contains(ip) && !pending.contains(ip))
    }

    /// A free node port that is not in `pending`, if the range has one.
    pub fn free_port(&self, pending: &BTreeSet<u16>) -> Option<u16> {
        let span = NODE_PORTS.end() - NODE_PORTS.start() + 1;
        (0..span)
            .map(|step| NODE_PORTS.start() + (self.next_port - NODE_PORTS.start() + step) % span)
            .find(|port| !self.ports.contains(port) && !pending.contains(port))
    }

    /// Replaces what one Service held (`before`) with what it holds now (`after`).
    pub fn transfer(&mut self, before: &Held, after: &Held) {
        for ip in before.ips.difference(&after.ips) {
            self.ips.remove(ip);
        }
        for port in before.ports.difference(&after.ports) {
            self.ports.remove(port);
        }
        for ip in after.ips.difference(&before.ips) {
            self.ips.insert(*ip);
            let offset = u32::from(*ip) - CIDR_BASE;
            if IP_OFFSETS.contains(&(offset + 1)) {
                self.next_ip = offset + 1;
            }
        }
        for port in after.ports.difference(&before.ports) {
            self.ports.insert(*port);
            if NODE_PORTS.contains(&(port + 1)) {
                self.next_port = port + 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_distinct_values_in_range() {
        let mut allocations = Allocations::default();
        let ip = allocations.free_ip(&BTreeSet::new()).unwrap();
        let port = allocations.free_port(&BTreeSet::new()).unwrap();
        assert_eq!(ip, Ipv4Addr::new(10, 96, 0, 2));
        assert!(NODE_PORTS.contains(&port));
        let held = Held { ips: [ip].into(), ports: [port].into() };
        allocations.transfer(&Held::default(), &held);
        assert_ne!(allocations.free_ip(&BTreeSet::new()), Some(ip));
        assert_ne!(allocations.free_port(&BTreeSet::new()), Some(port));
        assert!(allocations.port_taken(port, &Held::default()));
        assert!(!allocations.port_taken(port, &held));
        allocations.transfer(&held, &Held::default());
        assert!(!allocations.port_taken(port, &Held::default()));
    }

    #[test]
    fn range_checks_the_cidr() {
        assert!(in_service_range(Ipv4Addr::new(10, 111, 255, 254)));
        assert!(!in_service_range(Ipv4Addr::new(10, 112, 0, 1)));
        assert!(!in_service_range(Ipv4Addr::new(192, 168, 0, 1)));
    }

    #[test]
    fn the_port_range_can_fill_up() {
        let mut allocations = Allocations::default();
        let all = Held { ips: BTreeSet::new(), ports: NODE_PORTS.collect() };
        allocations.transfer(&Held::default(), &all);
        assert_eq!(allocations.free_port(&BTreeSet::new()), None);
    }
}
