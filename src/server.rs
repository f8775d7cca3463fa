//! The listener: accepts connections (bounded per client IP), spawns their tasks, drives the
//! session-expiry tick, and shuts down cleanly on SIGTERM/SIGINT.

use crate::config::Config;
use crate::connection::{self, ConnParams};
use crate::core::{Core, CoreConfig, CoreMsg};
use crate::log::{self, LogSink};
use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// Reads the server secret (for session passwords) from the data dir, creating it once.
fn load_secret(cfg: &Config) -> io::Result<[u8; 16]> {
    std::fs::create_dir_all(&cfg.data_dir)?;
    let path = cfg.data_dir.join("secret");
    let mut secret = [0u8; 16];
    match std::fs::read(&path) {
        Ok(b) if b.len() == 16 => secret.copy_from_slice(&b),
        _ => {
            use std::io::Read;
            std::fs::File::open("/dev/urandom")?.read_exact(&mut secret)?;
            let tmp = cfg.data_dir.join("secret.tmp");
            std::fs::write(&tmp, secret)?;
            std::fs::File::open(&tmp)?.sync_all()?;
            std::fs::rename(&tmp, &path)?;
        }
    }
    Ok(secret)
}

pub async fn run(cfg: Config, listener: TcpListener) -> io::Result<()> {
    let secret = load_secret(&cfg)?;
    let core_cfg = CoreConfig {
        tick_ms: cfg.tick_time,
        min_session_timeout: cfg.min_timeout(),
        max_session_timeout: cfg.max_timeout(),
        max_buffer: cfg.jute_max_buffer,
        ttl_enabled: cfg.extended_types_enabled,
        four_letter_words: cfg.four_letter_words.clone(),
        super_digest: cfg.super_digest.clone(),
        secret,
        client_port: cfg.client_port,
        data_dir: cfg.data_dir.display().to_string(),
        data_log_dir: cfg
            .data_log_dir
            .as_ref()
            .unwrap_or(&cfg.data_dir)
            .display()
            .to_string(),
        max_client_cnxns: cfg.max_client_cnxns,
        container_check_ms: cfg.container_check_interval_ms,
    };
    let (core_tx, core_rx) = mpsc::channel::<CoreMsg>(cfg.global_outstanding_limit.max(64));
    let durable_tx = core_tx.clone();
    let sink: Box<dyn LogSink> = Box::new(log::MemorySink);
    let log_tx = log::spawn_writer(sink, move |r| {
        let msg = match r {
            Ok(z) => CoreMsg::Durable(z),
            Err(e) => CoreMsg::LogFailed(e.to_string()),
        };
        let _ = durable_tx.blocking_send(msg);
    })?;
    let core = Core::new(core_cfg, log_tx);
    let core_thread = std::thread::Builder::new()
        .name("palisade-core".into())
        .spawn(move || core.run(core_rx))?;

    let tick_tx = core_tx.clone();
    let tick_every = Duration::from_millis((cfg.tick_time / 2).clamp(50, 1000));
    tokio::spawn(async move {
        let mut t = tokio::time::interval(tick_every);
        loop {
            t.tick().await;
            if tick_tx.send(CoreMsg::Tick).await.is_err() {
                return;
            }
        }
    });

    let params = Arc::new(ConnParams {
        max_buffer: cfg.jute_max_buffer,
        max_outstanding: cfg.max_outstanding_per_connection.max(1),
        handshake_timeout: Duration::from_millis(cfg.tick_time.max(1000) * 10),
    });
    let per_ip: Arc<parking_lot::Mutex<HashMap<IpAddr, usize>>> = Default::default();
    let next_conn = AtomicU64::new(1);
    tracing::info!(addr = %listener.local_addr()?, "serving");

    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        {
            let mut m = per_ip.lock();
            let n = m.entry(peer.ip()).or_insert(0);
            if cfg.max_client_cnxns > 0 && *n >= cfg.max_client_cnxns {
                tracing::warn!(%peer, limit = cfg.max_client_cnxns, "too many connections from this address; closing");
                continue;
            }
            *n += 1;
        }
        let conn = next_conn.fetch_add(1, Ordering::Relaxed);
        let (core_tx, params, per_ip) = (core_tx.clone(), params.clone(), per_ip.clone());
        tokio::spawn(async move {
            connection::serve(stream, peer, conn, core_tx, params).await;
            let mut m = per_ip.lock();
            if let Some(n) = m.get_mut(&peer.ip()) {
                *n -= 1;
                if *n == 0 {
                    m.remove(&peer.ip());
                }
            }
        });
    }
    tracing::info!("shutting down: no new connections; finishing in-flight writes");
    drop(listener);
    let _ = core_tx.send(CoreMsg::Shutdown).await;
    // The core stops once its in-flight writes are applied; poll it off the runtime.
    let _ = tokio::task::spawn_blocking(move || core_thread.join()).await;
    Ok(())
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
