//! The HTTP listeners' bounds. Each request must send its headers within `ADMIN_HEADER_DEADLINE`
//! of its connection being accepted, or of the previous response on it: a client that drips
//! its headers (or sends nothing) is closed then, whatever the other connections do, so slow
//! clients cannot hold a listener's slots from the health checks and scrapes behind them. A
//! listener serves at most `limit` connections at once (more wait in the kernel's backlog):
//! far more than a slow-drip attack of a hundred connections, few enough for their sockets
//! and buffers to stay small. A connection idle for `idle` (nothing read) is closed too.

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
                Err(_) => tokio::time::sleep(crate::limits::ACCEPT_RETRY).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// Whether a listener speaks HTTPS (ZooKeeper's `admin.forceHttps`, `metricsProvider.httpsPort`)
/// or both HTTP and HTTPS on one port (`admin.portUnification`: TLS when the first byte is a
/// TLS handshake's), with the acceptor whose certificates `net/tls.rs` reloads.
#[derive(Clone)]
pub enum Security {
    Plain,
    Tls(Arc<crate::net::tls::Acceptor>),
    Unified(Arc<crate::net::tls::Acceptor>),
}

/// Serves `app` on `listener` until the runtime stops: each connection a task of its own,
/// HTTP/1 with `ADMIN_HEADER_DEADLINE` for every request's headers (and for a TLS handshake).
pub async fn serve(listener: Bounded, app: axum::Router, security: Security) {
    serve_within(
        listener,
        app,
        crate::limits::ADMIN_HEADER_DEADLINE,
        security,
    )
    .await
}

async fn serve_within(
    mut listener: Bounded,
    app: axum::Router,
    header_deadline: Duration,
    security: Security,
) {
    use axum::serve::Listener as _;
    loop {
        let (conn, addr) = listener.accept().await;
        let (app, security) = (app.clone(), security.clone());
        tokio::spawn(async move {
            let acceptor = match security {
                Security::Plain => None,
                Security::Tls(a) => Some(a),
                Security::Unified(a) => {
                    let first = tokio::time::timeout(header_deadline, conn.first_byte()).await;
                    match first {
                        Ok(Some(b)) if b == crate::net::tls::TLS_HANDSHAKE_BYTE => Some(a),
                        Ok(Some(_)) => None,
                        _ => return,
                    }
                }
            };
            // Who is asking, for the commands that authenticate their caller (auth.rs).
            let mut caller = super::auth::Caller {
                ip: addr.ip(),
                x509: None,
            };
            match acceptor {
                None => serve_conn(conn, app, caller, header_deadline).await,
                Some(a) => {
                    let tls =
                        tokio::time::timeout(header_deadline, a.acceptor().accept(conn)).await;
                    let Ok(Ok(tls)) = tls else {
                        tracing::debug!(%addr, "HTTPS handshake failed or timed out");
                        return;
                    };
                    caller.x509 = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .and_then(crate::net::tls::x509_id)
                        .map(Into::into);
                    serve_conn(tls, app, caller, header_deadline).await
                }
            }
        });
    }
}

async fn serve_conn<IO>(io: IO, app: axum::Router, caller: super::auth::Caller, deadline: Duration)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let app = app.layer(axum::Extension(caller));
    let service = hyper_util::service::TowerToHyperService::new(app);
    let served = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(deadline)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service)
        .await;
    if let Err(e) = served {
        tracing::debug!(error = %e, "HTTP connection ended");
    }
}

impl Conn {
    /// The first byte the client sent, without taking it (None: closed first).
    async fn first_byte(&self) -> Option<u8> {
        let mut b = [0u8; 1];
        match self.stream.peek(&mut b).await {
            Ok(1) => Some(b[0]),
            _ => None,
        }
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
        serve_for(limit, idle, Duration::from_secs(30)).await
    }

    async fn serve_for(limit: usize, idle: Duration, header_deadline: Duration) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let app = axum::Router::new().route("/", get(|| async { "hi" }));
        tokio::spawn(serve_within(
            Bounded::new(l, limit, idle),
            app,
            header_deadline,
            Security::Plain,
        ));
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

    /// A client that drips its headers a byte at a time (each byte well within the idle
    /// bound) is closed at its header deadline; meanwhile other clients are served.
    #[tokio::test]
    async fn a_request_whose_headers_drip_is_closed_at_its_deadline() {
        let addr = serve_for(4, Duration::from_secs(30), Duration::from_millis(400)).await;
        let mut drip = TcpStream::connect(addr).await.unwrap();
        drip.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Drip: ")
            .await
            .unwrap();
        let started = Instant::now();
        let mut closed = None;
        while started.elapsed() < Duration::from_secs(10) {
            let _ = drip.write_all(b"a").await;
            let mut buf = [0u8; 256];
            match tokio::time::timeout(Duration::from_millis(50), drip.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    closed = Some(started.elapsed());
                    break;
                }
                Ok(Ok(_)) => {}
                Err(_) => {
                    // Still open: another client is served at once.
                    let mut s = TcpStream::connect(addr).await.unwrap();
                    let r = tokio::time::timeout(Duration::from_secs(5), request(&mut s))
                        .await
                        .unwrap();
                    assert!(r.ends_with("hi"), "{r}");
                }
            }
        }
        let closed = closed.expect("the dripping connection was never closed");
        assert!(
            closed >= Duration::from_millis(300) && closed < Duration::from_secs(3),
            "{closed:?}"
        );
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
