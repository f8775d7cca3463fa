//! One ensemble member's wiring: what it takes from zoo.cfg (`Settings`), its Raft on a
//! runtime of its own (`spawn`), and `start`: the storage opened with the core as its
//! applier (applier.rs), the peer port served (peer.rs), the ensemble formed or joined, and
//! the tasks that link Raft and the core started (roles.rs, proposer.rs, forwarder.rs,
//! snapshots.rs, fail_safe.rs, reconcile.rs, join.rs, transfer.rs).

use super::applier::CoreApplier;
use super::election;
use super::fail_safe::{stop_on_log_failure, stop_with_raft};
use super::forwarder::forwarder;
use super::network::{serve, Network};
use super::peer::Peer;
use super::proposer::proposer;
use super::reconcile::peer_addr;
use super::roles::{roles, RoleInputs};
use super::snapshots::snapshots;
use super::storage;
use super::types::{NodeId, TypeConfig};
use crate::ensemble::dynamic::DynConfig;
use crate::ensemble::members::{Member, Role};
use crate::seam::{CoreInbox, LeadershipAsk, Proposed, RaftInfo, ToLeader};
use openraft::{BasicNode, Raft};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

/// The running member.
pub struct Running {
    pub raft: Raft<TypeConfig>,
    stop: CancellationToken,
    /// Ends the Raft runtime's thread ([`spawn`]), once Raft has shut down.
    exit: Option<(oneshot::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl Running {
    pub async fn shutdown(self) {
        self.stop.cancel();
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(error = %e, "Raft did not shut down cleanly");
        }
        if let Some((exit, thread)) = self.exit {
            let _ = exit.send(());
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// [`start`] on a runtime of its own: one thread ("palisade-raft") for openraft's tasks (its
/// core, the replication streams, the state-machine worker), the peer links and this
/// member's tasks. openraft hands every write across half a dozen tasks; on one thread those
/// hand-offs are queue pushes, not wake-ups of another worker thread. Client connections stay
/// on the main runtime.
pub async fn spawn<C: CoreInbox>(
    cfg: Settings,
    myid: NodeId,
    info: Arc<parking_lot::Mutex<RaftInfo>>,
    core: C,
    from_core: Channels,
) -> io::Result<Running> {
    let (started_tx, started) = oneshot::channel();
    let (exit_tx, exit_rx) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("palisade-raft".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = started_tx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                let r = start(&cfg, myid, info, core, from_core).await;
                let ok = r.is_ok();
                let _ = started_tx.send(r);
                if ok {
                    // Until the server has shut Raft down (or is gone).
                    let _ = exit_rx.await;
                }
            });
        })?;
    let mut running = started
        .await
        .map_err(|_| io::Error::other("the Raft thread ended while starting"))??;
    running.exit = Some((exit_tx, thread));
    Ok(running)
}

/// What a member takes from zoo.cfg.
pub struct Settings {
    pub members: Vec<Member>,
    /// Where the Raft log and snapshot live (`dataLogDir/raft`).
    pub dir: std::path::PathBuf,
    pub tick_time: u64,
    pub init_limit: u64,
    pub sync_limit: u64,
    pub snap_count: u64,
    pub segment_bytes: u64,
    /// spinWaitMicros: how long the Raft log thread may poll before it parks.
    pub spin_wait: Duration,
    /// The data dir's identity, which the Raft log's segments carry.
    pub identity: u64,
    /// reconfigEnabled: the membership follows /zookeeper/config, and a server with an empty
    /// log joins an existing ensemble (raft/reconcile.rs, raft/join.rs).
    pub reconfig: bool,
    /// How the peer links prove who they are (quorum TLS, quorum SASL, or by address).
    pub security: Arc<crate::ensemble::link::Security>,
    /// `--force-new-ensemble`: this member becomes an ensemble of one (raft/recovery.rs).
    pub force_new_ensemble: bool,
}

/// Starts the member `myid`: opens its Raft storage under `dataLogDir/raft` (the core must
/// be running: a saved snapshot is installed through it), serves the peer port, forms the
/// ensemble on first start, and runs the tasks that link Raft and the core.
pub async fn start<C: CoreInbox>(
    cfg: &Settings,
    myid: NodeId,
    info: Arc<parking_lot::Mutex<RaftInfo>>,
    core: C,
    from_core: Channels,
) -> io::Result<Running> {
    let Channels {
        propose,
        to_leader,
        snapshot,
        desired,
        leadership,
    } = from_core;
    let me =
        cfg.members.iter().find(|m| m.id == myid).ok_or_else(|| {
            io::Error::other(format!("myid {myid} is not among the server.N lines"))
        })?;
    let learner = me.role == Role::Observer;
    let dir = &cfg.dir;
    crate::durability::datadir::create_private_dir(dir)?;
    let applier = CoreApplier::new(core.clone());
    let segment = cfg.segment_bytes.max(crate::limits::RAFT_SEGMENT_MIN);
    let (mut log, sm) = storage::open_as(dir, segment, Some(cfg.identity), applier).await?;
    // After a recovery, the configurations from before it are not brought in (no quorum).
    let mut floor = 0;
    if cfg.force_new_ensemble {
        let addr = peer_addr(me).ok_or_else(|| io::Error::other("server.N without an address"))?;
        let term = super::recovery::force_new_ensemble(&mut log, myid, &addr).await?;
        floor = i64::try_from(term)
            .unwrap_or(i64::MAX)
            .saturating_mul(1 << 32);
    }
    super::vote::step_down_on_restart(&mut log, myid)
        .await
        .map_err(io::Error::other)?;
    log.set_spin_wait(cfg.spin_wait)?;
    log.lead_as(myid);
    let durable = log.durable();
    let view = log.view();
    let config = Arc::new(election::raft_config(
        cfg.tick_time,
        cfg.init_limit,
        cfg.sync_limit,
        cfg.snap_count,
    )?);
    let lease_ms = config.election_timeout_max;
    let addrs = cfg
        .members
        .iter()
        .filter_map(|m| Some((m.id, peer_addr(m)?)))
        .collect();
    let network = Network::new(myid, Duration::from_millis(config.heartbeat_interval))
        .with_addrs(addrs)
        .with_durable(durable.clone())
        .with_security(cfg.security.clone())
        .with_joiners(cfg.reconfig);
    if let Some(tls) = cfg.security.tls() {
        crate::net::tls::spawn_reloader(tls, crate::limits::TLS_RELOAD_CHECK);
    }
    let contacts = network.contacts.clone();
    let raft = Raft::new(myid, config, network.clone(), log, sm)
        .await
        .map_err(|e| io::Error::other(format!("cannot start Raft: {e}")))?;
    network.watch_membership(&raft);
    let addr = peer_addr(me).ok_or_else(|| io::Error::other("server.N without an address"))?;
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|e| io::Error::other(format!("cannot listen on the peer port {addr}: {e}")))?;
    let stop = CancellationToken::new();
    let timing = super::transfer::Timing::of(raft.config());
    let yielding = super::transfer::Yielding::default();
    let peer = Arc::new(Peer {
        raft: raft.clone(),
        core: core.clone(),
        me: myid,
        reconfig: cfg.reconfig,
        lease_ms,
        incoming: Default::default(),
        network: network.clone(),
        timing,
        yielding: yielding.clone(),
        log: Some(view),
    });
    let listening = stop.child_token();
    {
        let (peer, network, listening) = (peer.clone(), network.clone(), listening.clone());
        tokio::spawn(async move { serve(listener, peer, &network, listening).await });
    }
    if cfg.reconfig {
        tokio::spawn(super::reconcile::listen_as_configured(
            desired.clone(),
            myid,
            addr.clone(),
            listening,
            peer,
            network.clone(),
            stop.clone(),
        ));
    }

