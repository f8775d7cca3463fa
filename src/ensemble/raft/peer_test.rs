//! The checks a member runs on a proven peer's calls before they reach openraft.

use super::*;
use crate::ensemble::raft::rpc::vote_ok;
use openraft::{CommittedLeaderId, Entry, LogId};
use palisade_proto::OpCode;

fn txn_bytes(zxid: i64, op: OpCode) -> bytes::Bytes {
    let mut p = crate::prep::Prepper::new(zxid - 1, false);
    let mut t = p.create_session(1, 4000, 0);
    t.header.zxid = zxid;
    t.header.type_ = op as i32;
    t.encode()
}

fn entry(term: u64, index: u64, p: Proposal) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
        payload: EntryPayload::Normal(p),
    }
}

fn append(
    term: u64,
    prev: Option<(u64, u64)>,
    entries: Vec<Entry<TypeConfig>>,
) -> AppendEntriesRequest<TypeConfig> {
    AppendEntriesRequest {
        vote: Vote::new_committed(term, 1),
        prev_log_id: prev.map(|(t, i)| LogId::new(CommittedLeaderId::new(t, 1), i)),
        entries,
        leader_commit: None,
    }
}

#[test]
fn terms_past_a_zxids_epoch_or_far_beyond_are_refused() {
    assert!(term_ok(5, 3).is_ok());
    assert!(term_ok(3 + PEER_TERM_STEP, 3).is_ok());
    assert!(term_ok(4 + PEER_TERM_STEP, 3).is_err());
    assert!(
        term_ok(u64::MAX, u64::MAX).is_err(),
        "the term-overflow attack"
    );
    assert!(term_ok(PEER_MAX_TERM + 1, PEER_MAX_TERM).is_err());
    assert!(vote_ok(&Vote::new(PEER_MAX_TERM, 1)));
    assert!(!vote_ok(&Vote::new(u64::MAX, 1)));
}

/// Entries of term 7 from index 11, after (7, 10), from a leader of term 7.
fn from_11(proposals: Vec<Proposal>) -> AppendEntriesRequest<TypeConfig> {
    let entries = (11..).zip(proposals).map(|(i, p)| entry(7, i, p)).collect();
    append(7, Some((7, 10)), entries)
}

/// A createSession txn of `zxid`.
fn txn(zxid: i64) -> Proposal {
    Proposal::Txn(txn_bytes(zxid, OpCode::CreateSession))
}

/// A zxid of term 7.
fn z(counter: i64) -> i64 {
    (7i64 << 32) | counter
}

#[test]
fn entries_in_order_are_taken_when_appended() {
    let batch = vec![
        txn_bytes(z(2), OpCode::CreateSession),
        txn_bytes(z(3), OpCode::CreateSession),
    ];
    let digest = Proposal::Digest {
        zxid: z(3),
        digest: 1,
    };
    let ok = from_11(vec![txn(z(1)), Proposal::Txns(batch), digest]);
    assert_eq!(check_entries(&ok), Ok(()));
    // A txn of an earlier term is fine (skipped at apply), and does not count for the order.
    let older = from_11(vec![txn(z(5)), txn((6i64 << 32) | 9), txn(z(6))]);
    assert_eq!(check_entries(&older), Ok(()));
}

#[test]
fn entries_are_checked_when_appended() {
    // A txn of an unknown type (it stopped a follower at apply).
    let unknown = from_11(vec![Proposal::Txn(txn_bytes(z(1), OpCode::GetData))]);
    assert!(check_entries(&unknown).unwrap_err().contains("undecodable"));
    // Bytes that are no txn at all.
    let junk = from_11(vec![Proposal::Txn(bytes::Bytes::from_static(
        b"\x00\x01junk",
    ))]);
    assert!(check_entries(&junk).is_err());
    // zxids going back within the leader's term.
    let back = from_11(vec![txn(z(5)), txn(z(4))]);
    assert!(check_entries(&back).unwrap_err().contains("after"));
    // A txn prepped in a later term than its entry's.
    let later = from_11(vec![txn((8i64 << 32) | 1)]);
    assert!(check_entries(&later).is_err());
    // Entries that skip an index, or whose terms run backwards or past the leader's.
    let gap = append(7, Some((7, 10)), vec![entry(7, 12, Proposal::Key([0; 16]))]);
    assert!(check_entries(&gap).is_err());
    let ahead = append(7, Some((7, 10)), vec![entry(8, 11, Proposal::Key([0; 16]))]);
    assert!(check_entries(&ahead).is_err());
    let behind = append(7, Some((7, 10)), vec![entry(6, 11, Proposal::Key([0; 16]))]);
    assert!(check_entries(&behind).is_err());
}

/// The install-snapshot attack: a chunk at offset 2^40 grew a follower by 300 MB/s.
#[test]
fn snapshot_chunks_come_in_order_or_as_a_retry_and_within_the_bound() {
    let mut i = Incoming::default();
    assert!(i.take("s1", 1 << 40, 10).is_err(), "a chunk far ahead");
    assert_eq!(i, Incoming::default());
    i.take("s1", 0, 100).unwrap();
    i.take("s1", 100, 100).unwrap();
    i.take("s1", 100, 100).unwrap(); // the leader retries the last chunk
    i.take("s1", 200, 50).unwrap();
    assert!(i.take("s1", 400, 10).is_err(), "a gap");
    assert!(i.take("s2", 250, 10).is_err(), "another snapshot's middle");
    i.take("s2", 0, 10).unwrap(); // another snapshot starts over
    assert!(
        i.take("s2", 10, (PEER_SNAPSHOT_MAX) as usize).is_err(),
        "past the bound"
    );
}
