//! Recovery after a permanent loss of the quorum (etcd's `--force-new-cluster`, ClickHouse
//! Keeper's `rcvr`): an explicit operator action on one surviving member makes it a
//! one-member ensemble with its state and a new term. The ensemble then grows back by
//! `reconfig -add` or by starting new members that join (reconfigEnabled).
//!
//! Before Raft starts, the member's log gets one more entry: a membership of itself alone, in
//! a term past every term its log or its vote holds, and its vote moves to that term
//! (uncommitted: it must still win an election, which a lone voter does at once). openraft
//! takes the last membership in the log as the effective one, so the member is the only voter;
//! once it leads, it commits that entry, and everything in its log before it, alone.
//!
//! The risk, stated wherever this is offered: writes acknowledged by a quorum that did not
//! include this member are gone, and writes this member logged but never saw committed are
//! committed now. The other members, if any come back, must not rejoin with their old data
//! dirs (their logs diverge from this one): they start empty and join.

use super::log_store::LogStore;
use super::types::{NodeId, TypeConfig};
use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::{BasicNode, CommittedLeaderId, Entry, EntryPayload, LogId, Membership, Vote};
use std::collections::{BTreeMap, BTreeSet};
use std::io;

/// What the operator asks for on the command line (main.rs): the flag, in so many words.
pub const FLAG: &str = "--force-new-ensemble";

/// Rewrites the membership in `log` to `me` alone (at `addr`), in a new term. Returns the
/// term.
pub async fn force_new_ensemble(log: &mut LogStore, me: NodeId, addr: &str) -> io::Result<u64> {
    let state = log.get_log_state().await.map_err(io::Error::other)?;
    let last = state.last_log_id.ok_or_else(|| {
        io::Error::other(format!(
            "{FLAG}: this member's Raft log is empty: there is nothing to recover from \
             (start it without {FLAG} to join an ensemble)"
        ))
    })?;
    let voted = log
        .read_vote()
        .await
        .map_err(io::Error::other)?
        .map_or(0, |v| v.leader_id().term);
    let term = last
        .leader_id
        .term
        .max(voted)
        .checked_add(1)
        .filter(|t| *t <= crate::limits::PEER_MAX_TERM)
        .ok_or_else(|| {
            io::Error::other(format!("{FLAG}: no term left past {}", last.leader_id.term))
        })?;
    let index = last
        .index
        .checked_add(1)
        .ok_or_else(|| io::Error::other(format!("{FLAG}: the log is full")))?;
    let alone = Membership::new(
        vec![BTreeSet::from([me])],
        BTreeMap::from([(me, BasicNode::new(addr))]),
    );
    let entry: Entry<TypeConfig> = Entry {
        log_id: LogId::new(CommittedLeaderId::new(term, me), index),
        payload: EntryPayload::Membership(alone),
    };
    log.save_vote(&Vote::new(term, me))
        .await
        .map_err(io::Error::other)?;
    log.blocking_append([entry])
        .await
        .map_err(io::Error::other)?;
    tracing::error!(
        member = me,
        term,
        from_index = index,
        "{FLAG}: THIS MEMBER IS NOW AN ENSEMBLE OF ONE, with its own log as the history. Writes \
         acknowledged by a quorum that did not include it are lost; writes it logged and never \
         saw committed are committed now. Other members must not rejoin with their old data \
         dirs: start them empty (reconfigEnabled=true) and add them back with reconfig"
    );
    Ok(term)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ensemble::raft::types::Proposal;
    use openraft::RaftLogReader;

    fn entry(term: u64, index: u64) -> Entry<TypeConfig> {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
            payload: EntryPayload::Normal(Proposal::Key([0; 16])),
        }
    }

    #[tokio::test]
    async fn the_log_gets_a_membership_of_this_member_alone_in_a_new_term() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = LogStore::open(dir.path(), 1 << 20).unwrap();
        let e = force_new_ensemble(&mut log, 2, "127.0.0.1:1")
            .await
            .unwrap_err();
        assert!(e.to_string().contains("nothing to recover"), "{e}");
        log.blocking_append((1..=5).map(|i| entry(3, i)))
            .await
            .unwrap();
        log.save_vote(&Vote::new_committed(4, 1)).await.unwrap();
        assert_eq!(
            force_new_ensemble(&mut log, 2, "127.0.0.1:1")
                .await
                .unwrap(),
            5
        );
        drop(log);
        let mut log = LogStore::open(dir.path(), 1 << 20).unwrap();
        let state = log.get_log_state().await.unwrap();
        assert_eq!(
            state.last_log_id,
            Some(LogId::new(CommittedLeaderId::new(5, 2), 6))
        );
        assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(5, 2)));
        let got = log.try_get_log_entries(6..7).await.unwrap();
        let EntryPayload::Membership(m) = &got[0].payload else {
            panic!("not a membership entry: {:?}", got[0].payload)
        };
        assert_eq!(m.voter_ids().collect::<Vec<_>>(), [2]);
    }
}
