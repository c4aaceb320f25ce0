//! IP addresses as the host's checks compare them.

use std::net::{IpAddr, Ipv4Addr};

/// An IPv4 address embedded in IPv6 (mapped `::ffff:a.b.c.d`, translated
/// `::ffff:0:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) as
/// the IPv4 address it carries, so that no IPv6 spelling slips past a check
/// of IPv4 networks; any other address as it is.
pub fn canonical_ip(address: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = address else { return address };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let segments = v6.segments();
    let embedded = Ipv4Addr::from((u128::from(v6) & u128::from(u32::MAX)) as u32);
    let nat64 = segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    let translated = segments[..6] == [0, 0, 0, 0, 0xffff, 0];
    // `::` and `::1` are IPv6's own.
    let compatible = segments[..6] == [0; 6] && u32::from(embedded) > 1;
    if nat64 || translated || compatible { IpAddr::V4(embedded) } else { address }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ipv6_spelling_of_an_ipv4_address_is_that_address() {
        let v4: IpAddr = "10.96.0.1".parse().unwrap();
        for spelling in ["::ffff:10.96.0.1", "::ffff:0:10.96.0.1", "::10.96.0.1", "64:ff9b::10.96.0.1", "10.96.0.1"] {
            assert_eq!(canonical_ip(spelling.parse().unwrap()), v4, "{spelling}");
        }
        for own in ["::1", "::", "2001:db8::1", "fe80::1"] {
            let address: IpAddr = own.parse().unwrap();
            assert_eq!(canonical_ip(address), address, "{own}");
        }
    }
}