    let mut voters = BTreeMap::new();
    for m in &cfg.members {
        let Some(a) = peer_addr(m) else { continue };
        if m.role == Role::Participant {
            voters.insert(m.id, BasicNode::new(a));
        }
    }
    let initialized = raft
        .is_initialized()
        .await
        .map_err(|e| io::Error::other(e.to_string()))?;
    let pause = Duration::from_millis(lease_ms);
    if !initialized && cfg.reconfig {
        // It may be joining an ensemble that runs without it: never form one alone.
        tokio::spawn(super::join::join(
            raft.clone(),
            network.clone(),
            cfg.members.clone(),
            pause,
        ));
    } else if !initialized && !learner {
        // Every voter forms the ensemble with the same membership (openraft allows it).
        if let Err(e) = raft.initialize(voters).await {
            tracing::info!(error = %e, "ensemble already formed");
        }
    } else if initialized {
        warn_if_zoo_cfg_differs(&raft, &cfg.members);
    }
    tracing::info!(myid, peer = %addr, members = cfg.members.len(), learner, reconfig = cfg.reconfig, "ensemble member started");
    tokio::spawn(roles(
        raft.clone(),
        core.clone(),
        myid,
        RoleInputs {
            desired: desired.clone(),
            contacts,
            info,
            lease_ms,
            yielding: yielding.watch(),
        },
    ));
    tokio::spawn(super::transfer::run(
        raft.clone(),
        network.clone(),
        myid,
        timing,
        yielding,
        leadership,
    ));
    tokio::spawn(super::reconcile::reconcile(
        raft.clone(),
        network.clone(),
        desired.clone(),
        myid,
        cfg.reconfig,
        pause,
        floor,
    ));
    tokio::spawn(election::run(raft.clone(), myid));
    if cfg.reconfig {
        let catch_up =
            Duration::from_millis(cfg.init_limit.saturating_mul(cfg.tick_time).max(10_000));
        tokio::spawn(super::reconcile::drop_stale_learners(
            raft.clone(),
            desired.clone(),
            myid,
            catch_up,
        ));
    }
    tokio::spawn(stop_with_raft(raft.clone(), core.clone(), stop.clone()));
    tokio::spawn(stop_on_log_failure(
        durable.clone(),
        core.clone(),
        stop.clone(),
    ));
    tokio::spawn(proposer(raft.clone(), propose));
    tokio::spawn(snapshots(raft.clone(), snapshot));
    let ttl = Duration::from_millis(cfg.sync_limit.saturating_mul(cfg.tick_time).max(1000));
    tokio::spawn(forwarder(raft.clone(), network, core, myid, to_leader, ttl));
    Ok(Running {
        raft,
        stop,
        exit: None,
    })
}

