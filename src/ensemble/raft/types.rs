//! The Raft type configuration: an entry's payload is one Palisade txn, encoded as the WAL
//! stores it (jute TxnHeader + record), so a committed entry applies with `State::apply`
//! after one decode and the log needs no second format.

use bytes::Bytes;
use openraft::error::{Infallible, RPCError, RaftError};
use openraft::BasicNode;
use serde::{Deserialize, Serialize};

/// What a call to a peer's Raft answers (`RaftNetwork`): its reply, or the error the network
/// or the peer's Raft gave (`E`: what that call's Raft error adds, if anything).
pub type RpcResult<T, E = Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

/// What the leader proposes: a txn it prepped, as encoded bytes (`palisade_proto::Txn::
/// encode`), or the ensemble's session-password key, proposed once by the first leader so
/// that every member derives the same passwords and a client can move with its session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Proposal {
    Txn(Bytes),
    Key([u8; 16]),
    /// The leader's tree digest right after it applied txn `zxid`: every member compares
    /// its own and stops if they differ.
    Digest {
        zxid: i64,
        digest: u64,
    },
    /// Several txns of one core turn, in order, as one entry: openraft's work per entry (its
    /// core's messages, the leader's log append and sync) is paid once per batch, not per
    /// write. Last, so that the variants before it keep their encoding in existing logs.
    Txns(Vec<Bytes>),
    /// A step of an online restore into the ensemble (core/role/member/ensemble_restore/): a chunk of
    /// the backup, its commit, or an abort. Last, as `Txns` is.
    Restore(crate::seam::RestorePart),
}

impl Proposal {
    /// The bytes of the txns it carries (what the log holds of it, near enough).
    pub fn payload_len(&self) -> usize {
        match self {
            Proposal::Txn(b) => b.len(),
            Proposal::Txns(batch) => batch.iter().map(Bytes::len).sum(),
            Proposal::Key(k) => k.len(),
            Proposal::Digest { .. } => 16,
            Proposal::Restore(r) => r.payload_len(),
        }
    }
}

impl std::fmt::Display for Proposal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Proposal::Txn(b) => write!(f, "txn({} bytes)", b.len()),
            Proposal::Key(_) => f.write_str("key"),
            Proposal::Digest { zxid, .. } => write!(f, "digest({zxid:#x})"),
            Proposal::Txns(t) => write!(f, "txns({})", t.len()),
            Proposal::Restore(r) => write!(f, "restore({:#x}, {} bytes)", r.id(), r.payload_len()),
        }
    }
}

openraft::declare_raft_types!(
    /// Palisade's Raft: ZooKeeper's server ids (`server.N`) are the node ids.
    pub TypeConfig:
        D = Proposal,
        R = (),
        NodeId = crate::seam::MemberId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = super::snapshot_buf::SnapshotBuf,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type NodeId = crate::seam::MemberId;
pub type Node = openraft::BasicNode;
