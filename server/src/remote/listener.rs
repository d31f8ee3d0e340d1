//! The remote listener's connections. Anyone who can reach its port may
//! connect, so what a connection may hold is bounded: its place
//! (`places.rs`: unpaired connections have a small pool of their own and a
//! lifetime, a paired device's connection moves to its own pool once a
//! request shows it is paired, and a new connection is never refused: the
//! oldest unpaired one makes room), a TLS handshake within
//! [`HANDSHAKE_TIMEOUT`], a request's headers within [`HEADER_TIMEOUT`] (also
//! the longest a kept-alive connection idles), and a client that stops
//! reading what it asked for is dropped after [`WRITE_STALL_TIMEOUT`]. (What
//! an unpaired device's request may take in all is the gate's:
//! `http/remote.rs`.) Handshakes run side by side, so a slow client holds up
//! no one. Plain HTTP fails the handshake and gets no HTTP answer at all.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
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
use super::places::{Place, Places, MAX_PAIRED, MAX_UNPAIRED};

pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
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

/// The place of the connection a request came on (a request extension): the
/// gate moves it to the paired pool once the request shows a paired device.
#[derive(Clone)]
pub struct ConnectionPlace(pub Arc<Place>);

/// A TLS connection that holds its place until it is dropped.
pub struct Connection {
    tls: TlsStream<TcpStream>,
    place: Arc<Place>,
    /// Since when a write has waited for the client to read, if one does.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Connection {
    fn new(tls: TlsStream<TcpStream>, place: Arc<Place>) -> Self {
        Self { tls, place, stalled: None }
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
        let (done, ready) = mpsc::channel(MAX_UNPAIRED + MAX_PAIRED);
        let acceptor = TlsAcceptor::from(config);
        let places = Places::default();
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
                // A full pool closes an unpaired connection of the busiest address; an
                // address opening connections too fast is closed at once.
                let Some(place) = places.take(peer.ip()) else { continue };
                let place = Arc::new(place);
                let _ = stream.set_nodelay(true);
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream));
                    let shaken = tokio::select! {
                        shaken = handshake => shaken,
                        () = place.closing() => return,
                    };
                    match shaken {
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
        let place = connection.place.clone();
        let here = ConnectionPlace(place.clone());
        let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(ConnectInfo(RemotePeer(peer)));
            request.extensions_mut().insert(here.clone());
            router.clone().oneshot(request.map(axum::body::Body::new))
        });
        let serving = http.serve_connection(TokioIo::new(connection), service);
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            tokio::pin!(serving);
            tokio::select! {
                // Its place went to a newer connection, or its unpaired lifetime is over.
                () = place.closing() => tracing::debug!(%peer, "remote connection closed to make room"),
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
