//! Who may hold the remote listener's connections. Anyone who can reach the
//! port may connect, and a connection is not known to be a paired device's
//! until a request on it says so. So every connection starts *unpaired*, in a
//! small pool of its own ([`MAX_UNPAIRED`], [`MAX_UNPAIRED_PER_ADDRESS`] per
//! address, an IPv6 peer counted by its /64) where it lives at most
//! [`UNPAIRED_LIFETIME`]; a full pool makes room by closing its oldest
//! connection of the address holding the most, rather than refusing the new
//! one; an address opening connections faster than [`NEW_PER_SECOND`] after a
//! burst is refused. A connection whose request a paired device made
//! moves to the paired pool ([`MAX_PAIRED`], [`MAX_PER_DEVICE`] a device) and
//! lives on. So however many connections unpaired peers hold, a paired device
//! gets one. (It is recognised at its first request, not at the handshake: a
//! peer flooding from many addresses at once can still delay it.)

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// Unpaired connections held at once.
pub const MAX_UNPAIRED: usize = 32;
/// Unpaired connections one address holds at once.
pub const MAX_UNPAIRED_PER_ADDRESS: usize = 8;
/// New connections an address may open in a burst, and per second after it:
/// more are closed at once. A peer cannot churn the pool faster than a
/// phone's handshake and first request from one address.
pub const NEW_BURST: f64 = 16.0;
pub const NEW_PER_SECOND: f64 = 8.0;
/// Paired devices' connections held at once, and by one device.
pub const MAX_PAIRED: usize = 96;
pub const MAX_PER_DEVICE: usize = 16;
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

/// An unpaired connection: its place's id, its address and group (/64).
struct Unpaired {
    id: u64,
    address: IpAddr,
    group: IpAddr,
    closed: CancellationToken,
}

/// New connections an address may still open now.
struct Bucket {
    tokens: f64,
    at: Instant,
}

#[derive(Default)]
struct Pools {
    next: u64,
    /// Oldest first.
    unpaired: VecDeque<Unpaired>,
    paired: usize,
    by_device: HashMap<String, usize>,
    buckets: HashMap<IpAddr, Bucket>,
}

impl Pools {
    /// Whether `address` may open one more connection now (and it is counted).
    fn admit(&mut self, address: IpAddr, now: Instant) -> bool {
        if self.buckets.len() > 4096 {
            // Groups quiet long enough to be full again are forgotten.
            self.buckets.retain(|_, bucket| now.duration_since(bucket.at).as_secs_f64() * NEW_PER_SECOND < NEW_BURST);
        }
        let bucket = self.buckets.entry(address).or_insert(Bucket { tokens: NEW_BURST, at: now });
        let refill = now.duration_since(bucket.at).as_secs_f64() * NEW_PER_SECOND;
        bucket.tokens = (bucket.tokens + refill).min(NEW_BURST);
        bucket.at = now;
        if bucket.tokens < 1.0 {
            return false;
        }
        bucket.tokens -= 1.0;
        true
    }

    /// Which unpaired connection makes room: the oldest of the address at its
    /// cap; else, with the pool full, the oldest of the address holding the
    /// most in the group holding the most (never a lone newcomer's first).
    fn to_close(&self, address: IpAddr) -> Option<usize> {
        let of_address = |wanted: IpAddr| self.unpaired.iter().filter(|held| held.address == wanted).count();
        if of_address(address) >= MAX_UNPAIRED_PER_ADDRESS {
            return self.unpaired.iter().position(|held| held.address == address);
        }
        if self.unpaired.len() < MAX_UNPAIRED {
            return None;
        }
        let of_group = |wanted: IpAddr| self.unpaired.iter().filter(|held| held.group == wanted).count();
        let group = self.unpaired.iter().map(|held| held.group).max_by_key(|group| of_group(*group))?;
        let in_group = self.unpaired.iter().filter(|held| held.group == group);
        let address = in_group.map(|held| held.address).max_by_key(|address| of_address(*address))?;
        self.unpaired.iter().position(|held| held.address == address)
    }
}

/// The listener's places.
#[derive(Clone, Default)]
pub struct Places(Arc<Mutex<Pools>>);

impl Places {
    fn lock(&self) -> MutexGuard<'_, Pools> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A place for a new connection from `address`, unpaired; `None` when its
    /// address (its /64) opens connections too fast. To make room, an
    /// unpaired connection of the address (or of the busiest) is closed.
    pub fn take(&self, address: IpAddr) -> Option<Place> {
        self.take_at(address, Instant::now())
    }

