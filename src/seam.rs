//! The seam between the engine (`core/`) and the consensus glue (`ensemble/raft/`): what the
//! two exchange, and nothing else. The core proposes (`Proposed`), a follower's core sends
//! its leader writes and touches (`ToLeader`, `Forward`), and the core is told what the
//! quorum committed (`CommittedBatch`), where that stands in the log (`LogPos`), who leads
//! (`RoleView`), the leader's sync points (`SyncPoint`), Raft's state for `lgif`
//! (`RaftInfo`), and the steps of an online restore every member applies (`RestorePart`).
//!
//! A leaf: it imports nothing from the crate and no tokio, so both sides can name it and
//! neither names the other. ensemble/raft reaches the core only through [`CoreInbox`]:
//! the core's runtime implements it for its inbox (core/runtime/inbox.rs), turning each call
//! into its own `CoreMsg` and pairing each request with the one-shot channel its answer comes
//! back on (the engine answers through a reply token: core/token.rs).
//! The seam holds data and no channel, and the glue never names `CoreMsg`; a committed
//! batch is moved, not copied, on its way in.

use bytes::Bytes;
use palisade_proto::Txn;
use serde::{Deserialize, Serialize};
use std::future::Future;

/// A member's id: its `server.N` number, and Raft's node id.
pub type MemberId = u64;

/// A write a follower hands to the leader to prep.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Forward {
    pub session: i64,
    pub cxid: i32,
    pub what: Forwarded,
    /// The identities of the client's connection (scheme, id), as prep checks ACLs with them.
    pub auth: Vec<(String, String)>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Forwarded {
    /// A client's write request as the client sent it (header and body).
    Request(Bytes),
    /// A new session the follower allocated the id of.
    CreateSession { timeout: i32 },
    /// A write whose body did not decode: an error txn with this code.
    Error(i32),
    /// A sync: the leader answers with the zxid the follower must apply first.
    Sync,
    /// A part of a backup an operator posted to this follower's `restore` (core/
    /// role/member/ensemble_restore/): the leader proposes it. Sent with session 0 and the chunk's
    /// sequence number as cxid, so a failed forward names it. Last, so that the variants
    /// before it keep their encoding on the peer link.
    Restore(RestorePart),
}

/// A step of an online restore into the ensemble (core/role/member/ensemble_restore/): the backup
/// stream in chunks, then its commit (or an abort), each a Raft entry that every member
/// applies in log order. `id` names one restore.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RestorePart {
    /// Bytes `seq` (from 0) of the stream, at most limits.rs `RESTORE_CHUNK_BYTES`.
    Chunk { id: u64, seq: u32, bytes: Bytes },
    /// Every chunk is in: `chunks` of them, `len` bytes whose CRC-32 is `crc`, a stream whose
    /// last processed zxid is `zxid`. Every member restores it here.
    Commit {
        id: u64,
        chunks: u32,
        len: u64,
        crc: u32,
        zxid: i64,
    },
    /// The restore is given up; every member drops what it spooled of it.
    Abort { id: u64, why: String },
}

impl RestorePart {
    pub fn id(&self) -> u64 {
        match self {
            RestorePart::Chunk { id, .. }
            | RestorePart::Commit { id, .. }
            | RestorePart::Abort { id, .. } => *id,
        }
    }

    /// The payload bytes it carries (a chunk's; the others are small).
    pub fn payload_len(&self) -> usize {
        match self {
            RestorePart::Chunk { bytes, .. } => bytes.len(),
            RestorePart::Commit { .. } => 32,
            RestorePart::Abort { why, .. } => 8 + why.len(),
        }
    }
}

/// A sync's point: (session, cxid) must wait until this zxid is applied.
pub type SyncPoint = (i64, i32, i64);

/// What the leader proposes.
pub enum Proposed {
    Txn(Bytes),
    Key([u8; 16]),
    Digest {
        zxid: i64,
        digest: u64,
    },
    /// A step of an online restore (core/role/member/ensemble_restore/), an entry of its own.
    Restore(RestorePart),
}

/// What a follower sends its leader.
pub enum ToLeader {
    Forward(Vec<Forward>),
    /// Sessions alive on the follower, each with the ms its deadline there has left.
    Touch(Vec<(i64, u64)>),
}

/// A committed entry as the core applies it.
pub enum Committed {
    Txn(Txn),
    /// The ensemble's password key; the first committed one holds.
    Key([u8; 16]),
    /// The leader's digest after txn `zxid`.
    Digest {
        zxid: i64,
        digest: u64,
    },
    /// A step of an online restore, in the entry of this term.
    Restore {
        part: RestorePart,
        term: u64,
    },
}

/// Entries committed by the quorum, in log order.
pub struct CommittedBatch {
    pub items: Vec<Committed>,
    /// Where in the Raft log the batch ends.
    pub at: Option<LogPos>,
    /// The entries' bytes in the log, for the snapshot rule (core/role/member/raft_snapshot.rs).
    pub log_bytes: u64,
}

/// Where a committed batch ends in the Raft log (the entry's term, the node that led it, its
/// index): opaque to the core, which hands it back with a snapshot's image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogPos {
    pub term: u64,
    pub node: MemberId,
    pub index: u64,
}

/// A fuzzy image of the state for a Raft snapshot, and where in the Raft log it stands.
pub type Image = (Vec<u8>, Option<LogPos>);

