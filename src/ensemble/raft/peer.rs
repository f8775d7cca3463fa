//! What a member does with the calls of a peer whose link proved which member it is
//! (`ensemble/link/`): Raft's RPCs go to openraft, forwards and touches to the core, joins to
//! `join.rs`. Before any of it, [`Peer::admit`] looks at the call, so that nothing a peer
//! sends can make this member panic, stop, or hold unbounded memory:
//!
//! - terms are bounded: a vote, append or snapshot whose term is far beyond this member's, or
//!   past what a zxid's epoch can carry, is refused and never saved (one vote of term 2^64-1
//!   once made every member panic at every start: openraft adds one to a term it adopts);
//! - an append's entries follow on from its previous log id, and every txn in them decodes,
//!   is of a known type and was prepped in a term no later than its entry's, its zxids
//!   rising — checked when appended, so that a member never stops at apply because a peer
//!   sent something undecodable;
//! - snapshot chunks come in order (or again, as a retry), from a leader whose vote is
//!   committed and no older than this member's, and add up to at most `PEER_SNAPSHOT_MAX`
//!   (src/limits.rs);
//! - an append that would replace an entry this member holds as committed stops the member,
//!   named (its data dir is not this ensemble's history: `LogView::check_history`);
//! - a leader that a quorum acknowledged within its lease grants no vote (the dissertation's
//!   disruptive-server rule, §4.2.3): openraft 0.9 refuses a vote within the lease of the
//!   vote a *follower* last heard, but a leader's own lease starts at its election only, so a
//!   candidate of a higher term unseated a healthy leader.

use super::network::PeerHandler;
use super::rpc::{JoinReply, PeerRequest};
use super::types::{NodeId, Proposal, TypeConfig};
use crate::limits::{MAX_TXN_BYTES, PEER_MAX_TERM, PEER_SNAPSHOT_MAX, PEER_TERM_STEP};
use crate::seam::{CoreInbox, Forward, Notice, SyncPoint};
use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{EntryPayload, Raft, ServerState, Vote};
use palisade_proto::Txn;
use parking_lot::Mutex;

/// A term a peer's call may carry, given this member's.
pub fn term_ok(term: u64, current: u64) -> Result<(), String> {
    if term > PEER_MAX_TERM {
        return Err(format!(
            "term {term} is past the largest a zxid carries ({PEER_MAX_TERM})"
        ));
    }
    if term > current.saturating_add(PEER_TERM_STEP) {
        return Err(format!("term {term} is far beyond this member's {current}"));
    }
    Ok(())
}

/// An append's entries, checked before they reach the log.
pub fn check_entries(r: &AppendEntriesRequest<TypeConfig>) -> Result<(), String> {
    let term = r.vote.leader_id().term;
    let mut index = r.prev_log_id.map(|l| l.index);
    let mut entry_term = r.prev_log_id.map_or(0, |l| l.leader_id.term);
    let mut last_zxid: Option<i64> = None;
    for e in &r.entries {
        let at = e.log_id;
        // With no previous log id the first entry may be anywhere; after it, none is skipped.
        if index.is_some_and(|i| i.checked_add(1) != Some(at.index)) {
            return Err(format!("entry {at} does not follow {index:?}"));
        }
        if at.leader_id.term > term || at.leader_id.term < entry_term {
            return Err(format!(
                "entry {at}'s term is out of order (leader's {term})"
            ));
        }
        index = Some(at.index);
        entry_term = at.leader_id.term;
        if let EntryPayload::Normal(p) = &e.payload {
            check_proposal(p, at.leader_id.term, &mut last_zxid)
                .map_err(|why| format!("entry {at}: {why}"))?;
        }
    }
    Ok(())
}

