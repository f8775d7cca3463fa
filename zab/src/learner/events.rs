//! What goes in and out of the learner, and what it starts from.

use crate::error::CodecError;
use crate::packet::{ForwardedRequest, Packet, PacketType};
use crate::snapshot::{SnapItem, SnapshotEnd};
use crate::stream::Frame;
use crate::txn::TxnEntry;
use palisade_proto::Id;

/// What the learner starts from (its durable state) and ZooKeeper's timing settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnerConfig {
    /// This member's server.N id (myid).
    pub server_id: i64,
    /// The version of the ensemble config the member holds (0 for a static config).
    pub config_version: i64,
    /// The highest epoch the member has accepted from a leader.
    pub accepted_epoch: i64,
    /// The epoch of the leader the member last synced with.
    pub current_epoch: i64,
    /// The zxid of the last txn applied (0 for an empty member).
    pub last_zxid: i64,
    pub tick_ms: u64,
    /// Ticks a handshake and sync may go without a packet from the leader.
    pub init_limit: u64,
    /// Ticks the link may be silent after NEWLEADER.
    pub sync_limit: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A connection to the leader's quorum port is open (after TLS / quorum SASL, if any).
    Connected,
    /// The connection closed or failed.
    Closed,
    /// The connection's decoder failed: the stream cannot be framed any more.
    BadStream(CodecError),
    /// A frame decoded from the leader's bytes.
    Frame(Frame),
    Tick {
        now_ms: u64,
    },
    /// A client request to send to the leader: a write, createSession, closeSession, or a sync
    /// (op 9, answered by the leader's SYNC). `authinfo` is the client connection's ids.
    Forward {
        request: ForwardedRequest,
        authinfo: Option<Vec<Id>>,
    },
    /// A client reconnecting with a session this member does not own: ask the leader.
    Revalidate {
        session_id: i64,
        timeout: i32,
    },
    /// A client of this member used its session: reported at the next PING.
    Touch {
        session_id: i64,
        timeout: i32,
    },
}

/// A request waiting for the leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pending {
    Write { session_id: i64, cxid: i32 },
    Sync { session_id: i64, cxid: i32 },
    Revalidate { session_id: i64 },
}

/// How the leader syncs the learner (LearnerHandler.syncFollower's choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncMode {
    /// The txns after the learner's last zxid follow (PROPOSAL/COMMIT pairs).
    Diff,
    /// The learner holds txns the leader does not: cut them, then as DIFF.
    Trunc,
    /// The learner is too far behind (or elsewhere): the whole tree follows.
    Snap,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    Send(Packet),
    /// The leader chose how to sync: `zxid` is the DIFF's last committed zxid, the TRUNC's
    /// cut, or the SNAP's; `from` is the learner's last zxid it answered (ACKEPOCH).
    Syncing {
        mode: SyncMode,
        zxid: i64,
        from: i64,
    },
    /// Items of the leader's snapshot, in order: after `Syncing { mode: Snap }`, build a new
    /// tree from them (the old one is being replaced).
    SnapshotItems(Vec<SnapItem>),
    /// The snapshot is whole: the new tree replaces the state, at `zxid`. It is fuzzy (as a
    /// snapshot file is): txns after `zxid` may be partly in it, and the Apply outputs that
    /// follow must be applied as ZooKeeper replays a log over a snapshot.
    SnapshotEnd {
        zxid: i64,
        end: SnapshotEnd,
    },
    /// Drop every txn after `zxid`.
    Truncate {
        zxid: i64,
    },
    /// Apply this committed txn (its zxid is `entry.zxid()`; check its digest if present).
    Apply {
        entry: TxnEntry,
    },
    /// The txn of a forwarded request has just been output as Apply: answer the client.
    WriteDone {
        session_id: i64,
        cxid: i32,
        zxid: i64,
    },
    /// The leader answered a forwarded sync: every txn before it has been output.
    SyncDone {
        session_id: i64,
        cxid: i32,
    },
    Revalidated {
        session_id: i64,
        valid: bool,
    },
    /// In sync with the leader (UPTODATE): serve clients.
    Synced {
        zxid: i64,
    },
    /// A reconfig txn was activated (COMMITANDACTIVATE / INFORMANDACTIVATE).
    Reconfigured {
        leader_id: i64,
        zxid: i64,
    },
    /// A packet ZooKeeper's observer also ignores (with a log line).
    Ignored {
        kind: PacketType,
        zxid: i64,
        why: &'static str,
    },
    /// A request that will get no answer from the leader (fail it to the client).
    Dropped(Pending),
    /// Close the connection (if still open), find the leader, connect again.
    Resync(Resync),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resync {
    Closed,
    /// Nothing from the leader for `silent_ms`.
    Timeout {
        silent_ms: u64,
    },
    Stream(CodecError),
    /// A packet that has no place at this point of the protocol, or a txn stream that does
    /// not add up.
    Protocol(String),
    /// A new connection replaced the current one.
    Reconnected,
}
