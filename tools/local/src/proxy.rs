//! A TCP proxy on 127.0.0.1 between the functions and nx-27017, so that a drill can make MongoDB
//! unreachable for the functions only: `down` closes every open connection through it and
//! closes each new one as soon as it is accepted (the driver sees the server go away, as when
//! the Atlas access list or the network drops the functions); `up` passes connections through
//! again. The operator's tools and the runner's own client connect to nx-27017 directly.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the proxy did, for `sophia-local status`.
#[derive(Debug, Default)]
pub struct ProxyStats {
    /// Connections passed through.
    pub passed: AtomicU64,
    /// Connections closed on accept while down.
    pub refused: AtomicU64,
    /// Open connections closed when it went down.
    pub cut: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
}

/// A running proxy; stops when dropped.
#[derive(Debug)]
pub struct TcpProxy {
    addr: SocketAddr,
    target: SocketAddr,
    down: watch::Sender<bool>,
    pub stats: Arc<ProxyStats>,
    task: JoinHandle<()>,
}

impl TcpProxy {
    /// Listens on a free 127.0.0.1 port and forwards to `target`.
    pub async fn start(target: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (down, down_rx) = watch::channel(false);
        let stats = Arc::new(ProxyStats::default());
        let task = tokio::spawn(accept_loop(listener, target, down_rx, stats.clone()));
        Ok(Self { addr, target, down, stats, task })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn target(&self) -> SocketAddr {
        self.target
    }

    /// Makes MongoDB unreachable through the proxy (`true`) or reachable again (`false`).
    pub fn set_down(&self, down: bool) {
        self.down.send_replace(down);
    }

    pub fn is_down(&self) -> bool {
        *self.down.borrow()
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.task.abort();
        // Open connections end with their tasks' watch closing.
        self.down.send_replace(true);
    }
}

async fn accept_loop(listener: TcpListener, target: SocketAddr, down: watch::Receiver<bool>, stats: Arc<ProxyStats>) {
    loop {
        let Ok((client, _)) = listener.accept().await else { continue };
        if *down.borrow() {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            drop(client);
            continue;
        }
        stats.passed.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(relay(client, target, down.clone(), stats.clone()));
    }
}

async fn relay(mut client: TcpStream, target: SocketAddr, mut down: watch::Receiver<bool>, stats: Arc<ProxyStats>) {
    let Ok(mut server) = TcpStream::connect(target).await else { return };
    stats.open.fetch_add(1, Ordering::Relaxed);
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        // Down (or the proxy dropped): both sockets close here, mid-conversation.
        _ = down.wait_for(|d| *d) => { stats.cut.fetch_add(1, Ordering::Relaxed); }
    }
    stats.open.fetch_sub(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// An echo server on 127.0.0.1.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn round_trip(port: u16) -> std::io::Result<Vec<u8>> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await?;
        s.write_all(b"ping").await?;
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await?;
        Ok(buf.to_vec())
    }

    #[tokio::test]
    async fn down_cuts_open_connections_and_refuses_new_ones_until_up() {
        let proxy = TcpProxy::start(echo().await).await.unwrap();
        assert_eq!(round_trip(proxy.port()).await.unwrap(), b"ping");

        let mut open = TcpStream::connect(("127.0.0.1", proxy.port())).await.unwrap();
        open.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        open.read_exact(&mut buf).await.unwrap();
        proxy.set_down(true);
        // The open connection is closed by the proxy: the next read sees its end.
        let n = open.read(&mut buf).await.unwrap_or(0);
        assert_eq!(n, 0, "an open connection is cut when MongoDB goes down");
        assert!(round_trip(proxy.port()).await.is_err(), "a new connection is closed at once while down");
        assert_eq!(proxy.stats.cut.load(Ordering::Relaxed), 1);
        assert!(proxy.stats.refused.load(Ordering::Relaxed) >= 1);

        proxy.set_down(false);
        assert_eq!(round_trip(proxy.port()).await.unwrap(), b"ping");
    }
}
