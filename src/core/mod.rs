//! The core: one thread that owns the state, the connections' view of it and the watches,
//! and moves every request through prep → log → apply → reply in order. Connection tasks only
//! do I/O; the log and snapshot threads only write files.
//!
//! Ordering: each connection has a queue of slots. A read runs at once when its connection
//! has nothing queued, so reads never wait behind other sessions' writes; otherwise it waits
//! for the writes before it. Writes are prepped on arrival (against the tree plus the overlay
//! of pending changes), handed to the log in batches, and committed in zxid order when the log
//! reports them durable; each commit queues its watch events before its reply.
//!
//! The engine and its runtime. Everything here but `runtime/` is the engine (`Core`): it steps
//! on one input at a time (`Core::step(Now, Input)`, msg.rs) and pushes its outputs into its
//! `Outbox` (outbox.rs): what it sends to connections (through `OutTx`, over net's
//! `ConnWriter`), its work for the log and consensus (work.rs: log batches, proposals,
//! forwards, snapshot and leadership asks, the desired configuration), its answers to reply
//! tokens (token.rs) and the tasks it asks off the core thread (host.rs). `runtime/` is the
//! core thread's loop: it owns the inbox (spinning, then parking) and splits each message's
//! reply ends from the engine's input, giving it tokens (runtime/inbox.rs); reads the clock
//! once per step (`Now`, now.rs) and the host's facts the engine reports; seeds the engine's
//! random choices; and at each turn's end routes the work (runtime/routes.rs), sends the
//! answers, has net write the outbox (net/direct.rs) and runs the host tasks.
//!
//! The shared logic, each part its own file: `conns` (the connection registry and slot
//! queues), `handshake`, `intake` (requests in: reads run, writes prepped or forwarded),
//! `pending` (writes waiting for their txn), `commit` (apply, events, replies), `read`,
//! `liveness` (session deadlines and attachment), `snapshots` (when and how a capture
//! advances). What orders writes is the `role` beside it (role/): standalone (the local log),
//! or an ensemble member seated as Raft leader, follower or read-only; the shared logic asks
//! the role a few questions (`Role::preps`, `forwards_writes`, `read_only`, `serving`) and
//! never looks inside it.
//!
//! Owns: the state (through `state::State::apply` only), connections, watches, liveness,
//! the overlay (through `prep`). May not touch: files (durability does), sockets (net does).
//! The engine also names no tokio, reads no clock, draws no random number from the system,
//! keeps no thread-local and starts no thread: those are the runtime's (tests/layering.rs
//! checks it).

pub mod admin;
mod backup;
mod commit;
pub mod conn_id;
pub mod conn_out;
mod conns;
pub mod fourlw;
mod fuzzy_image;
mod handshake;
pub mod host;
mod intake;
pub mod liveness;
mod metrics_sample;
mod msg;
mod namespaces;
mod now;
pub mod outbox;
mod pending;
pub(crate) mod read;
pub(crate) mod reply;
pub mod restore;
mod restore_spool;
mod role;
mod runtime;
mod sasl;
mod shed;
mod snapshots;
mod stats;
#[cfg(test)]
pub(crate) mod testkit;
pub mod token;
pub mod watch;
pub mod work;

pub use conn_out::{ConnWriter, GlobalBudget, Out, OutBudget, OutTx};
pub(crate) use conns::Conn;
pub use msg::{Handshake, Input, Msg};
pub use now::Now;
/// An ensemble member's part (role/member/): its links, proposer and the seam's types, by the
/// name the server and the admin side know it.
pub use role::member;
pub use runtime::{ConsensusRoutes, CoreMsg, Oneshots, Routes};
pub(crate) use stats::{CoreMetrics, Stats};
pub use token::{Ends, Tokens};

use crate::acl::AuthId;
use crate::core::conn_id::ConnId;
use crate::core::watch::Watches;
use crate::durability::recovery::Restored;
use crate::prep::Prepper;