    fn take_at(&self, address: IpAddr, now: Instant) -> Option<Place> {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        let group = counted_as(address);
        let mut pools = self.lock();
        // Paced by the exact address: another host of the phone's /64 cannot
        // spend the phone's share (one behind the same address can).
        if !pools.admit(address, now) {
            return None;
        }
        if let Some(evicted) = pools.to_close(address).and_then(|at| pools.unpaired.remove(at)) {
            evicted.closed.cancel();
        }
        pools.next += 1;
        let (id, closed) = (pools.next, CancellationToken::new());
        pools.unpaired.push_back(Unpaired { id, address, group, closed: closed.clone() });
        Some(Place { places: self.clone(), id, closed, device: Mutex::new(None) })
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
    /// The paired device it was moved to the paired pool for.
    device: Mutex<Option<String>>,
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
        self.device.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).is_some()
    }

    /// The paired device `device` made a request on this connection: it moves
    /// to the paired pool (if there is room, and the device holds less than
    /// its share; else it stays unpaired). Whether it is paired.
    pub fn paired_device(&self, device: &str) -> bool {
        let mut paired = self.device.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if paired.is_some() {
            return true;
        }
        let mut pools = self.places.lock();
        let of_device = pools.by_device.get(device).copied().unwrap_or(0);
        if pools.paired >= MAX_PAIRED || of_device >= MAX_PER_DEVICE {
            return false;
        }
        let Some(at) = pools.unpaired.iter().position(|held| held.id == self.id) else {
            // Evicted meanwhile: it is closing.
            return false;
        };
        pools.unpaired.remove(at);
        pools.paired += 1;
        pools.by_device.insert(device.to_string(), of_device + 1);
        *paired = Some(device.to_string());
        true
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let device = self.device.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        let mut pools = self.places.lock();
        match device {
            Some(device) => {
                pools.paired = pools.paired.saturating_sub(1);
                if let Some(count) = pools.by_device.get_mut(&device) {
                    *count = count.saturating_sub(1);
                    if *count == 0 {
                        pools.by_device.remove(&device);
                    }
                }
            }
            None => {
                if let Some(at) = pools.unpaired.iter().position(|held| held.id == self.id) {
                    pools.unpaired.remove(at);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(n: usize) -> IpAddr {
        IpAddr::from([10, 1, (n / 200) as u8, (n % 200) as u8])
    }

    /// Places taken far apart in time, so no address is too fast.
    struct Clock(Instant);

    impl Clock {
        fn take(&mut self, places: &Places, address: IpAddr) -> Place {
            self.0 += Duration::from_secs(1);
            places.take_at(address, self.0).expect("admitted")
        }
    }

    #[test]
    fn an_address_at_its_cap_gives_up_its_own_oldest_and_a_full_pool_the_busiest() {
        let (places, mut clock) = (Places::default(), Clock(Instant::now()));
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let held: Vec<Place> = (0..MAX_UNPAIRED_PER_ADDRESS).map(|_| clock.take(&places, one)).collect();
        let again = clock.take(&places, one);
        assert!(held[0].closed.is_cancelled() && held[1..].iter().all(|place| !place.closed.is_cancelled()));
        // Another host of the same /64 is not the first one's to give.
        let neighbour = clock.take(&places, "2001:db8:1:2::77".parse().unwrap());
        assert!(!neighbour.closed.is_cancelled());
        drop((held, again));
        let crowd: Vec<Place> = (0..MAX_UNPAIRED - 1).map(|n| clock.take(&places, v4(n % 4))).collect();
        assert_eq!(places.held(), (MAX_UNPAIRED, 0));
        let newcomer = clock.take(&places, v4(999));
        assert!(!neighbour.closed.is_cancelled(), "the lone neighbour is not the busiest");
        assert!(crowd.iter().any(|place| place.closed.is_cancelled()), "one of the crowd made room");
        assert!(!newcomer.closed.is_cancelled());
        drop((crowd, newcomer, neighbour));
        assert_eq!(places.held(), (0, 0), "places come back");
    }

    #[test]
    fn a_phone_connecting_while_a_crowd_holds_the_pool_is_not_the_one_closed() {
        let (places, mut clock) = (Places::default(), Clock(Instant::now()));
        let crowd: Vec<Place> = (0..MAX_UNPAIRED).map(|n| clock.take(&places, v4(n % 4))).collect();
        let phone = clock.take(&places, IpAddr::from([192, 168, 1, 20]));
        // The crowd goes on opening while the phone has not shown it is paired yet.
        let more: Vec<Place> = (0..MAX_UNPAIRED * 2).map(|n| clock.take(&places, v4(100 + n % 4))).collect();
        assert!(!phone.closed.is_cancelled(), "the busiest addresses make room, never the lone phone");
        assert!(phone.paired_device("phone"));
        assert_eq!(places.held(), (MAX_UNPAIRED - 1, 1));
        drop((crowd, more, phone));
        assert_eq!(places.held(), (0, 0));
    }

    #[test]
    fn an_address_opening_too_fast_is_refused_and_may_go_on_later() {
        let places = Places::default();
        let now = Instant::now();
        let burst: Vec<Place> = (0..NEW_BURST as usize).filter_map(|_| places.take_at(v4(1), now)).collect();
        assert_eq!(burst.len(), NEW_BURST as usize);
        assert!(places.take_at(v4(1), now).is_none(), "past the burst, at once: refused");
        assert!(places.take_at(v4(2), now).is_some(), "another address is not held back");
        assert!(places.take_at(v4(1), now + Duration::from_millis(200)).is_some(), "a moment later it may");
    }

    #[test]
    fn a_device_holds_at_most_its_share_of_the_paired_pool() {
        let (places, mut clock) = (Places::default(), Clock(Instant::now()));
        let mine: Vec<Place> = (0..MAX_PER_DEVICE + 1).map(|n| clock.take(&places, v4(n))).collect();
        let promoted = mine.iter().filter(|place| place.paired_device("d1")).count();
        assert_eq!(promoted, MAX_PER_DEVICE);
        let other = clock.take(&places, v4(500));
        assert!(other.paired_device("d2"), "another device still gets in");
        drop(mine);
        drop(other);
        assert_eq!(places.held(), (0, 0));
        assert!(places.lock().by_device.is_empty());
    }

    #[tokio::test]
    async fn an_unpaired_connection_lives_at_most_its_lifetime_and_a_paired_one_on() {
        let (places, mut clock) = (Places::default(), Clock(Instant::now()));
        let (stranger, phone) = (clock.take(&places, v4(1)), clock.take(&places, v4(2)));
        assert!(phone.paired_device("phone"));
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
