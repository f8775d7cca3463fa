//! What orders writes, beside the engine's shared logic (intake, handshake, commit, reads,
//! watches, liveness), which asks it through the few questions below and never looks inside.
//!
//! - `Standalone` (standalone.rs): this server orders writes itself, through its local log,
//!   and runs the duties of the server that orders writes (duties.rs: expiry, the reaper,
//!   orphans at restore).
//! - `Member` (member/): an ensemble member, where the quorum orders writes. Its shared part
//!   (links to consensus, the configuration, digests, Raft snapshots, online restores, syncs)
//!   holds a `Seat` (member/seat.rs) that says what this member does with a write: the Raft
//!   leader preps and proposes it (member/leader.rs, and runs the duties), a follower forwards
//!   it (member/follower.rs), a member without a quorum refuses it (member/read_only.rs).
//!   A ZooKeeper observer (issue 35: committed txns that come from a ZooKeeper leader, not
//!   from Raft) is the next seat: it forwards nothing, preps nothing and is read-only to its
//!   clients' writes until it is promoted; its txns arrive as `CoreMsg::Committed` do.
//!
//! Owns: which role this server plays and each role's own state. The shared logic may ask
//! `preps`, `forwards_writes`, `read_only`, `serving`, `is_member`; member code reaches its
//! part through `member()`, which asserts the server is one.
//!
//! May not touch: the shared logic's tables (connections, pending writes, watches) other
//! than through the engine's calls; files, sockets or threads (the runtime routes its work).

mod duties;
pub mod member;
mod standalone;

use super::outbox::Outbox;
use super::work::Work;
use super::Core;
pub(super) use duties::Duties;
pub(super) use member::Member;
use member::Seat;
pub(super) use standalone::Standalone;

pub(super) enum Role {
    Standalone(Standalone),
    Member(Box<Member>),
}

impl Role {
    /// Queues a prepped txn where this server's txns go: the local log (standalone) or the
    /// proposer (a member; only its leader appends).
    pub(super) fn append(&mut self, txn: &palisade_proto::Txn) {
        match self {
            Role::Standalone(s) => s.log.append(txn),
            Role::Member(m) => m.proposer.append(txn),
        }
    }

    /// The turn's txns, as one batch for the log (or the proposer), into the outbox.
    pub(super) fn flush_log(&mut self, outbox: &mut Outbox) {
        match self {
            Role::Standalone(s) => {
                if let Some(b) = s.log.take() {
                    outbox.push(Work::Log(b));
                }
            }
            Role::Member(m) => {
                if let Some(p) = m.proposer.take() {
                    outbox.push(Work::Propose(p));
                }
            }
        }
    }

    /// Whether this server preps writes: standalone, or the member holding the lead.
    pub(super) fn preps(&self) -> bool {
        match self {
            Role::Standalone(_) => true,
            Role::Member(m) => m.seat.leading().is_some(),
        }
    }

    /// Whether writes go to a leader instead of being prepped here.
    pub(super) fn forwards_writes(&self) -> bool {
        match self {
            Role::Standalone(_) => false,
            Role::Member(m) => m.seat.leading().is_none(),
        }
    }

    /// Serving read-only clients (read_only.rs).
    pub(super) fn read_only(&self) -> bool {
        matches!(self, Role::Member(m) if matches!(m.seat, Seat::ReadOnly(_)))
    }

    /// Whether this server takes clients (a member: member/mod.rs `serving`).
    pub(super) fn serving(&self) -> bool {
        match self {
            Role::Standalone(_) => true,
            Role::Member(m) => m.serving(),
        }
    }

    pub(super) fn is_member(&self) -> bool {
        matches!(self, Role::Member(_))
    }

    /// The duties of the server that orders writes, if this one does.
    pub(super) fn duties(&mut self) -> Option<&mut Duties> {
        match self {
            Role::Standalone(s) => Some(&mut s.duties),
            Role::Member(m) => m.seat.leading_mut().map(|l| &mut l.duties),
        }
    }

    pub(super) fn as_member(&self) -> Option<&Member> {
        match self {
            Role::Member(m) => Some(m),
            Role::Standalone(_) => None,
        }
    }