use crate::state::State;
use hashbrown::{HashMap, HashSet};
use liveness::Liveness;
use palisade_proto::Txn;
use pending::PendingWrites;
use role::{Role, Standalone};
use snapshots::Snapper;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct CoreConfig {
    pub tick_ms: u64,
    pub min_session_timeout: i32,
    pub max_session_timeout: i32,
    pub max_buffer: usize,
    /// The largest reply built (`maxReplySize`, usize::MAX when unset); a larger one is
    /// answered with an error. Replies are bounded by the output budgets in any case.
    pub max_reply: usize,
    pub ttl_enabled: bool,
    pub four_letter_words: Vec<String>,
    pub super_digest: Option<String>,
    pub secret: [u8; 16],
    pub client_port: u16,
    pub data_dir: String,
    pub data_log_dir: String,
    pub max_client_cnxns: usize,
    /// How often containers and TTL nodes are checked for reaping (znode.container.checkIntervalMs).
    pub container_check_ms: u64,
    /// At most how long the core polls for its next message before it parks (spin.rs).
    pub spin_wait: Duration,
    /// Sessions imported from ZooKeeper (migrate/): their clients may reconnect with the
    /// password ZooKeeper gave them, which is derived from the id (as ZooKeeper accepts it).
    pub zookeeper_sessions: std::collections::HashSet<i64>,
    /// SASL and enforced authentication (auth/, core/sasl.rs).
    pub auth: crate::auth::AuthPolicy,
    /// `reconfigEnabled`, `standaloneEnabled` (core/role/member/reconfig.rs).
    pub reconfig_enabled: bool,
    pub standalone_enabled: bool,
    /// Reads a backup stream (ZooKeeper's snapshot format) into a state at its zxid, for a
    /// restore committed through an ensemble's log (role/member/ensemble_restore/). Handed in: the
    /// reader is migrate's, a layer above the core.
    pub restore_reader: RestoreReader,
}

/// A backup stream and its last processed zxid → the state it holds.
pub type RestoreReader = fn(bytes::Bytes, i64) -> Result<State, String>;

pub struct Core {
    pub(crate) cfg: CoreConfig,
    pub(crate) state: State,
    pub(crate) watches: Watches,
    pub(crate) liveness: Liveness,
    prep: Prepper,
    pub(crate) conns: HashMap<ConnId, Conn>,
    /// What this turn sends to connections, staged for the runtime to write (outbox.rs).
    pub(crate) outbox: outbox::Outbox,
    /// Connections whose reads are held back until their output drains.
    held: HashSet<ConnId>,
    pending: PendingWrites,
    /// Txns handed to the log and not yet durable (a member: proposed and not yet
    /// committed), in zxid order.
    inflight: VecDeque<Txn>,
    snap: Option<Snapper>,
    /// What orders writes: standalone, or an ensemble member in its seat (role/).
    role: Role,
    /// Where the engine's millisecond clock (`now_ms`: session deadlines) starts.
    clock: Instant,
    pub(crate) started: Instant,
    /// The time of the input being handled (`step`).
    pub(crate) now: Now,
    /// Random choices, from the seed the runtime handed in.
    rng: fastrand::Rng,
    /// The host's facts the runtime read at startup (host.rs).
    pub(crate) host: host::HostInfo,
    /// The host's facts the runtime read for the input being handled (a 4lw, an admin query).
    pub(crate) probe: host::HostProbe,
    pub(crate) stats: Stats,
    pub(crate) metrics: CoreMetrics,
    /// Shutdown was asked for: stop once no txn is in flight.
    stopping: bool,
    /// A backup's capture in progress (backup.rs).
    backup: Option<backup::BackupCapture>,
    /// A backup being restored into this server (restore.rs).
    restoring: Option<restore::Restoring>,
}

impl Core {
    /// An engine that starts at `now` and draws its random choices (snapshot spacing, which
    /// connections a shed closes) from `seed`. `Core::new` (runtime.rs) reads both for it.
    pub fn start(cfg: CoreConfig, now: Now, seed: u64) -> Self {
        let liveness = Liveness::new(cfg.secret, cfg.tick_ms, now.wall_ms);
        let prep = Prepper::new(0, cfg.ttl_enabled);
        let role = Role::Standalone(Standalone::new(cfg.container_check_ms));
        Core {
            cfg,
            state: State::new(),
            watches: Watches::default(),
            liveness,
            prep,
            conns: HashMap::new(),
            outbox: outbox::Outbox::default(),
            held: HashSet::new(),
            pending: PendingWrites::default(),
            inflight: VecDeque::new(),
            snap: None,
            role,
            clock: now.mono,
            started: now.mono,
            now,
            rng: fastrand::Rng::with_seed(seed),
            host: host::HostInfo::default(),
            probe: host::HostProbe::default(),
            stats: Stats::default(),
            metrics: CoreMetrics::default(),
            stopping: false,
            backup: None,
            restoring: None,
        }
    }

    /// Takes over the state recovery rebuilt. Every session gets a fresh full timeout, so
    /// clients that reconnect in time keep their ephemerals; ephemerals whose session is gone
    /// are deleted (a leader duty, through a closeSession txn logged like any other).
    pub fn restore(&mut self, r: Restored) {
        let now = self.now_ms();
        self.state = r.state;
        for (&id, &timeout) in self.state.sessions() {
            self.liveness.add(id, timeout, now);
        }
        self.prep = Prepper::new(self.state.zxid(), self.cfg.ttl_enabled);
        self.close_orphans();
    }

    fn now_ms(&self) -> u64 {
        self.now.ms_since(self.clock)
    }

    /// Handles one input at `now`. Returns true when the core must stop.
    pub fn step(&mut self, now: Now, msg: Input) -> bool {
        self.now = now;
        self.handle(msg)
    }

