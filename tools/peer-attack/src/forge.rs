//! What the attacks send, built from the member's own types: votes, log ids, entries
//! carrying txns as the log stores them, and client requests as a follower forwards them.

use bytes::Bytes;
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Vote};
use palisade::ensemble::raft::rpc::PeerRequest;
use palisade::ensemble::raft::types::{NodeId, Proposal, TypeConfig};
use palisade_proto::{
    CreateRequest, CreateTxn, Id, OpCode, Request, SetACLRequest, SetACLTxn, SetDataRequest, Txn,
    TxnBody, TxnHeader, ACL,
};

/// Every permission (ZooKeeper's Perms.ALL).
const PERMS_ALL: i32 = 31;

pub fn world_anyone() -> Vec<ACL> {
    vec![ACL {
        perms: PERMS_ALL,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

pub fn log_id(term: u64, node: NodeId, index: u64) -> LogId<NodeId> {
    LogId::new(CommittedLeaderId::new(term, node), index)
}

/// A vote request; `term` 0 asks a member for its vote and last log id and changes nothing.
pub fn vote(term: u64, candidate: NodeId, last: Option<LogId<NodeId>>) -> PeerRequest {
    PeerRequest::Vote(openraft::raft::VoteRequest {
        vote: Vote::new(term, candidate),
        last_log_id: last,
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn txn(zxid: i64, cxid: i32, type_: i32, body: TxnBody) -> Bytes {
    Txn {
        header: TxnHeader {
            client_id: 0x7a7a_0000_0000_0001,
            cxid,
            zxid,
            time: now_ms(),
            type_,
        },
        body,
    }
    .encode()
}

/// A create of `path` open to anyone.
pub fn create_txn(zxid: i64, path: &str, data: &[u8]) -> Bytes {
    txn(
        zxid,
        1,
        OpCode::Create as i32,
        TxnBody::Create(CreateTxn {
            path: path.into(),
            data: Some(Bytes::copy_from_slice(data)),
            acl: Some(world_anyone()),
            ephemeral: false,
            parent_c_version: 1000,
        }),
    )
}

/// A setACL opening `path` to anyone.
pub fn set_acl_txn(zxid: i64, path: &str) -> Bytes {
    txn(
        zxid,
        2,
        OpCode::SetACL as i32,
        TxnBody::SetAcl(SetACLTxn {
            path: path.into(),
            acl: Some(world_anyone()),
            version: 1,
        }),
    )
}

/// A txn whose type no member knows (the header, then a few bytes of body).
pub fn unknown_txn(zxid: i64) -> Bytes {
    let mut b = txn(
        zxid,
        3,
        999,
        TxnBody::Error(palisade_proto::ErrorTxn { err: 0 }),
    )
    .to_vec();
    b.extend_from_slice(b"junk");
    Bytes::from(b)
}

pub fn entry(id: LogId<NodeId>, txn: Bytes) -> Entry<TypeConfig> {
    Entry {
        log_id: id,
        payload: EntryPayload::Normal(Proposal::Txn(txn)),
    }
}

/// An append of `txns` after `prev`, as leader `vote` (its term and id), committing them.
pub fn append(vote: Vote<NodeId>, prev: Option<LogId<NodeId>>, txns: Vec<Bytes>) -> PeerRequest {
    let term = vote.leader_id().term;
    let node = vote.leader_id().voted_for().unwrap_or(0);
    let first = prev.map_or(1, |p| p.index.saturating_add(1));
    let entries: Vec<_> = txns
        .into_iter()
        .enumerate()
        .map(|(i, t)| entry(log_id(term, node, first + i as u64), t))
        .collect();
    let commit = entries.last().map(|e| e.log_id).or(prev);
    PeerRequest::Append(openraft::raft::AppendEntriesRequest {
        vote,
        prev_log_id: prev,
        entries,
        leader_commit: commit,
    })
}

/// A zxid of `epoch` (a term) and `counter`.
pub fn zxid(epoch: u64, counter: u32) -> i64 {
    ((epoch as i64) << 32) | i64::from(counter)
}

/// A client's write as a follower forwards it: the request header and body.
pub fn set_data_request(xid: i32, path: &str, data: &[u8]) -> Bytes {
    Request::SetData(SetDataRequest {
        path: path.into(),
        data: Some(Bytes::copy_from_slice(data)),
        version: -1,
    })
    .encode(xid)
    .freeze()
}

pub fn set_acl_request(xid: i32, path: &str) -> Bytes {
    Request::SetAcl(SetACLRequest {
        path: path.into(),
        acl: Some(world_anyone()),
        version: -1,
    })
    .encode(xid)
    .freeze()
}

pub fn create_request(xid: i32, path: &str, data: &[u8]) -> Bytes {
    Request::Create(CreateRequest {
        path: path.into(),
        data: Some(Bytes::copy_from_slice(data)),
        acl: Some(world_anyone()),
        flags: 0,
    })
    .encode(xid)
    .freeze()
}

pub fn close_session_request(xid: i32) -> Bytes {
    Request::CloseSession.encode(xid).freeze()
}
