//! The remote listener (`--remote`): HTTPS for paired devices only.

pub mod cert;
pub mod devices;
pub mod listener;
pub mod pairing;
pub mod places;

/// The paired device a request on the remote listener comes from, put in the
/// request's extensions by the remote gate; absent on the loopback listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairedDevice {
    pub id: String,
    pub name: String,
}

/// The names the remote listener answers to and its certificate carries: the
/// names given with `--allow-host` first (a tunnel's or Tailscale's), then its
/// address (for `0.0.0.0` or `::`, the address of the machine's main route),
/// then the machine's host name, bare and with `.local` (mDNS).
pub fn listener_names(addr: std::net::IpAddr, allow_hosts: &[String]) -> Vec<String> {
    let mut names: Vec<String> = allow_hosts.iter().map(|host| host.trim().to_ascii_lowercase()).collect();
    let address = if addr.is_unspecified() { main_route_address(addr) } else { Some(addr) };
    names.extend(address.map(|address| address.to_string()));
    if let Some(host) = host_name() {
        if !host.contains('.') {
            names.push(format!("{host}.local"));
        }
        names.push(host);
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|name| !name.is_empty() && seen.insert(name.clone()));
    names
}

/// The names the hub's own certificate carries: the listener's names, but
/// not the address of the main route of a listener on `0.0.0.0` or `::`,
/// which changes with the network (and would change the fingerprint).
/// (With nothing else to name, the names as they are.)
pub fn certificate_names(addr: std::net::IpAddr, names: &[String], allow_hosts: &[String]) -> Vec<String> {
    let stable: Vec<String> = names
        .iter()
        .filter(|name| {
            !addr.is_unspecified()
                || name.parse::<std::net::IpAddr>().is_err()
                || allow_hosts.iter().any(|host| host.trim().eq_ignore_ascii_case(name))
        })
        .cloned()
        .collect();
    if stable.is_empty() {
        names.to_vec()
    } else {
        stable
    }
}

/// `https://name:port` for the first of `names`.
pub fn origin(names: &[String], port: u16) -> String {
    let first = names.first().map(String::as_str).unwrap_or("localhost");
    if first.contains(':') {
        format!("https://[{first}]:{port}")
    } else {
        format!("https://{first}:{port}")
    }
}

/// The local address of the route to the outside, found without sending a
/// packet (a UDP socket's connect only picks the route).
fn main_route_address(unspecified: std::net::IpAddr) -> Option<std::net::IpAddr> {
    let (bind, probe) =
        if unspecified.is_ipv4() { ("0.0.0.0:0", "192.0.2.1:9") } else { ("[::]:0", "[2001:db8::1]:9") };
    let socket = std::net::UdpSocket::bind(bind).ok()?;
    socket.connect(probe).ok()?;
    Some(socket.local_addr().ok()?.ip()).filter(|ip| !ip.is_unspecified())
}

fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok().or_else(|| std::env::var("HOSTNAME").ok())?;
    let name = name.trim().to_ascii_lowercase();
    (!name.is_empty() && name != "localhost").then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_put_allowed_hosts_first_and_the_certificate_leaves_out_a_route_address() {
        let any: std::net::IpAddr = "0.0.0.0".parse().unwrap();
        let names = vec!["hub.tailnet.ts.net".to_string(), "192.168.1.20".to_string(), "box.local".to_string()];
        let allowed = ["hub.tailnet.ts.net".to_string()];
        assert_eq!(certificate_names(any, &names, &allowed), ["hub.tailnet.ts.net", "box.local"]);
        let given: std::net::IpAddr = "192.168.1.20".parse().unwrap();
        assert_eq!(certificate_names(given, &names, &allowed), names);
        assert_eq!(origin(&names, 7746), "https://hub.tailnet.ts.net:7746");
        assert_eq!(origin(&["fd00::1".to_string()], 7746), "https://[fd00::1]:7746");
        let listed = listener_names(given, &[" Hub.Test ".to_string()]);
        assert_eq!(&listed[..2], ["hub.test", "192.168.1.20"]);
    }
}
