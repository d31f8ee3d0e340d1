//! Where the hub may connect on a paired device's word (its Web Push
//! endpoint): a public address only. A device could name the hub's own
//! machine, the LAN or a cloud's metadata service (`169.254.169.254`); every
//! address a name resolves to is checked, and the connection is pinned to the
//! checked ones, so a second lookup cannot lead elsewhere.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Whether `ip` is on the public internet: not loopback, private, link-local,
/// unique-local, shared (CGNAT), multicast, documentation or reserved.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => public_v4(v4),
            None => public_v6(v6),
        },
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let shared = a == 100 && (64..128).contains(&b); // 100.64.0.0/10
    let protocol_assignments = a == 192 && b == 0 && c == 0; // 192.0.0.0/24
    let benchmarking = a == 198 && (b == 18 || b == 19); // 198.18.0.0/15
    let relay_anycast = a == 192 && b == 88 && c == 99; // 192.88.99.0/24
    let reserved = a >= 240; // 240.0.0.0/4 and broadcast
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || shared
        || protocol_assignments
        || benchmarking
        || relay_anycast
        || reserved)
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    // Global unicast is 2000::/3; the rest (NAT64 for local use, IPv4-translated,
    // discard-only…) is not reached on a device's word.
    let global = first & 0xe000 == 0x2000;
    let teredo_and_protocols = first == 0x2001 && ip.segments()[1] < 0x0200; // 2001::/23
    if !global && ip.segments()[..6] != [0x0064, 0xff9b, 0, 0, 0, 0] {
        return false;
    }
    if teredo_and_protocols {
        return false;
    }
    let unique_local = first & 0xfe00 == 0xfc00; // fc00::/7
    let link_local = first & 0xffc0 == 0xfe80; // fe80::/10
    let site_local = first & 0xffc0 == 0xfec0; // fec0::/10 (deprecated)
    let documentation = first == 0x2001 && ip.segments()[1] == 0x0db8; // 2001:db8::/32
                                                                       // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address: judged by it.
    let embedded = match ip.segments() {
        [0x0064, 0xff9b, 0, 0, 0, 0, high, low] => Some(Ipv4Addr::from(((high as u32) << 16) | low as u32)),
        [0x2002, high, low, ..] => Some(Ipv4Addr::from(((high as u32) << 16) | low as u32)),
        _ => None,
    };
    if let Some(v4) = embedded {
        return public_v4(v4);
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || unique_local
        || link_local
        || site_local
        || documentation
        || ip.to_ipv4().is_some_and(|v4| !public_v4(v4)))
}

/// The addresses `host:port` resolves to, every one of them public; else
/// why not (naming the first address that is not).
pub async fn resolve_public(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    // An address literal (IPv6 in brackets, as a URL writes it) is itself.
    let literal = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok();
    let addresses: Vec<SocketAddr> = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => tokio::time::timeout(std::time::Duration::from_secs(5), tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| format!("{host} could not be resolved within 5 s"))?
            .map_err(|err| format!("{host} could not be resolved ({err})"))?
            .collect(),
    };
    if addresses.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    match addresses.iter().find(|address| !is_public(address.ip())) {
        Some(private) => Err(format!("{host} resolves to {}, which is not a public address", private.ip())),
        None => Ok(addresses),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_private_link_local_and_unique_local_are_not_public() {
        let refused = [
            "127.0.0.1",
            "127.8.9.10",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:c0a8:0101::1",
            "64:ff9b:1::a00:1",
            "::ffff:0:a00:1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "100::1",
            "192.88.99.1",
            "::a00:1",
        ];
        for address in refused {
            assert!(!is_public(address.parse().unwrap()), "{address} is not public");
        }
        let public =
            ["8.8.8.8", "142.250.74.46", "172.32.0.1", "100.128.0.1", "2607:f8b0:4004:800::200e", "::ffff:8.8.8.8"];
        for address in public {
            assert!(is_public(address.parse().unwrap()), "{address} is public");
        }
    }

    #[tokio::test]
    async fn a_literal_or_a_name_is_checked_on_every_address() {
        assert!(resolve_public("[::1]", 443).await.unwrap_err().contains("::1"));
        assert!(resolve_public("169.254.169.254", 443).await.unwrap_err().contains("not a public address"));
        assert!(resolve_public("localhost", 443).await.is_err(), "a name for the hub's own machine");
        assert_eq!(resolve_public("8.8.8.8", 443).await.unwrap(), ["8.8.8.8:443".parse().unwrap()]);
    }
}