/// A restarted member runs in the membership its log holds; zoo.cfg's server.N lines only
/// formed the ensemble (and find it when joining). Say so when they disagree.
fn warn_if_zoo_cfg_differs(raft: &Raft<TypeConfig>, members: &[Member]) {
    let (voters, _) = super::reconcile::membership(raft);
    let cfg: BTreeSet<NodeId> = members
        .iter()
        .filter(|m| m.role == Role::Participant)
        .map(|m| m.id)
        .collect();
    if voters != cfg {
        tracing::warn!(
            ?voters,
            zoo_cfg = ?cfg,
            "zoo.cfg's server.N lines differ from the committed membership, which holds"
        );
    }
}

/// What the core sends the Raft side.
pub struct Channels {
    /// The leader core's proposals, a batch per turn (proposer.rs). Unbounded, as it cannot
    /// be bounded without a change of behaviour: the core thread must never wait, and must
    /// not drop a proposal (its client would wait for a commit that never comes), so on a
    /// full channel it would keep the batch for later, and nothing would wake a parked core
    /// when the proposer drains but a message back into its inbox (a hop more on every
    /// write) or its next tick (writes held up to a second). A bound here would not bound
    /// memory either: the proposer task passes each entry on without waiting, into
    /// openraft 0.9's API queue, which is unbounded (`client_write_ff`). What it holds is
    /// bounded before it: each proposal is a txn the core keeps in `inflight` until it
    /// commits, from a request within its client's `maxOutstandingPerConnection` (the
    /// leader's own clients' or a follower's).
    pub propose: mpsc::UnboundedReceiver<Vec<Proposed>>,
    /// A follower core's forwards and touches (forwarder.rs), at most
    /// `limits::FORWARD_QUEUE`: on a full channel the core keeps its forwards for its next
    /// turn and skips a touch.
    pub to_leader: mpsc::Receiver<ToLeader>,
    /// The core's snapshot asks (snapshots.rs), at most `limits::RAFT_SNAPSHOT_ASKS`.
    pub snapshot: mpsc::Receiver<()>,
    /// The member's configuration (core/reconfig.rs), which the leader brings Raft to.
    pub desired: watch::Receiver<Arc<DynConfig>>,
    /// `ydld`/`rqld` (raft/transfer.rs).
    pub leadership: mpsc::UnboundedReceiver<LeadershipAsk>,
}
