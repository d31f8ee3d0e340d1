//! Who may hold the remote listener's connections. Anyone who can reach the
//! port may connect, and a connection is not known to be a paired device's
//! until a request on it says so. So every connection starts *unpaired*, in a
//! small pool of its own ([`MAX_UNPAIRED`], [`MAX_UNPAIRED_PER_ADDRESS`] per
//! address, an IPv6 peer counted by its /64) where it lives at most
//! [`UNPAIRED_LIFETIME`]; a full pool makes room by closing its oldest
//! connection rather than refusing the new one. A connection whose request a
//! paired device made moves to the paired pool ([`MAX_PAIRED`]) and lives on.
//! So however many connections unpaired peers hold, a paired device gets one.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Unpaired connections held at once.
pub const MAX_UNPAIRED: usize = 32;
/// Unpaired connections one address (one IPv6 /64) holds at once.
pub const MAX_UNPAIRED_PER_ADDRESS: usize = 8;
/// Paired devices' connections held at once.
pub const MAX_PAIRED: usize = 96;
/// The longest an unpaired connection lives, busy or not.
pub const UNPAIRED_LIFETIME: Duration = Duration::from_secs(30);

/// The address a peer is counted under: an IPv6 one by its /64.
pub fn counted_as(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(prefix.into())
        }
        IpAddr::V6(v6) => IpAddr::V4(v6.to_ipv4_mapped().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED)),
        v4 => v4,
    }
}

#[derive(Default)]
struct Pools {
    next: u64,
    /// Oldest first.
    unpaired: VecDeque<(u64, IpAddr, CancellationToken)>,
    paired: usize,
}

/// The listener's places.
#[derive(Clone, Default)]
pub struct Places(Arc<Mutex<Pools>>);

impl Places {
    fn lock(&self) -> MutexGuard<'_, Pools> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A place for a new connection from `address`, unpaired; the oldest
    /// unpaired connection of its address, or of all, is closed to make room.
    pub fn take(&self, address: IpAddr) -> Place {
        let group = counted_as(address);
        let mut pools = self.lock();
        let of_group = pools.unpaired.iter().filter(|(_, held, _)| *held == group).count();
        let oldest = if of_group >= MAX_UNPAIRED_PER_ADDRESS {
            pools.unpaired.iter().position(|(_, held, _)| *held == group)
        } else if pools.unpaired.len() >= MAX_UNPAIRED {
            Some(0)
        } else {
            None
        };
        if let Some((_, _, evicted)) = oldest.and_then(|at| pools.unpaired.remove(at)) {
            evicted.cancel();
        }
        pools.next += 1;
        let (id, closed) = (pools.next, CancellationToken::new());
        pools.unpaired.push_back((id, group, closed.clone()));
        Place { places: self.clone(), id, closed, paired: Mutex::new(false) }
    }

    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        let pools = self.lock();
        (pools.unpaired.len(), pools.paired)
    }
}

/// A connection's place, given back when it is dropped.
pub struct Place {
    places: Places,
    id: u64,
    /// Cancelled when the connection must close (its place was given to a
    /// newer one, or its unpaired lifetime is over).
    closed: CancellationToken,
    paired: Mutex<bool>,
}

impl Place {
    /// When the connection must close: evicted, or its lifetime is over while unpaired.
    pub async fn closing(&self) {
        self.closing_after(UNPAIRED_LIFETIME).await;
    }

    async fn closing_after(&self, lifetime: Duration) {
        tokio::select! {
            () = self.closed.cancelled() => {}
            () = async {
                tokio::time::sleep(lifetime).await;
                // Paired by then: it lives on, until evicted (never, as paired).
                if self.is_paired() {
                    std::future::pending::<()>().await;
                }
            } => {}
        }
    }

