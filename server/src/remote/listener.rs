//! The remote listener's TLS: connections are accepted and their handshakes
//! run side by side (a slow or silent client holds up no one, and gives up
//! after [`HANDSHAKE_TIMEOUT`]); only finished handshakes reach axum. Plain
//! HTTP fails the handshake and gets no HTTP answer at all.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::cert::RemoteCert;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes in progress at once; more wait for a place.
const HANDSHAKES_AT_ONCE: usize = 64;

pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<tokio::net::TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

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

impl TlsListener {
    /// Starts accepting on `tcp`; the accepting ends when the listener is dropped.
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let (done, ready) = mpsc::channel(HANDSHAKES_AT_ONCE);
        let acceptor = TlsAcceptor::from(config);
        let places = Arc::new(Semaphore::new(HANDSHAKES_AT_ONCE));
        tokio::spawn(async move {
            loop {
                let Ok(place) = places.clone().acquire_owned().await else { return };
                let (stream, peer) = tokio::select! {
                    accepted = tcp.accept() => match accepted {
                        Ok(accepted) => accepted,
                        Err(err) => {
                            tracing::debug!("remote accept failed: {err}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                    () = done.closed() => return,
                };
                let _ = stream.set_nodelay(true);
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = done.send((tls, peer)).await;
                        }
                        Ok(Err(err)) => tracing::debug!(%peer, "remote TLS handshake failed: {err}"),
                        Err(_) => tracing::debug!(%peer, "remote TLS handshake timed out"),
                    }
                    drop(place);
                });
            }
        });
        Ok(Self { ready, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(ready) => ready,
            // The accepting task cannot end while this holds the receiver.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// Who a remote request came from (axum's `ConnectInfo<RemotePeer>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemotePeer(pub SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>> for RemotePeer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        Self(*stream.remote_addr())
    }
}