fn check_proposal(p: &Proposal, term: u64, last: &mut Option<i64>) -> Result<(), String> {
    let mut one = |bytes: &bytes::Bytes| -> Result<(), String> {
        let txn = Txn::decode(bytes.clone(), MAX_TXN_BYTES as usize)
            .map_err(|e| format!("undecodable txn: {e}"))?;
        let zxid = txn.header.zxid;
        let epoch = zxid >> 32;
        if zxid <= 0 || epoch as u64 > term {
            return Err(format!("txn zxid {zxid:#x} in an entry of term {term}"));
        }
        // Txns of an earlier term are skipped at apply (applier.rs `committed_txn`); those of
        // the entry's term must rise.
        if epoch as u64 == term {
            if last.is_some_and(|l| zxid <= l) {
                return Err(format!("txn zxid {zxid:#x} after {:#x}", last.unwrap_or(0)));
            }
            *last = Some(zxid);
        }
        Ok(())
    };
    match p {
        Proposal::Txn(b) => one(b),
        Proposal::Txns(batch) => batch.iter().try_for_each(one),
        Proposal::Digest { zxid, .. } if *zxid <= 0 => Err(format!("digest at zxid {zxid}")),
        Proposal::Digest { .. } | Proposal::Key(_) => Ok(()),
        Proposal::Restore(r) if r.payload_len() > crate::limits::RESTORE_CHUNK_BYTES + 4096 => {
            Err(format!("restore step of {} bytes", r.payload_len()))
        }
        Proposal::Restore(_) => Ok(()),
    }
}

/// The snapshot being received: its id, the offset of its last chunk and where the next
/// one starts.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Incoming {
    id: String,
    last: u64,
    next: u64,
}

impl Incoming {
    /// Takes a chunk if it starts the snapshot, follows on, or repeats the last one (the
    /// leader retries a chunk whose answer it did not get).
    pub fn take(&mut self, id: &str, offset: u64, len: usize) -> Result<(), String> {
        let len = len as u64;
        let fresh = offset == 0;
        let in_order = id == self.id && (offset == self.next || offset == self.last);
        if !fresh && !in_order {
            return Err(format!(
                "snapshot chunk at {offset} of {id:?} out of order (expected {} of {:?})",
                self.next, self.id
            ));
        }
        let end = offset
            .checked_add(len)
            .filter(|e| *e <= PEER_SNAPSHOT_MAX)
            .ok_or_else(|| format!("a snapshot of more than {PEER_SNAPSHOT_MAX} bytes"))?;
        if fresh && id != self.id {
            self.id = id.to_string();
        }
        self.last = offset;
        self.next = end;
        Ok(())
    }
}

/// What answers the peer port: Raft's RPCs, and on the leader its followers' forwards.
pub struct Peer<C: CoreInbox> {
    pub raft: Raft<TypeConfig>,
    pub core: C,
    pub me: NodeId,
    pub reconfig: bool,
    /// The lease: how long after a quorum acknowledged it a leader refuses votes.
    pub lease_ms: u64,
    pub incoming: Mutex<Incoming>,
    /// For a hand-over this member makes or takes (transfer.rs).
    pub network: super::network::Network,
    pub timing: super::transfer::Timing,
    pub yielding: super::transfer::Yielding,
    /// The log's committed part, which an append must agree with.
    pub log: Option<super::log_store::LogView>,
}

impl<C: CoreInbox> Peer<C> {
    fn current(&self) -> (u64, Vote<NodeId>) {
        let m = self.raft.metrics();
        let m = m.borrow();
        (m.current_term, m.vote)
    }
}

