//! One ensemble member at run time: the core (core/member.rs) wired to openraft.
//!
//! - `CoreApplier` is the state machine's `Applier`: committed entries go to the core thread
//!   as `CoreMsg::Committed`; each batch's acknowledgement is awaited before the next batch
//!   (or a snapshot) goes, so Raft's `last_applied` runs at most one batch ahead of the core,
//!   whose channel orders every later message (a role change, a snapshot) behind it.
//! - the proposer task hands the leader core's batches to `Raft::client_write_ff` in order
//!   (fire and forget: the core learns the outcome from the committed stream);
//! - the forwarder task sends a follower core's writes and session touches to the leader over
//!   the peer link;
//! - the role task turns Raft's metrics into the core's `RoleView`.

use super::election;
use super::network::Contacts;
use super::network::{serve, Network, PeerClient};
use super::peer::Peer;
use super::reconfig::peer_addr;
use super::state_machine::{Applier, PendingImage};
use super::storage;
use super::types::{NodeId, Proposal, TypeConfig};
use crate::core::member::{Committed, Forward, LogPos, Proposed, RaftInfo, RoleView, ToLeader};
use crate::core::CoreMsg;
use crate::ensemble::dynamic::DynConfig;
use crate::ensemble::members::{Member, Role};
use bytes::Bytes;
use openraft::{BasicNode, CommittedLeaderId, LogId, Raft, RaftMetrics, ServerState};
use palisade_proto::Txn;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

/// The state machine's applier in a server: the core thread.
pub struct CoreApplier {
    core: mpsc::Sender<CoreMsg>,
    /// The last batch's acknowledgement, awaited when the next batch goes: by then the core
    /// has nearly always sent it, so the Raft thread is not woken once per batch for it (a
    /// context switch per commit on every member), and a core that failed still stops Raft,
    /// one batch later.
    pending: Option<oneshot::Receiver<()>>,
}

impl CoreApplier {
    pub fn new(core: mpsc::Sender<CoreMsg>) -> Self {
        CoreApplier {
            core,
            pending: None,
        }
    }

    /// Waits for the last batch's acknowledgement.
    async fn settle(&mut self) -> io::Result<()> {
        match self.pending.take() {
            Some(done) => done.await.map_err(|_| core_gone()),
            None => Ok(()),
        }
    }
}

fn core_gone() -> io::Error {
    io::Error::other("the core stopped")
}

impl Applier for CoreApplier {
    async fn apply(
        &mut self,
        txns: Vec<(LogId<NodeId>, Proposal)>,
        upto: LogId<NodeId>,
    ) -> io::Result<()> {
        // A batch of only blank or membership entries leaves the core where it is (its next
        // snapshot stands at the last txn's entry, as good a point as any after it).
        if txns.is_empty() {
            return Ok(());
        }
        self.settle().await?;
        let mut items = Vec::with_capacity(txns.len());
        let mut log_bytes = 0u64;
        for (log_id, p) in txns {
            log_bytes = log_bytes.saturating_add(p.payload_len() as u64);
            match p {
                Proposal::Key(k) => items.push(Committed::Key(k)),
                Proposal::Digest { zxid, digest } => items.push(Committed::Digest { zxid, digest }),
                Proposal::Txn(bytes) => committed_txn(&mut items, log_id, bytes)?,
                Proposal::Txns(batch) => {
                    for bytes in batch {
                        committed_txn(&mut items, log_id, bytes)?;
                    }
                }
            }
        }
        let (ack, done) = oneshot::channel();
        self.core
            .send(CoreMsg::Committed {
                items,
                at: Some(log_pos(upto)),
                log_bytes,
                ack,
            })
            .await
            .map_err(|_| core_gone())?;
        self.pending = Some(done);
        Ok(())
    }

    async fn begin_snapshot(&mut self) -> io::Result<PendingImage> {
        self.settle().await?;
        let (tx, rx) = oneshot::channel();
        self.core
            .send(CoreMsg::Image(tx))
            .await
            .map_err(|_| core_gone())?;
        Ok(Box::pin(async move {
            let (image, at) = rx
                .await
                .map_err(|_| io::Error::other("the core dropped the snapshot capture"))?;
            Ok((image, at.map(log_id)))
        }))
    }

