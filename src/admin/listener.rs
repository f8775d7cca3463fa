//! The HTTP listeners' bounds: at most `limit` connections served at once (more wait in the
//! kernel's backlog), and a connection idle for `idle` (nothing read) is closed, so idle or
//! slow clients cannot pile up tasks and sockets.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// Connections each HTTP listener serves at once.
pub const MAX_CONNECTIONS: usize = 64;
/// A connection that sends nothing for this long is closed (a scraper or a health check
/// sends its request at once; keep-alive connections are reopened by the client).
pub const IDLE: Duration = Duration::from_secs(30);

pub struct Bounded {
    inner: TcpListener,
    permits: Arc<Semaphore>,
    idle: Duration,
}

impl Bounded {
    pub fn new(inner: TcpListener, limit: usize, idle: Duration) -> Self {
        Bounded {
            inner,
            permits: Arc::new(Semaphore::new(limit.max(1))),
            idle,
        }
    }
}

/// An accepted connection holding its permit until dropped.
pub struct Conn {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl axum::serve::Listener for Bounded {
    type Io = Conn;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Conn, SocketAddr) {
        let permit = match self.permits.clone().acquire_owned().await {
            Ok(p) => p,
            // The semaphore is never closed.
            Err(_) => std::future::pending().await,
        };
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    let deadline = Box::pin(tokio::time::sleep(self.idle));
                    return (
                        Conn {
                            stream,
                            _permit: permit,
                            idle: self.idle,
                            deadline,
                        },
                        addr,
                    );
                }
                // Out of descriptors and the like: wait, as axum's own listener does.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    let at = Instant::now() + self.idle;
                    self.deadline.as_mut().reset(at);
                }
                Poll::Ready(r)
            }
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "idle HTTP connection closed",
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn serve(limit: usize, idle: Duration) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let app = axum::Router::new().route("/", get(|| async { "hi" }));
        let server = axum::serve(Bounded::new(l, limit, idle), app);
        tokio::spawn(async move { server.await });
        addr
    }

    async fn request(s: &mut TcpStream) -> String {
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    /// A client that connects and sends nothing is closed by the server.
    #[tokio::test]
    async fn idle_connections_are_closed() {
        let addr = serve(4, Duration::from_millis(200)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(Duration::from_secs(30), s.read(&mut buf))
            .await
            .unwrap();
        assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
    }

    /// Past the limit a connection waits for a slot: the one idle holder is closed, then the
    /// waiting client is served.
    #[tokio::test]
    async fn connections_past_the_limit_wait_for_a_slot() {
        let addr = serve(1, Duration::from_millis(300)).await;
        let _holder = TcpStream::connect(addr).await.unwrap();
        let mut s = TcpStream::connect(addr).await.unwrap();
        let r = tokio::time::timeout(Duration::from_secs(30), request(&mut s))
            .await
            .unwrap();
        assert!(r.starts_with("HTTP/1.1 200") && r.ends_with("hi"), "{r}");
    }
}
