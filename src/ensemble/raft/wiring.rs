//! One ensemble member's wiring: what it takes from zoo.cfg (`Settings`), its Raft on a
//! runtime of its own (`spawn`), and `start`: the storage opened with the core as its
//! applier (applier.rs), the peer port served (peer.rs), the ensemble formed or joined, and
//! the tasks that link Raft and the core started (roles.rs, proposer.rs, forwarder.rs,
//! snapshots.rs, fail_safe.rs, reconcile.rs, join.rs, transfer.rs).

use super::applier::CoreApplier;
use super::durable::Durable;
use super::election;
use super::fail_safe::{stop_on_log_failure, stop_with_raft};
use super::forwarder::forwarder;
use super::log_store::LogStore;
use super::network::{serve, Network};
use super::peer::Peer;
use super::proposer::proposer;
use super::reconcile::peer_addr;
use super::roles::{roles, RoleInputs};
use super::snapshots::snapshots;
use super::state_machine::StateMachine;
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
    let me = cfg.member(myid)?;
    let learner = me.role == Role::Observer;
    let (log, sm, floor) = open_storage(cfg, me, core.clone()).await?;
    let durable = log.durable();
    let view = log.view();
    let config = Arc::new(election::raft_config(
        cfg.tick_time,
        cfg.init_limit,
        cfg.sync_limit,
        cfg.snap_count,
    )?);
    let lease_ms = config.election_timeout_max;
    let network = network_for(cfg, myid, config.heartbeat_interval, durable.clone());
    let contacts = network.contacts.clone();
    let raft = Raft::new(myid, config, network.clone(), log, sm)
        .await
        .map_err(|e| io::Error::other(format!("cannot start Raft: {e}")))?;
    network.watch_membership(&raft);
    let addr = peer_addr(me).ok_or_else(|| io::Error::other("server.N without an address"))?;
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
    serve_peer_port(cfg, myid, &addr, peer, &network, &desired, &stop).await?;
    let pause = Duration::from_millis(lease_ms);
    form_or_join(&raft, &network, cfg, learner, pause).await?;
    tracing::info!(myid, peer = %addr, members = cfg.members.len(), learner, reconfig = cfg.reconfig, "ensemble member started");
    let started = Started {
        raft: raft.clone(),
        core,
        myid,
        network,
        stop: stop.clone(),
    };
    let inputs = RoleInputs {
        desired,
        contacts,
        info,
        lease_ms,
        yielding: yielding.watch(),
    };
    let handover = Handover {
        timing,
        yielding,
        asks: leadership,
    };
    spawn_role_tasks(&started, cfg, inputs, handover, floor);
    spawn_core_links(started, cfg, durable, propose, snapshot, to_leader);
    Ok(Running {
        raft,
        stop,
        exit: None,
    })
}

impl Settings {
    /// The server.N line of `myid`.
    fn member(&self, myid: NodeId) -> io::Result<&Member> {
        self.members
            .iter()
            .find(|m| m.id == myid)
            .ok_or_else(|| io::Error::other(format!("myid {myid} is not among the server.N lines")))
    }
}

/// Opens the member's Raft storage with the core as its applier, after a
/// `--force-new-ensemble` as an ensemble of one, and saved as not leading (a member that led
/// must win an election again). Also the zxid floor: after such a recovery, the
/// configurations from before it are not brought in (no quorum).
async fn open_storage<C: CoreInbox>(
    cfg: &Settings,
    me: &Member,
    core: C,
) -> io::Result<(LogStore, StateMachine<CoreApplier<C>>, i64)> {
    let dir = &cfg.dir;
    crate::durability::datadir::create_private_dir(dir)?;
    let applier = CoreApplier::new(core);
    let segment = cfg.segment_bytes.max(crate::limits::RAFT_SEGMENT_MIN);
    let (mut log, sm) = storage::open_as(dir, segment, Some(cfg.identity), applier).await?;
    let mut floor = 0;
    if cfg.force_new_ensemble {
        let addr = peer_addr(me).ok_or_else(|| io::Error::other("server.N without an address"))?;
        let term = super::recovery::force_new_ensemble(&mut log, me.id, &addr).await?;
        floor = i64::try_from(term)
            .unwrap_or(i64::MAX)
            .saturating_mul(1 << 32);
    }
    super::step_down::step_down_on_restart(&mut log, me.id)
        .await
        .map_err(io::Error::other)?;
    log.set_spin_wait(cfg.spin_wait)?;
    log.lead_as(me.id);
    Ok((log, sm, floor))
}

/// The peer transport: zoo.cfg's addresses, the log's durable mark, the links' security (its
/// TLS stores reloaded when they change), open to joiners with reconfigEnabled.
fn network_for(cfg: &Settings, myid: NodeId, heartbeat_ms: u64, durable: Durable) -> Network {
    let addrs = cfg
        .members
        .iter()
        .filter_map(|m| Some((m.id, peer_addr(m)?)))
        .collect();
    let network = Network::new(myid, Duration::from_millis(heartbeat_ms))
        .with_addrs(addrs)
        .with_durable(durable)
        .with_security(cfg.security.clone())
        .with_joiners(cfg.reconfig);
    if let Some(tls) = cfg.security.tls() {
        crate::net::tls::spawn_reloader(tls, crate::limits::TLS_RELOAD_CHECK);
    }
    network
}