    async fn install(&mut self, image: &[u8], at: Option<LogId<NodeId>>) -> io::Result<()> {
        self.settle().await?;
        let (ack, done) = oneshot::channel();
        let image = image.to_vec();
        self.core
            .send(CoreMsg::Install {
                image,
                at: at.map(log_pos),
                ack,
            })
            .await
            .map_err(|_| core_gone())?;
        done.await
            .map_err(|_| core_gone())?
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

/// A committed txn for the core, unless it was prepped in another term than it was logged
/// in: a leader's proposal that reached Raft after it lost that term. Its prep saw an
/// overlay now gone, so every member skips it (the same log, the same decision).
fn committed_txn(
    items: &mut Vec<Committed>,
    log_id: LogId<NodeId>,
    bytes: Bytes,
) -> io::Result<()> {
    if !prepped_in(&bytes, log_id.leader_id.term) {
        tracing::warn!(entry = %log_id, "skipping a txn prepped in another term");
        return Ok(());
    }
    let txn = Txn::decode(bytes, usize::MAX).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("entry {log_id}: undecodable txn: {e}"),
        )
    })?;
    items.push(Committed::Txn(txn));
    Ok(())
}

fn log_pos(l: LogId<NodeId>) -> LogPos {
    LogPos {
        term: l.leader_id.term,
        node: l.leader_id.node_id,
        index: l.index,
    }
}

fn log_id(p: LogPos) -> LogId<NodeId> {
    LogId::new(CommittedLeaderId::new(p.term, p.node), p.index)
}

/// Whether an encoded txn's zxid carries `term` as its epoch (zxid = term << 32 | counter):
/// the TxnHeader's zxid is its third field (client id i64, cxid i32, zxid i64).
fn prepped_in(txn: &[u8], term: u64) -> bool {
    txn.get(12..20)
        .and_then(|b| b.first_chunk::<8>())
        .is_some_and(|b| (i64::from_be_bytes(*b) >> 32) as u64 == term)
}

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
/// module's tasks. openraft hands every write across half a dozen tasks; on one thread those
/// hand-offs are queue pushes, not wake-ups of another worker thread. Client connections stay
/// on the main runtime.
pub async fn spawn(
    cfg: Settings,
    myid: NodeId,
    info: Arc<parking_lot::Mutex<RaftInfo>>,
    core: mpsc::Sender<CoreMsg>,
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
    /// log joins an existing ensemble (raft/reconfig.rs).
    pub reconfig: bool,
    /// How the peer links prove who they are (quorum TLS, quorum SASL, or by address).
    pub security: Arc<crate::ensemble::link::Security>,
    /// `--force-new-ensemble`: this member becomes an ensemble of one (raft/recovery.rs).
    pub force_new_ensemble: bool,
}

