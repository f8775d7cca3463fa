//! The server: recovers the data dir (WAL + snapshots), starts the log, snapshot and core
//! threads, accepts connections (bounded per client IP), drives the session-expiry tick, and
//! shuts down cleanly on SIGTERM/SIGINT — or with an error if the core stops on its own (a
//! failed log write: no write may be acknowledged after it). Serving the client ports is
//! `server/clients.rs`.
//!
//! Owns: the process's threads and tasks, the client ports. May not touch: the state,
//! sessions or watches (the core's), the log's and snapshots' files (durability's).

mod clients;

use crate::config::Config;
use crate::core::{ConsensusRoutes, Routes};
use crate::core::{Core, CoreConfig, CoreMsg};
use crate::durability::datadir;
use crate::durability::log::{self, LogSink};
use crate::durability::recovery::{self, Restored};
use crate::durability::snapshotter::{self, SnapDirs};
use crate::limits::MAX_TXN_BYTES;
use clients::{bind_secure, client_tls, conn_params, serve_clients, Kind, Ports};
use std::io;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The child tables' hash key (see state/tree): derived from the secret, so every process of
/// this installation lays tables out alike while clients cannot predict it.
fn hash_key(secret: &[u8; 16]) -> u64 {
    let mut h = sha1_smol::Sha1::new();
    h.update(b"palisade child-table hash key");
    h.update(secret);
    let d = h.digest().bytes();
    let mut k = [0u8; 8];
    k.copy_from_slice(d.get(..8).unwrap_or(&[0; 8]));
    u64::from_le_bytes(k)
}

/// Opens the log (repairing a torn tail, refusing corruption) and rebuilds the tree from the
/// newest snapshot plus the log.
fn open_data(cfg: &Config, identity: u64) -> io::Result<(palisade_wal::Wal, Restored)> {
    let t0 = std::time::Instant::now();
    let opts = palisade_wal::Options {
        dir: cfg.log_dir(),
        segment_bytes: cfg.pre_alloc_size_kb.saturating_mul(1024),
        sync: cfg.force_sync,
        max_payload: MAX_TXN_BYTES,
        identity: Some(identity),
    };
    if !cfg.force_sync {
        tracing::warn!("forceSync=no: writes are acknowledged before they reach the disk; an OS crash or power loss can lose acknowledged writes");
    }
    let on_corruption = if cfg.truncate_corrupt_log {
        palisade_wal::Corruption::Truncate
    } else {
        palisade_wal::Corruption::Refuse
    };
    let (wal, log) = palisade_wal::Wal::open(opts, on_corruption)
        .map_err(|e| io::Error::other(format!("cannot open the log: {e}")))?;
    tracing::info!(report = %log.report(), "log opened");
    datadir::create_private_dir(&cfg.snap_dir())?;
    palisade_snapshot::check_identity(&cfg.snap_dir(), identity)
        .map_err(|e| io::Error::other(format!("cannot recover the data dir: {e}")))?;
    let mut progress = crate::metrics::progress::Progress::new(
        log.report().last_txn_zxid,
        crate::limits::RECOVERY_PROGRESS_EVERY,
    );
    let restored = recovery::recover_with_progress(&cfg.snap_dir(), &log, &mut |s, z, b| {
        progress.tick(s, z, b)
    })
    .map_err(|e| io::Error::other(format!("cannot recover the data dir: {e}")))?;
    crate::metrics::shared().recovered(t0.elapsed().as_millis() as u64, restored.replayed);
    tracing::info!(
        snapshot = %restored.snapshot.as_ref().map_or("none".into(), |p| p.display().to_string()),
        replayed = restored.replayed,
        digests_checked = restored.digests_checked,
        zxid = format_args!("{:#x}", restored.state.zxid()),
        sessions = restored.state.sessions().len(),
        znodes = restored.state.tree.znode_count(),
        ms = t0.elapsed().as_millis() as u64,
        "recovered"
    );
    Ok((wal, restored))
}

type CoreThread = (
    std::thread::JoinHandle<()>,
    tokio::sync::oneshot::Receiver<()>,
);

