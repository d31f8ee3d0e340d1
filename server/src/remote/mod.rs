//! The remote listener (`--remote`): HTTPS for paired devices only.

pub mod cert;
pub mod devices;
pub mod listener;
pub mod pairing;

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