impl<C: CoreInbox> PeerHandler for Peer<C> {
    fn admit(&self, _from: NodeId, req: &PeerRequest) -> Result<(), String> {
        let (term, vote) = self.current();
        match req {
            PeerRequest::Vote(r) => term_ok(r.vote.leader_id().term, term),
            PeerRequest::Append(r) => {
                term_ok(r.vote.leader_id().term, term)?;
                check_entries(r)?;
                // A leader older than this member's vote is refused by openraft on its vote:
                // its log may well differ from what a later leader committed here (a leader
                // cut off, restarted with its vote, once stopped a member that way).
                let current = r.vote >= vote;
                if let (Some(log), true) = (&self.log, current) {
                    let ids = r.entries.iter().map(|e| e.log_id);
                    if let Err(e) = log.check_history(r.vote.leader_id().term, r.prev_log_id, ids) {
                        // Not an input to refuse and retry: this member's history is not the
                        // ensemble's, so it stops, and says so at every start.
                        tracing::error!(error = %e, "this member stops");
                        let _ = self.core.try_tell(Notice::Shutdown);
                        return Err(e);
                    }
                }
                Ok(())
            }
            PeerRequest::Snapshot(r) => {
                term_ok(r.vote.leader_id().term, term)?;
                if !r.vote.is_committed() || r.vote < vote {
                    return Err(format!(
                        "a snapshot from vote {} while this member's is {vote}",
                        r.vote
                    ));
                }
                self.incoming
                    .lock()
                    .take(&r.meta.snapshot_id, r.offset, r.data.len())
            }
            PeerRequest::Forward(_)
            | PeerRequest::Touch(_)
            | PeerRequest::Join { .. }
            | PeerRequest::Elect { .. }
            | PeerRequest::Transfer { .. } => Ok(()),
        }
    }

    async fn append(
        &self,
        from: NodeId,
        r: AppendEntriesRequest<TypeConfig>,
    ) -> Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>> {
        PeerHandler::append(&self.raft, from, r).await
    }

    async fn vote(
        &self,
        from: NodeId,
        r: VoteRequest<NodeId>,
    ) -> Result<VoteResponse<NodeId>, RaftError<NodeId>> {
        let refuse = {
            let m = self.raft.metrics();
            let m = m.borrow();
            (m.state == ServerState::Leader
                && m.millis_since_quorum_ack
                    .is_some_and(|ms| ms <= self.lease_ms))
            .then_some(m.vote)
        };
        if let Some(mine) = refuse {
            tracing::info!(
                candidate = from,
                term = r.vote.leader_id().term,
                "vote refused: a quorum acknowledged this leader within its lease"
            );
            // (A candidate decides on the vote alone; the last log id is left out.)
            return Ok(VoteResponse::new(mine, None, false));
        }
        PeerHandler::vote(&self.raft, from, r).await
    }

    async fn snapshot(
        &self,
        from: NodeId,
        r: InstallSnapshotRequest<TypeConfig>,
    ) -> Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>> {
        PeerHandler::snapshot(&self.raft, from, r).await
    }

    async fn forward(&self, _from: NodeId, ops: Vec<Forward>) -> Option<Vec<SyncPoint>> {
        if self.raft.metrics().borrow().current_leader != Some(self.me) {
            return None;
        }
        let answer = self.core.forwarded(ops).await.ok()?;
        answer.await.ok().flatten()
    }

    async fn touch(&self, _from: NodeId, ids: Vec<(i64, u64)>) {
        let _ = self.core.tell(Notice::Touched(ids)).await;
    }

    async fn join(&self, id: NodeId, addr: String) -> JoinReply {
        super::join::answer_join(&self.raft, self.me, self.reconfig, id, addr).await
    }

    async fn elect(&self, from: NodeId, term: u64) -> bool {
        super::transfer::campaign_when_told(self.raft.clone(), from, term, self.timing)
    }

    /// On the leader: a member asks to lead; the hand-over runs on a task of its own.
    async fn transfer(&self, to: NodeId) -> bool {
        if self.raft.metrics().borrow().current_leader != Some(self.me) || self.yielding.is_set() {
            return false;
        }
        let (raft, network, me, t, y) = (
            self.raft.clone(),
            self.network.clone(),
            self.me,
            self.timing,
            self.yielding.clone(),
        );
        tokio::spawn(async move {
            match super::transfer::hand_over(&raft, &network, me, Some(to), t, &y).await {
                Ok(to) => tracing::info!(to, "leadership handed over, as asked"),
                Err(e) => tracing::warn!(error = %e, "leadership not handed over"),
            }
        });
        true
    }
}

#[cfg(test)]
#[path = "peer_test.rs"]
mod tests;