/// Standalone: the tree from the newest snapshot plus the log, the log writer and the
/// snapshotter, and the core thread.
fn start_standalone(
    cfg: &Config,
    core_cfg: CoreConfig,
    core_tx: mpsc::Sender<CoreMsg>,
    core_rx: mpsc::Receiver<CoreMsg>,
    spin_wait: Duration,
) -> io::Result<CoreThread> {
    let identity = datadir::load_identity(&cfg.data_dir, &[cfg.log_dir(), cfg.snap_dir()])?;
    let (wal, restored) = open_data(cfg, identity)?;
    let durable_tx = core_tx.clone();
    let sink: Box<dyn LogSink> =
        Box::new(crate::durability::timed_sink::TimedSink::new(Box::new(wal)));
    let log_dir = cfg.log_dir();
    let log_tx = log::spawn_writer(
        sink,
        spin_wait,
        move |r| {
            let msg = match r {
                Ok(z) => CoreMsg::Durable(z),
                Err(e) => CoreMsg::LogFailed(e.to_string()),
            };
            let _ = durable_tx.blocking_send(msg);
        },
        move |paths| palisade_wal::Wal::remove_segments(&log_dir, paths).map_err(io::Error::other),
    )?;
    let (spare_tx, spare_rx) = std::sync::mpsc::channel();
    let snap_link = snapshotter::spawn(
        SnapDirs {
            snap_dir: cfg.snap_dir(),
            retain: cfg.snap_retain_count.max(1) as usize,
            identity,
            log: log_tx.clone(),
        },
        spare_tx,
    )?;
    let mut core = Core::new(core_cfg);
    core.restore(restored);
    core.enable_snapshots(snap_link, spare_rx, cfg.snap_count);
    spawn_core(core, core_rx, Routes::Log(log_tx))
}

/// The core thread, and what says it has ended.
fn spawn_core(
    core: Core,
    core_rx: mpsc::Receiver<CoreMsg>,
    routes: Routes,
) -> io::Result<CoreThread> {
    let (core_done_tx, core_done) = tokio::sync::oneshot::channel::<()>();
    let core_thread = std::thread::Builder::new()
        .name("palisade-core".into())
        .spawn(move || {
            core.run(core_rx, routes);
            let _ = core_done_tx.send(());
        })?;
    Ok((core_thread, core_done))
}

/// An ensemble member: the core thread first (Raft's storage installs a saved snapshot
/// through it), then Raft (ensemble/raft/wiring.rs).
async fn start_member(
    cfg: &Config,
    core_cfg: CoreConfig,
    core_tx: mpsc::Sender<CoreMsg>,
    core_rx: mpsc::Receiver<CoreMsg>,
) -> io::Result<(
    std::thread::JoinHandle<()>,
    tokio::sync::oneshot::Receiver<()>,
    Option<crate::ensemble::raft::wiring::Running>,
)> {
    let myid = read_myid(cfg)?;
    let settings = raft_settings(cfg, myid)?;
    let (propose_tx, propose_rx) = mpsc::unbounded_channel();
    let (leader_tx, leader_rx) = mpsc::channel(crate::limits::FORWARD_QUEUE);
    let (snapshot_tx, snapshot_rx) = mpsc::channel(crate::limits::RAFT_SNAPSHOT_ASKS);
    let (leadership_tx, leadership_rx) = mpsc::unbounded_channel();
    let mut core = Core::new(core_cfg);
    let info = std::sync::Arc::new(parking_lot::Mutex::new(Default::default()));
    let initial = std::sync::Arc::new(crate::ensemble::dynamic::DynConfig::from_static(
        &cfg.members,
    ));
    let (desired_tx, desired_rx) = tokio::sync::watch::channel(initial);
    core.join(crate::core::member::MemberLinks {
        myid,
        conf: crate::ensemble::members::conf_header(
            &cfg.members,
            myid,
            cfg.init_limit,
            cfg.sync_limit,
        ),
        info: info.clone(),
        to_leader: Box::new(leader_tx.clone()),
        snapshot: Box::new(snapshot_tx.clone()),
        snap_count: cfg.snap_count,
        // ZooKeeper waits max(2 s, tickTime) before it calls itself partitioned.
        read_only: cfg.read_only_mode.then(|| {
            Duration::from_millis(cfg.tick_time.max(crate::limits::READ_ONLY_AFTER_MIN_MS))
        }),
        members: cfg.members.clone(),
        leadership: Box::new(leadership_tx.clone()),
        alone: cfg.force_new_ensemble,
    });
    let routes = Routes::Consensus(ConsensusRoutes {
        propose: propose_tx,
        to_leader: leader_tx,
        snapshot: snapshot_tx,
        desired: desired_tx,
        leadership: leadership_tx,
    });
    let (core_thread, core_done) = spawn_core(core, core_rx, routes)?;
    let running = crate::ensemble::raft::wiring::spawn(
        settings,
        myid,
        info,
        core_tx,
        crate::ensemble::raft::wiring::Channels {
            propose: propose_rx,
            to_leader: leader_rx,
            snapshot: snapshot_rx,
            desired: desired_rx,
            leadership: leadership_rx,
        },
    )
    .await?;
    Ok((core_thread, core_done, Some(running)))
}