/// Starts the member `myid`: opens its Raft storage under `dataLogDir/raft` (the core must
/// be running: a saved snapshot is installed through it), serves the peer port, forms the
/// ensemble on first start, and runs the tasks that link Raft and the core.
pub async fn start(
    cfg: &Settings,
    myid: NodeId,
    info: Arc<parking_lot::Mutex<RaftInfo>>,
    core: mpsc::Sender<CoreMsg>,
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
    let segment = cfg.segment_bytes.max(1 << 20);
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
        crate::net::tls::spawn_reloader(tls, Duration::from_secs(1));
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
        tokio::spawn(super::reconfig::listen_as_configured(
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
        tokio::spawn(super::reconfig::join(
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
    tokio::spawn(super::reconfig::reconcile(
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
        tokio::spawn(super::reconfig::drop_stale_learners(
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

/// `caught_up`: the last log index when this member became leader (of this term): a
/// leader preps only once it has applied its log up to there and an entry of its own term —
/// every entry an earlier leader (or this one before a restart in the same term) ordered.
/// `want` is the configuration (for the learners it counts and the version in force);
/// `synced` the members that answered the leader within the lease.
fn view(
    m: &RaftMetrics<NodeId, BasicNode>,
    me: NodeId,
    caught_up: Option<u64>,
    lease_ms: u64,
    want: &DynConfig,
    synced: &BTreeSet<NodeId>,
) -> RoleView {
    let leads = m.state == ServerState::Leader && m.current_leader == Some(me);
    let applied = m.last_applied.is_some_and(|l| {
        l.leader_id.term == m.current_term && caught_up.is_some_and(|c| l.index >= c)
    });
    let membership = m.membership_config.membership();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let nodes: BTreeMap<NodeId, String> = membership
        .nodes()
        .map(|(id, n)| (*id, n.addr.clone()))
        .collect();
    // Applied means committed: a reconfig is answered once its membership is.
    let membership_applied = m
        .membership_config
        .log_id()
        .as_ref()
        .is_none_or(|l| m.last_applied.as_ref().is_some_and(|a| a.index >= l.index));
    let in_force = membership_applied && super::reconfig::matches(want, &voters, &nodes);
    let mut v = RoleView {
        leader: m.current_leader,
        term: m.current_term,
        // (A leader a reconfig left out of the voters steps down: `roles`.)
        ready: leads && applied,
        learner: !voters.contains(&me),
        quorum: !leads || m.millis_since_quorum_ack.is_some_and(|ms| ms <= lease_ms),
        config_version: if in_force { want.version } else { -1 },
        ..RoleView::default()
    };
    if let (true, Some(r)) = (leads, m.replication.as_ref()) {
        for (id, matched) in r.iter().filter(|(id, _)| **id != me) {
            let synced = u16::from(matched.is_some() && synced.contains(id));
            if voters.contains(id) {
                v.followers += 1;
                v.synced_followers += synced;
            } else if want.observers().contains(id) {
                v.observers += 1;
                v.synced_observers += synced;
            } else {
                // Outside the configuration: ZooKeeper's non-voting follower.
                v.followers += 1;
                v.synced_followers += synced;
                v.non_voting += 1;
                v.synced_non_voting += synced;
            }
        }
    }
    v
}

/// What the role task reads besides Raft's metrics.
struct RoleInputs {
    desired: watch::Receiver<Arc<DynConfig>>,
    contacts: Contacts,
    info: Arc<parking_lot::Mutex<RaftInfo>>,
    lease_ms: u64,
    /// Set while this leader hands over (transfer.rs): it orders no writes.
    yielding: watch::Receiver<bool>,
}

/// Raft's metrics → the core's role; on the leader, who is synced (for a reconfig).
async fn roles(
    raft: Raft<TypeConfig>,
    core: mpsc::Sender<CoreMsg>,
    me: NodeId,
    inputs: RoleInputs,
) {
    let RoleInputs {
        mut desired,
        contacts,
        info,
        lease_ms,
        mut yielding,
    } = inputs;
    let mut rx = raft.metrics();
    let mut server = raft.server_metrics();
    let mut last = None;
    // (term, last log index) when this member became leader of that term.
    let mut led: Option<(u64, u64)> = None;
    // The last configuration version seen in force (kept while a later one is on its way).
    let mut in_force = -1i64;
    let mut heartbeats = true;
    let mut left_out: Option<std::time::Instant> = None;
    loop {
        let want = desired.borrow_and_update().clone();
        server.borrow_and_update();
        let v = {
            let m = rx.borrow_and_update();
            let leads = m.state == ServerState::Leader && m.current_leader == Some(me);
            if !leads {
                led = None;
            } else if led.is_none_or(|(t, _)| t != m.current_term) {
                led = Some((m.current_term, m.last_log_index.unwrap_or(0)));
            }
            let fresh = Duration::from_millis(lease_ms);
            let mut synced: BTreeSet<NodeId> = contacts
                .lock()
                .iter()
                .filter(|(_, t)| t.elapsed() <= fresh)
                .map(|(id, _)| *id)
                .collect();
            if let Some(r) = m.replication.as_ref() {
                synced.retain(|id| r.get(id).is_some_and(|x| x.is_some()));
            } else {
                synced.clear();
            }
            let log_id = |l: Option<LogId<NodeId>>| l.map(|l| (l.leader_id.term, l.index));
            let mut v = view(&m, me, led.map(|(_, i)| i), lease_ms, &want, &synced);
            // openraft's acknowledgement time restarts when the membership changes (the new
            // quorum has not acknowledged yet): members that answered within the lease count
            // too, a majority of each configuration of a joint one.
            if leads && !v.quorum {
                let answered = |ids: &BTreeSet<NodeId>| {
                    let n = ids
                        .iter()
                        .filter(|id| **id == me || synced.contains(id))
                        .count();
                    n > ids.len() / 2
                };
                v.quorum = m
                    .membership_config
                    .membership()
                    .get_joint_config()
                    .iter()
                    .all(answered);
            }
            if v.config_version >= 0 {
                in_force = v.config_version;
            }
            // openraft 0.9 lets a leader that is no voter go on leading (its heartbeats keep
            // the voters' leases): once a reconfig that leaves it out is in force, it stops
            // sending them, so the voters elect one of theirs (election.rs) as ZooKeeper's
            // do when their leader is removed — after two heartbeats more, which tell the
            // followers that the change committed, so they answer their reconfig clients.
            let out = leads && v.learner && v.config_version >= 0;
            left_out = if out {
                left_out.or(Some(std::time::Instant::now()))
            } else {
                None
            };
            let step_down =
                left_out.is_some_and(|t| t.elapsed() >= Duration::from_millis(lease_ms / 3));
            if step_down == heartbeats {
                heartbeats = !step_down;
                raft.runtime_config().heartbeat(heartbeats);
                if step_down {
                    tracing::info!(
                        "this leader is no voter of the configuration in force: stepping down"
                    );
                }
            }
            // It preps no more, and its clients go; so while it hands over (transfer.rs).
            v.ready &= !step_down && !*yielding.borrow_and_update();
            v.config_version = in_force;
            synced.insert(me);
            *info.lock() = RaftInfo {
                state: format!("{:?}", m.state),
                term: m.current_term,
                leader: m.current_leader,
                last_log_index: m.last_log_index,
                last_applied: log_id(m.last_applied),
                last_snapshot: log_id(m.snapshot),
                purged: log_id(m.purged),
                millis_since_quorum_ack: m.millis_since_quorum_ack,
                synced: if leads {
                    synced.into_iter().collect()
                } else {
                    Vec::new()
                },
            };
            v
        };
        if last != Some(v) {
            if core.send(CoreMsg::Role(v)).await.is_err() {
                return;
            }
            last = Some(v);
        }
        // Metrics change when something happens; a quorum that falls silent changes nothing,
        // so the view is also looked at again every lease / 4. They change at every commit
        // too, so after such a change the view is built again at most once a millisecond
        // (building it costs sets, maps and strings: a few % of a busy ensemble's CPU).
        tokio::select! {
            r = rx.changed() => {
                if r.is_err() {
                    return;
                }
                if !server.has_changed().unwrap_or(true) {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            },
            r = server.changed() => if r.is_err() {
                return;
            },
            r = desired.changed() => if r.is_err() {
                return;
            },
            r = yielding.changed() => if r.is_err() {
                return;
            },
            _ = tokio::time::sleep(Duration::from_millis((lease_ms / 4).max(10))) => {}
        }
    }
}

/// A restarted member runs in the membership its log holds; zoo.cfg's server.N lines only
/// formed the ensemble (and find it when joining). Say so when they disagree.
fn warn_if_zoo_cfg_differs(raft: &Raft<TypeConfig>, members: &[Member]) {
    let (voters, _) = super::reconfig::membership(raft);
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

/// openraft stops its core for good on a storage error or a fault it detects (a panic); the
/// member then stops too, rather than go on serving clients from a tree that no longer follows
/// the log (its process exits non-zero: `server.rs`, when the core stops).
async fn stop_with_raft(
    raft: Raft<TypeConfig>,
    core: mpsc::Sender<CoreMsg>,
    stop: CancellationToken,
) {
    let mut rx = raft.metrics();
    loop {
        let state = rx.borrow().running_state.clone();
        if let Err(e) = state {
            if !stop.is_cancelled() {
                tracing::error!(error = %e, "Raft stopped: this member stops");
                let _ = core.send(CoreMsg::Shutdown).await;
            }
            return;
        }
        if rx.changed().await.is_err() {
            if !stop.is_cancelled() {
                tracing::error!("Raft stopped: this member stops");
                let _ = core.send(CoreMsg::Shutdown).await;
            }
            return;
        }
    }
}

/// A member whose Raft log cannot be written (a full disk, no descriptors left, an I/O
/// error, its data dir removed) stops, loudly, rather than lead on committing nothing (it once
/// went on leading, logging thousands of lines a second): its lease runs out and the others
/// elect a leader; it is started again (its service manager restarts it) once the fault is
/// gone, and catches up from its log on disk. A follower's failed append already stops Raft
/// (openraft takes the failed flush as a storage error); a leader reports its own entries
/// flushed before they are written (durable.rs), so it learns here.
async fn stop_on_log_failure(
    durable: super::durable::Durable,
    core: mpsc::Sender<CoreMsg>,
    stop: CancellationToken,
) {
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = durable.failed() => {
            tracing::error!(
                "the Raft log cannot be written: this member stops (it is restarted once the \
                 fault is fixed, and catches up from its log)"
            );
            let _ = core.send(CoreMsg::Shutdown).await;
        }
    }
}

/// What the core sends the Raft side.
pub struct Channels {
    pub propose: mpsc::UnboundedReceiver<Vec<Proposed>>,
    pub to_leader: mpsc::UnboundedReceiver<ToLeader>,
    pub snapshot: mpsc::UnboundedReceiver<()>,
    /// The member's configuration (core/reconfig.rs), which the leader brings Raft to.
    pub desired: watch::Receiver<Arc<DynConfig>>,
    /// `ydld`/`rqld` (raft/transfer.rs).
    pub leadership: mpsc::UnboundedReceiver<crate::core::member::LeadershipAsk>,
}

/// The core's snapshot requests, to Raft (which ignores one while it builds another).
async fn snapshots(raft: Raft<TypeConfig>, mut rx: mpsc::UnboundedReceiver<()>) {
    while rx.recv().await.is_some() {
        if raft.trigger().snapshot().await.is_err() {
            return;
        }
    }
}

/// Hands the core's batches to Raft in order. The outcome arrives through the committed
/// stream, so the replies `client_write_ff` offers are not needed — but they are kept until
/// they resolve: openraft logs a warning for every reply it cannot deliver, which at one per
/// write cost more than the write.
async fn proposer(raft: Raft<TypeConfig>, mut rx: mpsc::UnboundedReceiver<Vec<Proposed>>) {
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let mut replies = FuturesUnordered::new();
    loop {
        let batch = tokio::select! {
            b = rx.recv() => match b {
                Some(b) => b,
                None => return,
            },
            Some(_) = replies.next(), if !replies.is_empty() => continue,
        };
        for p in entries(batch) {
            // A proposal that loses its leader fails its clients when the core hears of the
            // new one.
            match raft.client_write_ff(p).await {
                Ok(reply) => replies.push(reply),
                Err(e) => {
                    tracing::warn!(error = %e, "Raft stopped; proposals dropped");
                    return;
                }
            }
        }
    }
}

/// The most txn bytes one batch entry carries: the peer link sends an entry whole, and
/// openraft gives an append-entries call one heartbeat interval (limits.rs).
const BATCH_BYTES: usize = crate::limits::PEER_BATCH_BYTES;

/// A core turn's proposals as Raft entries, in order: consecutive txns as one entry of at
/// most BATCH_BYTES (a larger txn alone).
fn entries(batch: Vec<Proposed>) -> Vec<Proposal> {
    let mut out = Vec::new();
    let mut txns = Vec::new();
    let mut bytes = 0usize;
    let flush = |txns: &mut Vec<Bytes>, out: &mut Vec<Proposal>| match txns.len() {
        0 => {}
        1 => out.extend(txns.pop().map(Proposal::Txn)),
        _ => out.push(Proposal::Txns(std::mem::take(txns))),
    };
    for p in batch {
        match p {
            Proposed::Txn(b) => {
                if bytes.saturating_add(b.len()) > BATCH_BYTES {
                    flush(&mut txns, &mut out);
                    bytes = 0;
                }
                bytes = bytes.saturating_add(b.len());
                txns.push(b);
            }
            Proposed::Key(k) => {
                flush(&mut txns, &mut out);
                bytes = 0;
                out.push(Proposal::Key(k));
            }
            Proposed::Digest { zxid, digest } => {
                flush(&mut txns, &mut out);
                bytes = 0;
                out.push(Proposal::Digest { zxid, digest });
            }
        }
    }
    flush(&mut txns, &mut out);
    out
}

/// Resolves once Raft names another leader than `leader` (or stops).
async fn leader_changes(raft: &Raft<TypeConfig>, leader: NodeId) {
    let mut m = raft.server_metrics();
    while m.borrow_and_update().current_leader == Some(leader) {
        if m.changed().await.is_err() {
            return;
        }
    }
}

/// Sends a follower core's writes and touches to the leader, one call at a time. A call to a
/// leader that has gone silent (paused, partitioned) is given up as soon as another leader is
/// known, not after the call's whole ttl: the writes behind it go to the new one, and the
/// given-up writes fail with CONNECTIONLOSS (they may or may not commit, as ZooKeeper's).
async fn forwarder(
    raft: Raft<TypeConfig>,
    network: Network,
    core: mpsc::Sender<CoreMsg>,
    me: NodeId,
    mut rx: mpsc::UnboundedReceiver<ToLeader>,
    ttl: Duration,
) {
    // The link and the term of the leader it was made for: a leader of a later term is
    // another process, even with the same id (a member restarted and elected again), and a
    // link to the one before would fail the first call after a quiet spell.
    let mut link: Option<(PeerClient, u64)> = None;
    let mut held: Option<ToLeader> = None;
    loop {
        let msg = match held.take() {
            Some(m) => m,
            None => match rx.recv().await {
                Some(m) => m,
                None => return,
            },
        };
        let (leader, addr, term) = {
            let m = raft.metrics();
            let m = m.borrow();
            let leader = m.current_leader.filter(|l| *l != me);
            let addr = leader.and_then(|l| {
                m.membership_config
                    .nodes()
                    .find(|(id, _)| **id == l)
                    .map(|(id, n)| network.addr_of(*id, n))
            });
            (leader, addr, m.current_term)
        };
        if let (Some(l), Some(a)) = (leader, &addr) {
            if link
                .as_ref()
                .is_none_or(|(c, t)| c.target() != l || c.addr() != a || *t != term)
            {
                link = Some((network.client(l, a.clone()), term));
            }
        } else {
            link = None;
        }
        match msg {
            ToLeader::Forward(ops) => {
                let ops = gather(ops, &mut rx, &mut held);
                let sent: Vec<(i64, i32)> = ops.iter().map(|f| (f.session, f.cxid)).collect();
                let points = match (&mut link, leader) {
                    (Some((c, _)), Some(l)) => tokio::select! {
                        r = c.forward(ops, ttl) => r.ok().flatten(),
                        _ = leader_changes(&raft, l) => None,
                    },
                    _ => None,
                };
                if points.is_none() {
                    // The link may be mid-call: the next call opens a fresh one.
                    link = None;
                }
                let msg = match points {
                    Some(p) if p.is_empty() => continue,
                    Some(p) => CoreMsg::SyncPoints(p),
                    None => CoreMsg::ForwardFailed(sent),
                };
                if core.send(msg).await.is_err() {
                    return;
                }
            }
            ToLeader::Touch(ids) => {
                if let (Some((c, _)), Some(l)) = (&mut link, leader) {
                    let given_up = tokio::select! {
                        r = c.touch(ids, ttl) => r.is_err(),
                        _ = leader_changes(&raft, l) => true,
                    };
                    if given_up {
                        link = None;
                    }
                }
            }
        }
    }
}

/// How many request bytes one forward call gathers from the queue, at most (limits.rs).
const GATHER_BYTES: usize = crate::limits::PEER_BATCH_BYTES;

/// `ops` and the forwards queued behind them, up to GATHER_BYTES, as one call: they queued
/// while the last call was out, and one round trip to the leader each would pace a follower's
/// writes by that round trip. A touch stops the gathering (held, to go next in its order).
fn gather(
    mut ops: Vec<Forward>,
    rx: &mut mpsc::UnboundedReceiver<ToLeader>,
    held: &mut Option<ToLeader>,
) -> Vec<Forward> {
    let size = |ops: &[Forward]| -> usize {
        ops.iter()
            .map(|f| match &f.what {
                crate::core::member::Forwarded::Request(b) => b.len(),
                _ => 16,
            })
            .sum()
    };
    let mut bytes = size(&ops);
    while bytes < GATHER_BYTES {
        match rx.try_recv() {
            Ok(ToLeader::Forward(more)) => {
                bytes = bytes.saturating_add(size(&more));
                ops.extend(more);
            }
            Ok(other) => {
                *held = Some(other);
                break;
            }
            Err(_) => break,
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;

    fn fwd(cxid: i32, bytes: usize) -> Forward {
        Forward {
            session: 7,
            cxid,
            what: crate::core::member::Forwarded::Request(Bytes::from(vec![0u8; bytes])),
            auth: Vec::new(),
        }
    }

    fn cxids(ops: &[Forward]) -> Vec<i32> {
        ops.iter().map(|f| f.cxid).collect()
    }

    /// How: forwards queued behind the first go with it, in order, until a touch (held for
    /// next) or GATHER_BYTES; what is left stays queued, in order.
    #[test]
    fn queued_forwards_go_in_one_call_up_to_a_touch_or_the_byte_bound() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut held = None;
        tx.send(ToLeader::Forward(vec![fwd(2, 10), fwd(3, 10)]))
            .unwrap();
        tx.send(ToLeader::Forward(vec![fwd(4, 10)])).unwrap();
        tx.send(ToLeader::Touch(vec![(7, 1)])).unwrap();
        tx.send(ToLeader::Forward(vec![fwd(5, 10)])).unwrap();
        let ops = gather(vec![fwd(1, 10)], &mut rx, &mut held);
        assert_eq!(cxids(&ops), [1, 2, 3, 4]);
        assert!(matches!(held.take(), Some(ToLeader::Touch(_))));
        let Ok(ToLeader::Forward(next)) = rx.try_recv() else {
            panic!("the forward after the touch was taken")
        };
        let ops = gather(next, &mut rx, &mut held);
        assert_eq!(cxids(&ops), [5]);
        assert!(held.is_none());

        for cxid in 11..15 {
            tx.send(ToLeader::Forward(vec![fwd(cxid, GATHER_BYTES / 3)]))
                .unwrap();
        }
        let ops = gather(vec![fwd(10, 10)], &mut rx, &mut held);
        assert_eq!(cxids(&ops), [10, 11, 12, 13]);
        let Ok(ToLeader::Forward(rest)) = rx.try_recv() else {
            panic!("the forward past the bound was taken")
        };
        assert_eq!(cxids(&rest), [14]);
    }

    fn metrics(term: u64, applied: u64) -> RaftMetrics<NodeId, BasicNode> {
        let mut m = RaftMetrics::new_initial(1);
        m.state = ServerState::Leader;
        m.current_leader = Some(1);
        m.current_term = term;
        m.last_applied = Some(LogId::new(CommittedLeaderId::new(term, 1), applied));
        m
    }

    /// Member 1's view with no configuration of its own and nobody synced, lease 1000 ms.
    fn plain(m: &RaftMetrics<NodeId, BasicNode>, caught_up: Option<u64>) -> RoleView {
        view(
            m,
            1,
            caught_up,
            1000,
            &DynConfig::default(),
            &BTreeSet::new(),
        )
    }

    /// The bug this guards: a leader restarted in the same term (its vote was committed) saw
    /// an applied entry of its term at once — the snapshot's — and prepped zxids the log
    /// after the snapshot had already used; followers then refused the txns and stopped.
    #[test]
    fn a_leader_is_ready_only_once_its_log_at_election_is_applied() {
        assert!(!plain(&metrics(3, 1399), Some(1509)).ready);
        assert!(plain(&metrics(3, 1509), Some(1509)).ready);
        assert!(!plain(&metrics(3, 1509), None).ready);
        let mut follower = metrics(3, 1509);
        follower.state = ServerState::Follower;
        follower.current_leader = Some(2);
        assert!(!plain(&follower, Some(0)).ready);
        assert!(plain(&follower, Some(0)).quorum);
    }

    #[test]
    fn a_leader_without_a_quorum_within_its_lease_says_so() {
        let mut m = metrics(3, 10);
        m.millis_since_quorum_ack = Some(900);
        assert!(plain(&m, Some(10)).quorum);
        m.millis_since_quorum_ack = Some(1001);
        assert!(!plain(&m, Some(10)).quorum);
        m.millis_since_quorum_ack = None;
        assert!(!plain(&m, Some(10)).quorum);
    }

    #[test]
    fn a_turns_txns_go_to_raft_as_batches_in_order_and_bounded_in_bytes() {
        let t = |n: usize, fill: u8| Proposed::Txn(Bytes::from(vec![fill; n]));
        let got = entries(vec![
            t(10, 1),
            t(10, 2),
            Proposed::Key([7; 16]),
            t(10, 3),
            Proposed::Digest { zxid: 5, digest: 9 },
        ]);
        let want = vec![
            Proposal::Txns(vec![Bytes::from(vec![1; 10]), Bytes::from(vec![2; 10])]),
            Proposal::Key([7; 16]),
            Proposal::Txn(Bytes::from(vec![3; 10])),
            Proposal::Digest { zxid: 5, digest: 9 },
        ];
        assert_eq!(got, want);
        // 3 txns of 0.4 MiB: two fit in a batch, the third starts the next
        let big = BATCH_BYTES * 2 / 5;
        let got = entries(vec![t(big, 1), t(big, 2), t(big, 3), t(2 * BATCH_BYTES, 4)]);
        let shape: Vec<usize> = got
            .iter()
            .map(|p| match p {
                Proposal::Txns(b) => b.len(),
                Proposal::Txn(_) => 1,
                _ => 0,
            })
            .collect();
        assert_eq!(shape, [2, 1, 1]);
        assert!(matches!(&got[2], Proposal::Txn(b) if b.len() == 2 * BATCH_BYTES));
    }

    #[test]
    fn a_txn_is_applied_only_in_the_term_it_was_prepped_in() {
        let mut p = crate::prep::Prepper::new(7 << 32, false);
        let txn = p.create_session(1, 4000, 0).encode();
        assert!(prepped_in(&txn, 7));
        assert!(!prepped_in(&txn, 8));
        assert!(!prepped_in(&txn[..10], 7));
    }

    /// An applier that fails: openraft stops its core on the storage error this makes.
    struct Broken;

    impl Applier for Broken {
        async fn apply(
            &mut self,
            _: Vec<(LogId<NodeId>, Proposal)>,
            _: LogId<NodeId>,
        ) -> io::Result<()> {
            Err(io::Error::other("disk on fire"))
        }
        async fn begin_snapshot(&mut self) -> io::Result<PendingImage> {
            Err(io::Error::other("no"))
        }
        async fn install(&mut self, _: &[u8], _: Option<LogId<NodeId>>) -> io::Result<()> {
            Err(io::Error::other("no"))
        }
    }

    #[tokio::test]
    async fn a_member_whose_raft_stops_stops_its_core() {
        let dir = tempfile::tempdir().unwrap();
        let (log, sm) = storage::open(dir.path(), 64 << 10, Broken).await.unwrap();
        let config = Arc::new(election::raft_config(200, 10, 5, 1000).unwrap());
        let raft = Raft::new(
            1,
            config,
            Network::new(1, Duration::from_millis(10)),
            log,
            sm,
        )
        .await
        .unwrap();
        let (core, mut from) = mpsc::channel(8);
        let stop = CancellationToken::new();
        tokio::spawn(stop_with_raft(raft.clone(), core, stop.clone()));
        raft.initialize(BTreeMap::from([(1, BasicNode::new("127.0.0.1:1"))]))
            .await
            .unwrap();
        // the lone voter elects itself (the driver), then its first entry fails to apply
        tokio::spawn(election::run(raft.clone(), 1));
        let _ = raft.client_write(Proposal::Key([1; 16])).await;
        let got = tokio::time::timeout(Duration::from_secs(10), from.recv()).await;
        assert!(
            matches!(got, Ok(Some(CoreMsg::Shutdown))),
            "the core was not stopped"
        );

        // a Raft shut down on purpose stops nothing
        let dir = tempfile::tempdir().unwrap();
        let (log, sm) = storage::open(dir.path(), 64 << 10, Broken).await.unwrap();
        let config = Arc::new(election::raft_config(200, 10, 5, 1000).unwrap());
        let raft = Raft::new(
            1,
            config,
            Network::new(1, Duration::from_millis(10)),
            log,
            sm,
        )
        .await
        .unwrap();
        let (core, mut from) = mpsc::channel(8);
        let stop = CancellationToken::new();
        let watch = tokio::spawn(stop_with_raft(raft.clone(), core, stop.clone()));
        stop.cancel();
        raft.shutdown().await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), watch)
            .await
            .unwrap()
            .unwrap();
        assert!(from.try_recv().is_err());
    }
}