    /// Work done between batches of input, at `now`: one turn of each capture in progress.
    pub(crate) fn between_batches(&mut self, now: Now) {
        self.now = now;
        self.snapshot_step();
        self.role_between_batches();
        self.backup_step();
        self.restore_step();
    }

    /// Returns true when the core must stop.
    fn handle(&mut self, msg: Input) -> bool {
        match msg {
            Msg::Connect(h) => {
                self.metrics.connection_requests += 1;
                self.connect(h)
            }
            Msg::Request {
                conn,
                xid,
                req,
                frame,
            } => self.request(conn, xid, req, frame),
            Msg::Bad {
                conn,
                xid,
                op,
                error,
            } => self.bad(conn, xid, op, error),
            Msg::Closed { conn } => self.drop_conn(conn, false),
            Msg::Admin(query) => self.admin(query),
            Msg::FourLetter { word, out, peer } => self.answer_four_letter(word, out, peer),
            Msg::Durable(upto) => {
                self.durable(upto);
                return self.stopping && self.inflight.is_empty();
            }
            Msg::LogFailed(e) => {
                tracing::error!(error = %e, "log write failed; stopping so no write is acknowledged without being durable");
                return true;
            }
            Msg::Drained(conn) => self.drained(conn),
            Msg::Tick => self.tick(),
            Msg::Shutdown => {
                // In-flight writes: wait for the log to report them, then stop. A member's
                // proposals commit (or not) with the quorum, not with this process.
                self.stopping = true;
                return self.inflight.is_empty() || self.role.is_member();
            }
            msg => return self.member_input(msg),
        }
        false
    }

    /// An input only consensus sends (a member's). A standalone server has no consensus
    /// sending to it; one that arrives is dropped, and a request's reply token with it (the
    /// runtime drops its end: a Raft snapshot's builder sees an error). Returns true when the
    /// core must stop.
    fn member_input(&mut self, msg: Input) -> bool {
        if !self.role.is_member() {
            tracing::warn!("an ensemble member's input on a standalone server; dropped");
            return false;
        }
        match msg {
            Msg::Committed {
                items,
                at,
                log_bytes,
                ack,
            } => {
                let ok = self.committed(items, at, log_bytes);
                self.outbox.answer(ack, ());
                return !ok;
            }
            Msg::Role(v) => self.set_role(v),
            Msg::Forwarded(ops, reply) => {
                let points = self.forwarded(ops);
                if let Some(r) = reply {
                    self.outbox.answer(r, points);
                }
            }
            Msg::SyncPoints(points) => self.sync_points(points),
            Msg::Touched(ids) => self.touched(ids),
            Msg::ForwardFailed(sessions) => self.forward_failed(sessions),
            Msg::Image(reply) => self.raft_snapshot(reply),
            Msg::Install { image, at, ack } => {
                let installed = self.install(&image, at);
                self.outbox.answer(ack, installed);
            }
            _ => unreachable!("handle takes every other input"),
        }
        false
    }

    /// Hands a prepped txn to the log; `waiter` is told when it commits. Only the role that
    /// orders writes preps (a follower forwards, read-only mode refuses): asserted.
    fn submit(&mut self, txn: Txn, waiter: Option<pending::Waiter>) {
        assert!(
            self.role.preps(),
            "a txn prepped by a role that does not order writes"
        );
        if let Some(w) = waiter {
            self.pending.add(txn.header.client_id, txn.header.cxid, w);
        }
        self.role.append(&txn);
        if crate::faults::on(crate::faults::Fault::EarlyAck) && self.role.is_member() {
            self.raft_snapshot_txn(&txn);
            self.commit(txn.clone()); // answered before a quorum logged it
        }
        self.inflight.push_back(txn);
    }

    /// Preps and submits the closeSession of `session` with `cxid`: asked by its client on
    /// `conn` (answered once committed), by a follower's client (answered there) or by the
    /// server (expiry, orphans: cxid 0, nobody waits). From now on the session's requests
    /// fail with SESSIONEXPIRED.
    fn close_session(&mut self, session: i64, cxid: i32, conn: Option<ConnId>) {
        if let Some(s) = self.liveness.get_mut(session) {
            s.closing = true;
        }
        let txn = self
            .prep
            .close_session(&self.state.tree, session, cxid, self.now.wall_ms);
        let waiter = conn.map(|conn| pending::Waiter {
            conn,
            zxid: Some(txn.header.zxid),
            awaiting: pending::Awaiting::Close,
            at: self.now.mono,
        });
        self.submit(txn, waiter);
    }

    /// The identity the server's own txns are prepped with (the reaper): super, so ACLs do
    /// not stop it.
    fn server_auth() -> [AuthId; 1] {
        [AuthId {
            scheme: "super".into(),
            id: "".into(),
        }]
    }
}

#[cfg(test)]
#[path = "core_test.rs"]
mod tests;
