//! A member's links to consensus (`MemberLinks`, handed in by `Core::join`): what the engine
//! reads of them (its id, the rooms of the bounded queues) and how it hands them work, as
//! outbox work (work.rs) the runtime routes; its proposer (`Proposer`: what its leader preps
//! is proposed). The core's inbox as the consensus glue sends to it (seam.rs `CoreInbox`) is
//! the runtime's (runtime/inbox.rs).

use crate::core::outbox::Outbox;
use crate::core::work::{Room, Work};
use crate::seam::{Forward, LeadershipAsk, Proposed, RaftInfo, ToLeader};
use palisade_proto::Txn;

/// What the engine knows of its links to consensus. The channels themselves are the
/// runtime's (runtime/routes.rs): the engine pushes work to its outbox and reads the bounded
/// queues' room here.
pub struct MemberLinks {
    pub myid: u64,
    /// What `conf` adds for a member (serverId, limits, membership), from members.rs.
    pub conf: String,
    pub info: std::sync::Arc<parking_lot::Mutex<RaftInfo>>,
    /// The forwarder's queue (limits.rs `FORWARD_QUEUE`): forwards and touches are pushed
    /// only while it has room, never waited on.
    pub to_leader: Box<dyn Room>,
    /// Asks Raft for a snapshot: every snapCount/2..snapCount applied txns (randomised, as
    /// ZooKeeper does, so that members do not snapshot together) and on `csnp`. Raft's own
    /// policy counts entries, and an entry holds a whole batch. Bounded
    /// (`RAFT_SNAPSHOT_ASKS`): full means an ask is on its way.
    pub snapshot: Box<dyn Room>,
    pub snap_count: u64,
    /// readonlymode.enabled: how long this member must be without a quorum before it serves
    /// read-only clients (ZooKeeper's max(2 s, tickTime)); None: never.
    pub read_only: Option<std::time::Duration>,
    /// zoo.cfg's server.N lines: the configuration until one is committed (reconfig.rs).
    pub members: Vec<crate::membership::members::Member>,
    /// `ydld` and `rqld`, to the Raft side: whether it is still there.
    pub leadership: Box<dyn Room>,
    /// `--force-new-ensemble`: the first ready leadership commits a configuration of this
    /// member alone (core/reconfig.rs `commit_alone_config`).
    pub alone: bool,
}

/// What became of forwards handed to the forwarder.
pub(super) enum Handed {
    Sent,
    /// Its queue is full (a leader that does not answer): here they are back.
    Full(Vec<Forward>),
    /// The forwarder is gone (shutting down).
    Gone,
}

impl MemberLinks {
    /// Whether the forwarder's queue has room for one more item, counting what this turn
    /// pushed already (work.rs).
    fn to_leader_room(&self, outbox: &Outbox) -> bool {
        self.to_leader.free() > outbox.queued_to_leader()
    }

    /// Hands forwards to the forwarder without waiting (`FORWARD_QUEUE` bounds it).
    pub(super) fn hand_forwards(&self, outbox: &mut Outbox, ops: Vec<Forward>) -> Handed {
        if self.to_leader.closed() {
            Handed::Gone
        } else if !self.to_leader_room(outbox) {
            Handed::Full(ops)
        } else {
            outbox.push(Work::ToLeader(ToLeader::Forward(ops)));
            Handed::Sent
        }
    }

    /// Tells the leader which sessions are alive here; skipped when the forwarder's queue is
    /// full (the next tick's touch says the same, newer).
    pub(super) fn touch(&self, outbox: &mut Outbox, ids: Vec<(i64, u64)>) {
        if !self.to_leader.closed() && self.to_leader_room(outbox) {
            outbox.push(Work::ToLeader(ToLeader::Touch(ids)));
        }
    }

    /// Asks Raft for a snapshot; false when the Raft side is gone. A full queue means an ask
    /// is on its way, which this one joins.
    pub(super) fn ask_snapshot(&self, outbox: &mut Outbox) -> bool {
        if self.snapshot.closed() {
            return false;
        }
        if self.snapshot.free() > outbox.queued_snapshot_asks() {
            outbox.push(Work::AskSnapshot);
        }
        true
    }

    /// Hands `ydld`/`rqld` to the Raft side; false when it is gone.
    pub(super) fn ask_leadership(&self, outbox: &mut Outbox, ask: LeadershipAsk) -> bool {
        if self.leadership.closed() {
            return false;
        }
        outbox.push(Work::Leadership(ask));
        true
    }
}

/// What a member's leader proposes, one batch per core turn. Digest records are not logged:
/// every member applies the same entries (the digests in Raft snapshots are checked at
/// install).
#[derive(Default)]
pub struct Proposer {
    queued: Vec<Proposed>,
}

impl Proposer {
    pub(in crate::core) fn append(&mut self, txn: &Txn) {
        self.queued.push(Proposed::Txn(txn.encode()));
    }

    /// The turn's proposals, as one batch (None: nothing is queued).
    pub(in crate::core) fn take(&mut self) -> Option<Vec<Proposed>> {
        (!self.queued.is_empty()).then(|| std::mem::take(&mut self.queued))
    }
}