/// This member's id, from dataDir/myid.
fn read_myid(cfg: &Config) -> io::Result<u64> {
    let text = std::fs::read_to_string(cfg.data_dir.join("myid")).map_err(|e| {
        io::Error::other(format!(
            "{}: {e} (an ensemble member needs dataDir/myid holding its server.N id)",
            cfg.data_dir.join("myid").display()
        ))
    })?;
    crate::ensemble::members::parse_myid(&text).map_err(io::Error::other)
}

/// What the member's Raft takes from zoo.cfg: its data dir's identity (shared with the Raft
/// log under `dataLogDir/raft`), how its peer links prove who they are, its timing.
fn raft_settings(cfg: &Config, myid: u64) -> io::Result<crate::ensemble::raft::wiring::Settings> {
    let raft_dir = cfg.log_dir().join("raft");
    let identity = datadir::load_identity(&cfg.data_dir, std::slice::from_ref(&raft_dir))?;
    let listen = cfg
        .members
        .iter()
        .find(|m| m.id == myid)
        .and_then(crate::ensemble::raft::reconcile::peer_addr);
    let security = crate::ensemble::link::Security::open(
        myid,
        listen,
        &cfg.quorum,
        cfg.sasl.jaas_file.as_deref(),
    )
    .map_err(io::Error::other)?;
    Ok(crate::ensemble::raft::wiring::Settings {
        security,
        force_new_ensemble: cfg.force_new_ensemble,
        identity,
        members: cfg.members.clone(),
        dir: raft_dir,
        tick_time: cfg.tick_time,
        init_limit: cfg.init_limit,
        sync_limit: cfg.sync_limit,
        snap_count: cfg.snap_count,
        segment_bytes: cfg.pre_alloc_size_kb.saturating_mul(1024),
        spin_wait: cfg.spin_wait(),
        reconfig: cfg.reconfig_enabled,
    })
}

/// Binds the AdminServer and the Prometheus endpoint when configured. A port that cannot be
/// bound is a warning, as in ZooKeeper: the client port is what must work.
async fn start_http(cfg: &Config, core: &crate::admin::http_slot::CoreSlot) {
    let a = &cfg.admin;
    if a.enable {
        let addr = format!("{}:{}", a.address, a.port);
        match TcpListener::bind(&addr).await {
            Ok(l) => {
                tracing::info!(%addr, url = %a.command_url, "AdminServer listening");
                let info = crate::admin::commands::Info {
                    client_port: cfg.client_port,
                    data_dir: cfg.data_dir.clone(),
                    data_log_dir: cfg
                        .data_log_dir
                        .clone()
                        .unwrap_or_else(|| cfg.data_dir.clone()),
                    snap_dir: cfg.snap_dir(),
                    tick_time: cfg.tick_time,
                    max_client_cnxns: cfg.max_client_cnxns,
                    min_session_timeout: cfg.min_timeout(),
                    max_session_timeout: cfg.max_timeout(),
                    initial_configuration: a.initial_text.clone(),
                };
                let opts = crate::admin::AdminOpts {
                    super_digest: cfg.super_digest.clone(),
                    snapshot_enabled: a.snapshot_enabled,
                    restore_enabled: a.restore_enabled,
                    rate_interval: std::time::Duration::from_millis(a.rate_limiter_interval_ms),
                };
                match crate::admin::admin_security(cfg) {
                    Ok(sec) => {
                        crate::admin::serve_admin(l, core.clone(), info, &a.command_url, opts, sec)
                    }
                    Err(e) => tracing::warn!(%addr, error = %e, "AdminServer not started"),
                }
            }
            Err(e) => tracing::warn!(%addr, error = %e, "AdminServer not started"),
        }
    }
    if a.prometheus {
        for (port, sec) in crate::admin::metrics_listeners(a) {
            let addr = format!("{}:{port}", a.metrics_host);
            let sec = match sec {
                Ok(sec) => sec,
                Err(e) => {
                    tracing::warn!(%addr, error = %e, "Prometheus endpoint not started");
                    continue;
                }
            };
            match TcpListener::bind(&addr).await {
                Ok(l) => {
                    tracing::info!(%addr, "Prometheus /metrics listening");
                    crate::admin::serve_metrics(l, core.clone(), sec);
                }
                Err(e) => tracing::warn!(%addr, error = %e, "Prometheus endpoint not started"),
            }
        }
    }
}