/// Who leads, as Raft's metrics say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoleView {
    pub leader: Option<MemberId>,
    pub term: u64,
    /// This member leads `term` and has applied every entry before the term's first: it may
    /// prep, and its zxids exceed every earlier term's.
    pub ready: bool,
    /// A non-voting member (an observer).
    pub learner: bool,
    /// On the leader: a quorum acknowledged it within the lease. Without one it serves no
    /// clients (as a ZooKeeper leader that lost its followers), but keeps what it prepped.
    pub quorum: bool,
    /// On the leader: the other voters and observers it replicates to, and of them the
    /// ones that have matched its log (ZooKeeper's synced followers and observers). Raft
    /// learners outside the configuration (a server joining, or one a reconfig removed) are
    /// ZooKeeper's non-voting followers: counted among the followers and apart.
    pub followers: u16,
    pub observers: u16,
    pub synced_followers: u16,
    pub synced_observers: u16,
    pub non_voting: u16,
    pub synced_non_voting: u16,
    /// The version of the configuration whose membership Raft has applied on this member
    /// (-1: none yet): a reconfig is answered once it reaches the reconfig's zxid.
    pub config_version: i64,
}

/// Raft's state as `lgif` prints it, kept current by the role task.
#[derive(Clone, Debug, Default)]
pub struct RaftInfo {
    pub state: String,
    pub term: u64,
    pub leader: Option<MemberId>,
    pub last_log_index: Option<u64>,
    pub last_applied: Option<(u64, u64)>,
    pub last_snapshot: Option<(u64, u64)>,
    pub purged: Option<(u64, u64)>,
    pub millis_since_quorum_ack: Option<u64>,
    /// On the leader: the members in touch with it that have its log, itself included
    /// (ZooKeeper's synced learners; a reconfig needs a quorum of the new voters among them).
    pub synced: Vec<MemberId>,
}

impl RaftInfo {
    pub fn text(&self) -> String {
        let idx = |x: Option<(u64, u64)>| x.map_or("-1".into(), |(_, i)| i.to_string());
        let term = |x: Option<(u64, u64)>| x.map_or("-1".into(), |(t, _)| t.to_string());
        let opt = |x: Option<u64>| x.map_or("-1".into(), |v| v.to_string());
        format!(
            "state\t{}\nterm\t{}\nleader\t{}\nlast_log_idx\t{}\nlast_applied_log_idx\t{}\n\
             last_applied_log_term\t{}\nlast_snapshot_idx\t{}\nlast_snapshot_term\t{}\n\
             purged_log_idx\t{}\nmillis_since_quorum_ack\t{}\n",
            self.state,
            self.term,
            opt(self.leader),
            opt(self.last_log_index),
            idx(self.last_applied),
            term(self.last_applied),
            idx(self.last_snapshot),
            term(self.last_snapshot),
            idx(self.purged),
            opt(self.millis_since_quorum_ack),
        )
    }
}

/// What an operator asks of this member's leadership (`ydld`, `rqld`): the Raft side does it
/// (ensemble/raft/transfer.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeadershipAsk {
    /// The leader hands over to the member furthest along.
    Yield,
    /// This member asks the leader to hand over to it.
    Request,
}

/// What the glue tells the core without waiting for an answer.
pub enum Notice {
    /// Who leads now, and whether this member may prep.
    Role(RoleView),
    /// On a follower: the leader's points for its syncs.
    SyncPoints(Vec<SyncPoint>),
    /// On the leader: sessions alive on a follower, with the ms each has left there.
    Touched(Vec<(i64, u64)>),
    /// On a follower: these forwarded requests (session, cxid) did not reach the leader.
    ForwardFailed(Vec<(i64, i32)>),
    /// Consensus stopped (Raft failed, its log cannot be written, this member's history is
    /// not the ensemble's): the member stops rather than serve.
    Shutdown,
}

/// The core stopped: nothing it was sent will be answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreGone;

/// The core's inbox as the glue sees it. Each send waits for room in the inbox (it is
/// bounded: the glue's tasks slow down rather than fill memory); a request gives back an
/// [`CoreInbox::Answer`] to await separately, so that the applier can send the next batch
/// before it waits for the last one's acknowledgement.
pub trait CoreInbox: Clone + Send + Sync + 'static {
    /// The core's answer to one request; `CoreGone` when the core dropped it.
    type Answer<T: Send + 'static>: Future<Output = Result<T, CoreGone>> + Send + Unpin + 'static;

    fn tell(&self, n: Notice) -> impl Future<Output = Result<(), CoreGone>> + Send;
    /// From code that cannot wait: false when the inbox is full or the core is gone.
    fn try_tell(&self, n: Notice) -> bool;
    /// Committed entries; answered once the core applied them.
    fn committed(
        &self,
        batch: CommittedBatch,
    ) -> impl Future<Output = Result<Self::Answer<()>, CoreGone>> + Send;
    /// A fuzzy image of the state for a Raft snapshot, taken between batches; answered with
    /// where in the Raft log the image stands.
    fn image(&self) -> impl Future<Output = Result<Self::Answer<Image>, CoreGone>> + Send;
    /// Replace the state with a Raft snapshot's image, which stands at `at`.
    fn install(
        &self,
        image: Vec<u8>,
        at: Option<LogPos>,
    ) -> impl Future<Output = Result<Self::Answer<Result<(), String>>, CoreGone>> + Send;
    /// On the leader: writes its followers' clients sent; answered with the points of the
    /// syncs among them (None: this member does not lead).
    fn forwarded(
        &self,
        ops: Vec<Forward>,
    ) -> impl Future<Output = Result<Self::Answer<Option<Vec<SyncPoint>>>, CoreGone>> + Send;
}