/// Listens on the peer port at `addr` for `peer`; with reconfigEnabled, moves it where the
/// committed configuration says.
async fn serve_peer_port<C: CoreInbox>(
    cfg: &Settings,
    myid: NodeId,
    addr: &str,
    peer: Arc<Peer<C>>,
    network: &Network,
    desired: &watch::Receiver<Arc<DynConfig>>,
    stop: &CancellationToken,
) -> io::Result<()> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| io::Error::other(format!("cannot listen on the peer port {addr}: {e}")))?;
    let listening = stop.child_token();
    {
        let (peer, network, listening) = (peer.clone(), network.clone(), listening.clone());
        tokio::spawn(async move { serve(listener, peer, &network, listening).await });
    }
    if cfg.reconfig {
        tokio::spawn(super::reconcile::listen_as_configured(
            desired.clone(),
            myid,
            addr.to_string(),
            listening,
            peer,
            network.clone(),
            stop.clone(),
        ));
    }
    Ok(())
}

/// On a first start: with reconfigEnabled, find the ensemble (or form it with a majority of
/// zoo.cfg's voters); else every voter forms it with zoo.cfg's voters. On a restart: warn if
/// zoo.cfg no longer says what the log does.
async fn form_or_join(
    raft: &Raft<TypeConfig>,
    network: &Network,
    cfg: &Settings,
    learner: bool,
    pause: Duration,
) -> io::Result<()> {
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
        warn_if_zoo_cfg_differs(raft, &cfg.members);
    }
    Ok(())
}

/// What the member's tasks share once its Raft runs.
struct Started<C> {
    raft: Raft<TypeConfig>,
    core: C,
    myid: NodeId,
    network: Network,
    stop: CancellationToken,
}

/// What a leadership hand-over needs (transfer.rs).
struct Handover {
    timing: super::transfer::Timing,
    yielding: super::transfer::Yielding,
    asks: mpsc::UnboundedReceiver<LeadershipAsk>,
}

/// The tasks that follow Raft's roles and membership: the core's role view, hand-overs, the
/// membership brought to the configuration, elections, stale learners dropped.
fn spawn_role_tasks<C: CoreInbox>(
    s: &Started<C>,
    cfg: &Settings,
    inputs: RoleInputs,
    handover: Handover,
    floor: i64,
) {
    let desired = inputs.desired.clone();
    let pause = Duration::from_millis(inputs.lease_ms);
    tokio::spawn(roles(s.raft.clone(), s.core.clone(), s.myid, inputs));
    tokio::spawn(super::transfer::run(
        s.raft.clone(),
        s.network.clone(),
        s.myid,
        handover.timing,
        handover.yielding,
        handover.asks,
    ));
    tokio::spawn(super::reconcile::reconcile(
        s.raft.clone(),
        s.network.clone(),
        desired.clone(),
        s.myid,
        cfg.reconfig,
        pause,
        floor,
    ));
    tokio::spawn(election::run(s.raft.clone(), s.myid));
    if cfg.reconfig {
        let catch_up = Duration::from_millis(
            cfg.init_limit
                .saturating_mul(cfg.tick_time)
                .max(crate::limits::LEARNER_CATCH_UP_MIN_MS),
        );
        tokio::spawn(super::reconcile::drop_stale_learners(
            s.raft.clone(),
            desired,
            s.myid,
            catch_up,
        ));
    }
}

/// The tasks between Raft and the core: stopping the core with Raft or a failed log, the
/// proposer, the snapshot asks, the forwarder.
fn spawn_core_links<C: CoreInbox>(
    s: Started<C>,
    cfg: &Settings,
    durable: Durable,
    propose: mpsc::UnboundedReceiver<Vec<Proposed>>,
    snapshot: mpsc::Receiver<()>,
    to_leader: mpsc::Receiver<ToLeader>,
) {
    tokio::spawn(stop_with_raft(
        s.raft.clone(),
        s.core.clone(),
        s.stop.clone(),
    ));
    tokio::spawn(stop_on_log_failure(durable, s.core.clone(), s.stop.clone()));
    tokio::spawn(proposer(s.raft.clone(), propose));
    tokio::spawn(snapshots(s.raft.clone(), snapshot));
    let ttl = Duration::from_millis(
        cfg.sync_limit
            .saturating_mul(cfg.tick_time)
            .max(crate::limits::FORWARD_TTL_MIN_MS),
    );
    tokio::spawn(forwarder(s.raft, s.network, s.core, s.myid, to_leader, ttl));
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
    /// The member's configuration (core/role/member/reconfig.rs), which the leader brings Raft to.
    pub desired: watch::Receiver<Arc<DynConfig>>,
    /// `ydld`/`rqld` (raft/transfer.rs).
    pub leadership: mpsc::UnboundedReceiver<LeadershipAsk>,
}
