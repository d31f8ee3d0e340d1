//! The remote listener's connections. Anyone who can reach its port may
//! connect, so what a connection may hold is bounded: at most
//! [`MAX_CONNECTIONS`] at once and [`MAX_PER_ADDRESS`] from one address (more
//! are closed at once, and the loopback listener keeps its file descriptors),
//! a TLS handshake is done within [`HANDSHAKE_TIMEOUT`], a request's headers
//! within [`HEADER_TIMEOUT`] (also the longest a kept-alive connection idles),
//! and a client that stops reading what it asked for is dropped after
//! [`WRITE_STALL_TIMEOUT`]. (What an unpaired device's request may take in all
//! is the gate's: `http/remote.rs`.) Handshakes run side by side, so a slow
//! client holds up no one. Plain HTTP fails the handshake and gets no HTTP
//! answer at all. IPv6 peers are counted per /64, which one host usually holds.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::cert::RemoteCert;

pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
pub const MAX_CONNECTIONS: usize = 128;
pub const MAX_PER_ADDRESS: usize = 16;
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connections get to finish once the hub shuts down.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Who a remote request came from (axum's `ConnectInfo<RemotePeer>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemotePeer(pub SocketAddr);

/// The server side of TLS with the given certificate: TLS 1.2 and 1.3 over
/// ring, HTTP/1.1 only (the hub serves no HTTP/2).
pub fn server_config(cert: RemoteCert) -> Result<Arc<rustls::ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?
        .with_no_client_auth()
        .with_single_cert(cert.chain, cert.key)
        .map_err(|err| format!("the remote certificate and key do not go together: {err}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// How many connections each address holds.
#[derive(Default)]
struct Counts {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// A place among the connections, given back when the connection ends.
struct Place {
    counts: Arc<Mutex<Counts>>,
    address: IpAddr,
}

/// The address a peer is counted under: an IPv6 one by its /64.
fn counted_as(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(prefix.into())
        }
        IpAddr::V6(v6) => IpAddr::V4(v6.to_ipv4_mapped().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED)),
        v4 => v4,
    }
}

impl Place {
    fn take(counts: &Arc<Mutex<Counts>>, address: IpAddr) -> Option<Self> {
        let address = counted_as(address);
        let mut held = counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let from_address = held.by_address.get(&address).copied().unwrap_or(0);
        if held.total >= MAX_CONNECTIONS || from_address >= MAX_PER_ADDRESS {
            return None;
        }
        held.total += 1;
        held.by_address.insert(address, from_address + 1);
        Some(Self { counts: counts.clone(), address })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut held = self.counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        held.total = held.total.saturating_sub(1);
        if let Some(count) = held.by_address.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                held.by_address.remove(&self.address);
            }
        }
    }
}

/// A TLS connection that holds its place until it is dropped.
pub struct Connection {
    tls: TlsStream<TcpStream>,
    _place: Place,
    /// Since when a write has waited for the client to read, if one does.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Connection {
    fn new(tls: TlsStream<TcpStream>, place: Place) -> Self {
        Self { tls, _place: place, stalled: None }
    }

    /// What a write that made no progress answers: wait, unless the client
    /// has not read for [`WRITE_STALL_TIMEOUT`].
    fn stall<T>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<T>> {
        let stalled = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(WRITE_STALL_TIMEOUT)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => {
                Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the remote client stopped reading")))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn wrote<T>(&mut self, poll: Poll<std::io::Result<T>>, cx: &mut Context<'_>) -> Poll<std::io::Result<T>> {
        match poll {
            Poll::Pending => self.stall(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl AsyncRead for Connection {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tls).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.tls).poll_write(cx, buf);
        self.wrote(poll, cx)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.tls).poll_flush(cx);
        self.wrote(poll, cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tls).poll_shutdown(cx)
    }
}

pub struct TlsListener {
    ready: mpsc::Receiver<(Connection, SocketAddr)>,
}

impl TlsListener {
    /// Starts accepting on `tcp`; the accepting ends when the listener is dropped.
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> Self {
        let (done, ready) = mpsc::channel(MAX_CONNECTIONS);
        let acceptor = TlsAcceptor::from(config);
        let counts = Arc::new(Mutex::new(Counts::default()));
        tokio::spawn(async move {
            loop {
                let (stream, peer) = tokio::select! {
                    accepted = tcp.accept() => match accepted {
                        Ok(accepted) => accepted,
                        Err(err) => {
                            // Out of file descriptors, say: wait a little rather than spin.
                            tracing::debug!("remote accept failed: {err}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                    () = done.closed() => return,
                };
                // Full: closed at once, accepting goes on.
                let Some(place) = Place::take(&counts, peer.ip()) else { continue };
                let _ = stream.set_nodelay(true);
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = done.send((Connection::new(tls, place), peer)).await;
                        }
                        Ok(Err(err)) => tracing::debug!(%peer, "remote TLS handshake failed: {err}"),
                        Err(_) => tracing::debug!(%peer, "remote TLS handshake timed out"),
                    }
                });
            }
        });
        Self { ready }
    }
}

/// Serves `router` on the listener's connections (HTTP/1.1, the header
/// timeout) until `shutdown`; each request carries `ConnectInfo<RemotePeer>`.
/// Connections still open then get [`CLOSE_GRACE`] to finish their answers,
/// and are waited for (an approval sent as the hub stops is answered or cut
/// before the store's last flush, as on loopback).
pub async fn serve(mut listener: TlsListener, router: Router, shutdown: CancellationToken) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
    let connections = tokio_util::task::TaskTracker::new();
    loop {
        let (connection, peer) = tokio::select! {
            ready = listener.ready.recv() => match ready {
                Some(ready) => ready,
                None => break,
            },
            () = shutdown.cancelled() => break,
        };
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(ConnectInfo(RemotePeer(peer)));
            router.clone().oneshot(request.map(axum::body::Body::new))
        });
        let serving = http.serve_connection(TokioIo::new(connection), service);
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            tokio::pin!(serving);
            tokio::select! {
                result = serving.as_mut() => {
                    if let Err(err) = result {
                        tracing::debug!(%peer, "remote connection ended: {err}");
                    }
                }
                () = shutdown.cancelled() => {
                    serving.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(CLOSE_GRACE, serving).await;
                }
            }
        });
    }
    connections.close();
    connections.wait().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_limited_in_all_and_per_address_and_given_back() {
        let counts = Arc::new(Mutex::new(Counts::default()));
        let one: IpAddr = [10, 0, 0, 1].into();
        let mine: Vec<Place> = (0..MAX_PER_ADDRESS).map(|_| Place::take(&counts, one).unwrap()).collect();
        assert!(Place::take(&counts, one).is_none(), "one address holds at most its share");
        let others: Vec<Place> = (0..MAX_CONNECTIONS - MAX_PER_ADDRESS)
            .map(|n| Place::take(&counts, IpAddr::from([10, 1, (n / 200) as u8, (n % 200) as u8])).unwrap())
            .collect();
        assert!(Place::take(&counts, [10, 9, 9, 9].into()).is_none(), "the listener holds at most its total");
        drop(mine);
        assert!(Place::take(&counts, one).is_some(), "places come back when connections end");
        drop(others);
        assert_eq!(counts.lock().unwrap().total, 0);
        assert!(counts.lock().unwrap().by_address.is_empty());
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