/// Serves on `listener` (clientPort; `None` for a TLS-only config) and on secureClientPort.
pub async fn run(cfg: Config, listener: Option<TcpListener>) -> io::Result<()> {
    let core_slot = crate::admin::http_slot::CoreSlot::default();
    start_http(&cfg, &core_slot).await;
    let tls = client_tls(&cfg)?;
    // SASL users from the JAAS file, and enforce.auth: refused here, before any port is
    // served, if the configuration is incomplete.
    let auth = cfg.sasl.resolve(tls.is_some()).map_err(io::Error::other)?;
    if auth.sasl.is_some() {
        crate::acl::enable_sasl();
    }
    let ports = Ports {
        plain: listener,
        secure: bind_secure(&cfg).await?,
        plain_kind: if cfg.port_unification {
            Kind::Unified
        } else {
            Kind::Plain
        },
        tls,
    };
    let secret = datadir::load_secret(&cfg.data_dir)?;
    crate::state::tree::set_hash_key(hash_key(&secret));
    let spin_wait = cfg.spin_wait();
    if cfg.skip_acl {
        tracing::warn!("skipACL=yes: no ACL is checked");
    }
    crate::acl::set_skip(cfg.skip_acl);
    let core_cfg = core_config(&cfg, secret, spin_wait, auth);
    let (core_tx, core_rx) = mpsc::channel::<CoreMsg>(
        cfg.global_outstanding_limit
            .max(crate::limits::CORE_INBOX_MIN),
    );
    let (core_thread, mut core_done, member) = if cfg.members.len() > 1 {
        start_member(&cfg, core_cfg, core_tx.clone(), core_rx).await?
    } else {
        let (t, d) = start_standalone(&cfg, core_cfg, core_tx.clone(), core_rx, spin_wait)?;
        (t, d, None)
    };
    let _ = core_slot.set(core_tx.clone());
    spawn_ticks(core_tx.clone(), cfg.tick_time);
    let params = conn_params(&cfg);
    ports.log(&cfg)?;
    serve_clients(
        &ports,
        &mut core_done,
        &core_tx,
        params,
        cfg.max_client_cnxns,
    )
    .await?;
    tracing::info!("shutting down: no new connections; finishing in-flight writes");
    drop(ports);
    let _ = core_tx.send(CoreMsg::Shutdown).await;
    // The core stops once its in-flight writes are applied; poll it off the runtime.
    if let Some(m) = member {
        m.shutdown().await;
    }
    let _ = tokio::task::spawn_blocking(move || core_thread.join()).await;
    Ok(())
}

/// What the core takes from zoo.cfg.
fn core_config(
    cfg: &Config,
    secret: [u8; 16],
    spin_wait: Duration,
    auth: crate::auth::AuthPolicy,
) -> CoreConfig {
    CoreConfig {
        tick_ms: cfg.tick_time,
        min_session_timeout: cfg.min_timeout(),
        max_session_timeout: cfg.max_timeout(),
        max_buffer: cfg.jute_max_buffer,
        max_reply: cfg.max_reply_size().unwrap_or(usize::MAX),
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
        spin_wait,
        zookeeper_sessions: crate::migrate::import::imported_sessions(&cfg.data_dir),
        restore_reader: crate::migrate::import::from_stream,
        auth,
        reconfig_enabled: cfg.reconfig_enabled,
        standalone_enabled: cfg.standalone_enabled,
    }
}

/// The core's tick (session expiry, the reaper, liveness), every half tickTime within bounds.
fn spawn_ticks(core_tx: mpsc::Sender<CoreMsg>, tick_time: u64) {
    let every = Duration::from_millis((tick_time / 2).clamp(
        crate::limits::CORE_TICK_MIN_MS,
        crate::limits::CORE_TICK_MAX_MS,
    ));
    tokio::spawn(async move {
        let mut t = tokio::time::interval(every);
        loop {
            t.tick().await;
            if core_tx.send(CoreMsg::Tick).await.is_err() {
                return;
            }
        }
    });
}