    /// The member part, for member code: asserts this server is one (member code runs only
    /// from a member's inputs and the hooks below, dispatched on `Role`).
    pub(super) fn member(&self) -> &Member {
        match self {
            Role::Member(m) => m,
            Role::Standalone(_) => unreachable!("member code reached on a standalone server"),
        }
    }

    pub(super) fn member_mut(&mut self) -> &mut Member {
        match self {
            Role::Member(m) => m,
            Role::Standalone(_) => unreachable!("member code reached on a standalone server"),
        }
    }

    /// Whether a capture of this role's is in progress (a member's Raft snapshot).
    pub(super) fn capturing(&self) -> bool {
        self.as_member().is_some_and(|m| m.snapshots.capturing())
    }

    /// Whether an ensemble restore keeps this member from serving (ensemble_restore/).
    pub(super) fn restoring(&self) -> bool {
        self.as_member()
            .is_some_and(|m| m.restore.keeps_from_serving())
    }

    /// Whether `id` is a local session of read-only mode (expiry skips those).
    pub(super) fn is_local_session(&self, id: i64) -> bool {
        self.as_member()
            .is_some_and(|m| m.seat.is_local_session(id))
    }

    /// ZooKeeper's name for this server's role (srvr's Mode, zk_server_state).
    pub(super) fn mode(&self) -> &'static str {
        match self {
            Role::Standalone(_) => "standalone",
            Role::Member(m) => m.mode(),
        }
    }
}

impl Core {
    pub(super) fn tick(&mut self) {
        let now = self.now_ms();
        self.held_tick(now);
        if self.role.is_member() {
            self.report_sessions();
            self.read_only_tick();
        }
        // A restore swaps the sessions and the tree: nothing expires or is reaped meanwhile.
        if self.role.duties().is_some() && !self.restoring() {
            if self.session_clocks_run() {
                self.expire_sessions();
            }
            self.reap();
        }
    }

    /// Whether this server's session clocks run: always standalone; on a member, only while
    /// it leads with a quorum (member/leader.rs says why).
    pub(super) fn session_clocks_run(&self) -> bool {
        match &self.role {
            Role::Standalone(_) => true,
            Role::Member(m) => m.session_clocks_run(),
        }
    }

    /// Whether a sync of `session` waits on this server (the Raft leader's point) rather
    /// than being answered as a read; see member/leader.rs `leader_sync_waits`.
    pub(super) fn sync_waits(
        &mut self,
        conn: super::conn_id::ConnId,
        session: i64,
        xid: i32,
        r: &palisade_proto::SyncRequest,
    ) -> bool {
        match &self.role {
            Role::Member(m) if matches!(m.seat, Seat::Leader(_)) => {
                self.leader_sync_waits(conn, session, xid, r)
            }
            _ => false,
        }
    }

    /// The end of a core turn: the txns prepped this turn go to the log (or the proposer) as
    /// one batch, a follower's forwards to its leader with them.
    pub(super) fn flush_turn(&mut self) {
        self.role.flush_log(&mut self.outbox);
        if let Role::Member(m) = &mut self.role {
            m.flush_forwards(&mut self.outbox);
        }
    }

    /// Between batches of input: one turn of this role's work in progress (a member's Raft
    /// snapshot capture and online restore).
    pub(super) fn role_between_batches(&mut self) {
        if self.role.is_member() {
            self.raft_snapshot_step();
            self.ensemble_restore_step();
        }
    }

    /// A txn was applied: on a member, a configuration txn makes its configuration the
    /// member's (reconfig.rs).
    pub(super) fn role_applied(&mut self, txn: &palisade_proto::Txn) {
        if self.role.is_member() {
            self.config_applied(txn);
        }
    }

    /// After txn `zxid` (one the digest rule picks): a standalone server logs its digest; a
    /// member keeps it to compare with its leader's, and the leader proposes it.
    pub(super) fn record_digest(&mut self, zxid: i64, digest: u64) {
        match &mut self.role {
            Role::Standalone(s) => s.log.digest(zxid, digest),
            Role::Member(m) => m.record_digest(&mut self.outbox, zxid, digest),
        }
    }
}
