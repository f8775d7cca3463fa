//! The Raft type configuration: an entry's payload is one Palisade txn, encoded as the WAL
//! stores it (jute TxnHeader + record), so a committed entry applies with `State::apply`
//! after one decode and the log needs no second format.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::io::Cursor;

/// A txn the leader prepped, as encoded bytes (`palisade_proto::Txn::encode`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal(pub Bytes);

impl std::fmt::Display for Proposal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "txn({} bytes)", self.0.len())
    }
}

openraft::declare_raft_types!(
    /// Palisade's Raft: ZooKeeper's server ids (`server.N`) are the node ids.
    pub TypeConfig:
        D = Proposal,
        R = (),
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type NodeId = u64;
pub type Node = openraft::BasicNode;