    fn is_paired(&self) -> bool {
        *self.paired.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A paired device made a request on this connection: it moves to the
    /// paired pool (if there is room; else it stays unpaired). Whether it is paired.
    pub fn paired_device(&self) -> bool {
        let mut paired = self.paired.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if *paired {
            return true;
        }
        let mut pools = self.places.lock();
        if pools.paired >= MAX_PAIRED {
            return false;
        }
        let Some(at) = pools.unpaired.iter().position(|(id, _, _)| *id == self.id) else {
            // Evicted meanwhile: it is closing.
            return false;
        };
        pools.unpaired.remove(at);
        pools.paired += 1;
        *paired = true;
        true
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let paired = self.is_paired();
        let mut pools = self.places.lock();
        if paired {
            pools.paired = pools.paired.saturating_sub(1);
        } else if let Some(at) = pools.unpaired.iter().position(|(id, _, _)| *id == self.id) {
            pools.unpaired.remove(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(n: usize) -> IpAddr {
        IpAddr::from([10, 1, (n / 200) as u8, (n % 200) as u8])
    }

    #[test]
    fn a_full_pool_closes_its_oldest_and_one_address_only_its_own() {
        let places = Places::default();
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let held: Vec<Place> = (0..MAX_UNPAIRED_PER_ADDRESS).map(|_| places.take(one)).collect();
        // Another host of the same /64: the /64's oldest goes, nobody else's.
        let neighbour = places.take("2001:db8:1:2::77".parse().unwrap());
        assert!(held[0].closed.is_cancelled());
        assert!(held[1..].iter().all(|place| !place.closed.is_cancelled()));
        assert!(!neighbour.closed.is_cancelled());
        drop(held);
        let many: Vec<Place> = (0..MAX_UNPAIRED).map(|n| places.take(v4(n))).collect();
        assert!(neighbour.closed.is_cancelled(), "the oldest of all made room");
        assert_eq!(places.held(), (MAX_UNPAIRED, 0));
        let newest = places.take(v4(999));
        assert!(many[0].closed.is_cancelled() && !newest.closed.is_cancelled());
        drop((many, newest, neighbour));
        assert_eq!(places.held(), (0, 0), "places come back");
    }

    #[test]
    fn a_paired_device_keeps_its_connection_however_many_unpaired_come() {
        let places = Places::default();
        let phone = places.take(IpAddr::from([192, 168, 1, 20]));
        assert!(phone.paired_device());
        assert_eq!(places.held(), (0, 1));
        let crowd: Vec<Place> = (0..MAX_UNPAIRED * 3).map(|n| places.take(v4(n))).collect();
        assert!(!phone.closed.is_cancelled(), "an unpaired crowd never closes a paired connection");
        assert_eq!(places.held(), (MAX_UNPAIRED, 1));
        // And a new connection of the phone always gets in (then shows it is paired).
        let again = places.take(IpAddr::from([192, 168, 1, 20]));
        assert!(!again.closed.is_cancelled() && again.paired_device());
        drop((crowd, again));
        drop(phone);
        assert_eq!(places.held(), (0, 0));
    }

    #[tokio::test]
    async fn an_unpaired_connection_lives_at_most_its_lifetime_and_a_paired_one_on() {
        let places = Places::default();
        let (stranger, phone) = (places.take(v4(1)), places.take(v4(2)));
        assert!(phone.paired_device());
        let lifetime = Duration::from_millis(50);
        let stranger_closes = tokio::time::timeout(lifetime * 20, stranger.closing_after(lifetime));
        assert!(stranger_closes.await.is_ok());
        let phone_closes = tokio::time::timeout(lifetime * 4, phone.closing_after(lifetime));
        assert!(phone_closes.await.is_err(), "a paired connection is not closed for its age");
    }

    #[test]
    fn an_ipv6_host_is_counted_by_its_64_and_a_mapped_ipv4_as_itself() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(counted_as(a), counted_as(b));
        assert_ne!(counted_as(a), counted_as(other));
        assert_eq!(counted_as("::ffff:10.0.0.1".parse().unwrap()), IpAddr::from([10, 0, 0, 1]));
        assert_eq!(counted_as(IpAddr::from([10, 0, 0, 1])), IpAddr::from([10, 0, 0, 1]));
    }
}
