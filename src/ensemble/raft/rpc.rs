//! What members say to each other: the calls (`PeerRequest`) and answers (`PeerResponse`) a
//! link carries, one postcard frame each way (network.rs serves them, peer_client.rs makes
//! them), and the checks the calling side makes on what comes back. A leaf: both sides name it.

use super::types::{NodeId, Proposal, TypeConfig};
use crate::limits::{PEER_APPEND_BYTES, PEER_MAX_TERM};
use crate::seam::{Forward, SyncPoint};
use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::Vote;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
pub enum PeerRequest {
    Append(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<NodeId>),
    Snapshot(InstallSnapshotRequest<TypeConfig>),
    /// A follower's clients' writes, for the leader to prep.
    Forward(Vec<Forward>),
    /// Sessions alive on a follower (its clients' pings, in one message a tick).
    Touch(Vec<(i64, u64)>),
    /// A member not yet in the ensemble (reconfigEnabled) asks to be replicated to
    /// (raft/join.rs): its id and peer address.
    Join {
        id: NodeId,
        addr: String,
    },
    /// The leader of `term` tells this member to campaign: it hands over (raft/transfer.rs).
    Elect {
        term: u64,
    },
    /// A member asks the leader to hand over to it (`rqld`).
    Transfer {
        to: NodeId,
    },
}

pub type SnapshotResult =
    Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>;

#[derive(Debug, Serialize, Deserialize)]
pub enum PeerResponse {
    Append(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    Snapshot(SnapshotResult),
    /// The points of the forwarded syncs (None: this member does not lead).
    Forward(Option<Vec<SyncPoint>>),
    Touch,
    Join(JoinReply),
    /// Whether the campaign will be made / the hand-over begun.
    Elect(bool),
    Transfer(bool),
}

/// What a member answers a server asking to join (raft/join.rs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JoinReply {
    /// This member has formed no ensemble yet.
    NotFormed,
    /// The asker is in this member's membership already: the leader replicates to it.
    Member,
    /// This member leads and has made the asker a learner.
    Added,
    /// Ask the leader, here.
    Leader { id: NodeId, addr: String },
    /// Formed, but no leader is known (or joining is off): ask again later.
    Later,
}

/// Whether a vote a peer answered with can be taken (network.rs checks every reply).
pub fn vote_ok(v: &Vote<NodeId>) -> bool {
    v.leader_id().term <= PEER_MAX_TERM
}

fn entry_bytes(e: &openraft::Entry<TypeConfig>) -> usize {
    match &e.payload {
        openraft::EntryPayload::Normal(Proposal::Txn(b)) => b.len(),
        openraft::EntryPayload::Normal(Proposal::Txns(t)) => t.iter().map(|b| b.len()).sum(),
        openraft::EntryPayload::Normal(Proposal::Restore(r)) => r.payload_len(),
        _ => 0,
    }
}

/// How many of `entries` fit in `PEER_APPEND_BYTES` (at least one), if not all do.
pub fn too_many(entries: &[openraft::Entry<TypeConfig>]) -> Option<u64> {
    let mut bytes = 0usize;
    for (i, e) in entries.iter().enumerate() {
        bytes = bytes.saturating_add(entry_bytes(e));
        if bytes > PEER_APPEND_BYTES && i > 0 {
            return Some(i as u64);
        }
    }
    None
}
