//! Serving clients: the client ports (clientPort plain or unified, secureClientPort) and their
//! TLS, each accepted connection bounded per address (maxClientCnxns) and served on a task of
//! its own (net/connection.rs), until a shutdown signal or the core stops.

use crate::config::Config;
use crate::core::CoreMsg;
use crate::net::connection::{self, ConnParams};
use crate::net::tls;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// How a connection accepted on a listener is served.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Plain,
    /// clientPort with client.portUnification: TLS if the first byte is 0x16.
    Unified,
    Tls,
}

async fn accept_opt(l: Option<&TcpListener>) -> io::Result<(TcpStream, SocketAddr)> {
    match l {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Serves one accepted connection: plaintext, or TLS after the handshake.
async fn serve_conn(
    stream: TcpStream,
    peer: SocketAddr,
    kind: Kind,
    tls: Option<Arc<tls::Acceptor>>,
    conn: u64,
    core_tx: mpsc::Sender<CoreMsg>,
    params: Arc<ConnParams>,
) {
    let is_tls = match (kind, &tls) {
        (Kind::Plain, _) | (_, None) => false,
        (Kind::Tls, Some(_)) => true,
        (Kind::Unified, Some(_)) => {
            let mut b = [0u8; 1];
            match tokio::time::timeout(params.handshake_timeout, stream.peek(&mut b)).await {
                Ok(Ok(1)) => b[0] == tls::TLS_HANDSHAKE_BYTE,
                _ => return,
            }
        }
    };
    let handshake_timeout = params.handshake_timeout;
    let client = connection::Client {
        peer,
        conn,
        core: core_tx,
        params,
    };
    let Some(acceptor) = tls.filter(|_| is_tls) else {
        connection::serve(stream, client).await;
        return;
    };
    let _ = stream.set_nodelay(true);
    let hs = tokio::time::timeout(handshake_timeout, acceptor.acceptor().accept(stream));
    match hs.await {
        Ok(Ok(s)) => {
            let x509 = s
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .and_then(tls::x509_id)
                .map(String::into_boxed_str);
            let (rd, wr) = tokio::io::split(s);
            connection::serve_halves(rd, wr, client, x509, None).await;
        }
        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed; closing"),
        Err(_) => tracing::debug!(%peer, "TLS handshake timed out; closing"),
    }
}

/// The client ports' TLS (secureClientPort, or a unified clientPort), its stores reloaded
/// when they change; also what makes x509 an ACL scheme.
pub(super) fn client_tls(cfg: &Config) -> io::Result<Option<Arc<tls::Acceptor>>> {
    if cfg.secure_client_port.is_none() && !cfg.port_unification {
        return Ok(None);
    }
    let a = tls::Acceptor::new(cfg.tls.clone()).map_err(io::Error::other)?;
    crate::acl::enable_x509();
    tls::spawn_reloader(a.clone(), crate::limits::TLS_RELOAD_CHECK);
    Ok(Some(a))
}

/// secureClientPort's listener, if one is configured.
pub(super) async fn bind_secure(cfg: &Config) -> io::Result<Option<TcpListener>> {
    let Some(port) = cfg.secure_client_port else {
        return Ok(None);
    };
    let host = cfg
        .secure_client_port_address
        .as_deref()
        .unwrap_or(&cfg.client_port_address);
    let addr = format!("{host}:{port}");
    let l = TcpListener::bind(&addr).await.map_err(|e| {
        io::Error::other(format!("cannot listen on {addr} (secureClientPort): {e}"))
    })?;
    Ok(Some(l))
}

/// What every client connection is bounded by: its frames, its outstanding requests, its
/// handshake's time, its unsent output and the server's.
pub(super) fn conn_params(cfg: &Config) -> Arc<ConnParams> {
    let params = Arc::new(ConnParams {
        max_buffer: cfg.jute_max_buffer,
        max_outstanding: cfg.max_outstanding_per_connection.max(1),
        handshake_timeout: Duration::from_millis(
            cfg.tick_time
                .max(crate::limits::HANDSHAKE_TICK_MIN_MS)
                .saturating_mul(crate::limits::HANDSHAKE_TICKS),
        ),
        output_budget: cfg.connection_output_budget(),
        global: crate::core::GlobalBudget::new(cfg.global_output_budget()),
    });
    tracing::info!(
        connection_output_budget = params.output_budget,
        global_output_budget = cfg.global_output_budget(),
        max_reply_size = ?cfg.max_reply_size(),
        "output bounds"
    );
    params
}

/// The client ports: clientPort (plain or unified), secureClientPort, and their TLS.
pub(super) struct Ports {
    pub(super) plain: Option<TcpListener>,
    pub(super) secure: Option<TcpListener>,
    pub(super) plain_kind: Kind,
    pub(super) tls: Option<Arc<tls::Acceptor>>,
}

impl Ports {
    pub(super) fn log(&self, cfg: &Config) -> io::Result<()> {
        if let Some(l) = &self.plain {
            tracing::info!(addr = %l.local_addr()?, port_unification = cfg.port_unification, "serving");
        }
        if let Some(l) = &self.secure {
            tracing::info!(addr = %l.local_addr()?, client_auth = ?cfg.tls.client_auth, "serving TLS (secureClientPort)");
        }
        Ok(())
    }
}

/// Accepts clients on `ports` until a shutdown signal (Ok) or the core stops on its own (an
/// error: no write may be acknowledged after it), each served on a task of its own.
pub(super) async fn serve_clients(
    ports: &Ports,
    core_done: &mut tokio::sync::oneshot::Receiver<()>,
    core_tx: &mpsc::Sender<CoreMsg>,
    params: Arc<ConnParams>,
    max_per_ip: usize,
) -> io::Result<()> {
    let per_ip: Arc<parking_lot::Mutex<HashMap<IpAddr, usize>>> = Default::default();
    let next_conn = AtomicU64::new(1);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    let mut accept_errors = AcceptErrors::default();
    loop {
        let accepted = tokio::select! {
            r = accept_opt(ports.plain.as_ref()) => r.map(|(s, p)| (s, p, ports.plain_kind)),
            r = accept_opt(ports.secure.as_ref()) => r.map(|(s, p)| (s, p, Kind::Tls)),
            _ = &mut shutdown => return Ok(()),
            _ = &mut *core_done => {
                return Err(io::Error::other("the core stopped (the log above says why); exiting so no write is acknowledged without being durable or applied from a diverged state"));
            }
        };
        let (stream, peer, kind) = match accepted {
            Ok(x) => x,
            Err(e) => {
                accept_errors.note(&e);
                tokio::time::sleep(crate::limits::ACCEPT_RETRY).await;
                continue;
            }
        };
        if !admit(&per_ip, peer, max_per_ip) {
            continue;
        }
        let conn = next_conn.fetch_add(1, Ordering::Relaxed);
        let (core_tx, params, per_ip) = (core_tx.clone(), params.clone(), per_ip.clone());
        let tls = ports.tls.clone();
        tokio::spawn(async move {
            serve_conn(stream, peer, kind, tls, conn, core_tx, params).await;
            let mut m = per_ip.lock();
            if let Some(n) = m.get_mut(&peer.ip()) {
                *n -= 1;
                if *n == 0 {
                    m.remove(&peer.ip());
                }
            }
        });
    }
}

/// Whether `peer`'s address may open one more connection (maxClientCnxns; 0: no bound); if
/// so it is counted.
fn admit(
    per_ip: &parking_lot::Mutex<HashMap<IpAddr, usize>>,
    peer: SocketAddr,
    max: usize,
) -> bool {
    let mut m = per_ip.lock();
    let n = m.entry(peer.ip()).or_insert(0);
    if max > 0 && *n >= max {
        tracing::warn!(%peer, limit = max, "too many connections from this address; closing");
        crate::metrics::shared().connection_rejected();
        return false;
    }
    *n += 1;
    true
}

/// Accept errors (EMFILE, ENFILE) come back every 50 ms while they last: said once, then at
/// most every 10 s with how many were not (once 20 lines a second filled the log).
#[derive(Default)]
struct AcceptErrors {
    last: Option<Instant>,
    quiet: u64,
}

impl AcceptErrors {
    fn note(&mut self, e: &io::Error) {
        if self
            .last
            .is_none_or(|t| t.elapsed() >= crate::limits::ACCEPT_ERROR_LOG_EVERY)
        {
            tracing::warn!(error = %e, not_logged = self.quiet, "accept failed");
            (self.last, self.quiet) = (Some(Instant::now()), 0);
        } else {
            self.quiet += 1;
        }
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
