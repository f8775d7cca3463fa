//! The core as openraft's state machine (`Applier`): committed entries go to the core
//! thread as one batch each; each batch's acknowledgement is awaited before the next batch
//! (or a snapshot) goes, so Raft's `last_applied` runs at most one batch ahead of the core,
//! whose inbox orders every later message (a role change, a snapshot) behind it.

use super::state_machine::{Applier, PendingImage};
use super::types::{NodeId, Proposal};
use crate::seam::{Committed, CommittedBatch, CoreInbox, LogPos};
use bytes::Bytes;
use openraft::{CommittedLeaderId, LogId};
use palisade_proto::Txn;
use std::io;

/// The state machine's applier in a server: the core thread.
pub struct CoreApplier<C: CoreInbox> {
    core: C,
    /// The last batch's acknowledgement, awaited when the next batch goes: by then the core
    /// has nearly always sent it, so the Raft thread is not woken once per batch for it (a
    /// context switch per commit on every member), and a core that failed still stops Raft,
    /// one batch later.
    pending: Option<C::Answer<()>>,
}

impl<C: CoreInbox> CoreApplier<C> {
    pub fn new(core: C) -> Self {
        CoreApplier {
            core,
            pending: None,
        }
    }

    /// Waits for the last batch's acknowledgement.
    async fn settle(&mut self) -> io::Result<()> {
        match self.pending.take() {
            Some(done) => done.await.map_err(|_| core_gone()),
            None => Ok(()),
        }
    }
}

fn core_gone() -> io::Error {
    io::Error::other("the core stopped")
}

impl<C: CoreInbox> Applier for CoreApplier<C> {
    async fn apply(
        &mut self,
        txns: Vec<(LogId<NodeId>, Proposal)>,
        upto: LogId<NodeId>,
    ) -> io::Result<()> {
        // A batch of only blank or membership entries leaves the core where it is (its next
        // snapshot stands at the last txn's entry, as good a point as any after it).
        if txns.is_empty() {
            return Ok(());
        }
        self.settle().await?;
        let mut items = Vec::with_capacity(txns.len());
        let mut log_bytes = 0u64;
        for (log_id, p) in txns {
            log_bytes = log_bytes.saturating_add(p.payload_len() as u64);
            match p {
                Proposal::Key(k) => items.push(Committed::Key(k)),
                Proposal::Digest { zxid, digest } => items.push(Committed::Digest { zxid, digest }),
                Proposal::Txn(bytes) => committed_txn(&mut items, log_id, bytes)?,
                Proposal::Restore(part) => items.push(Committed::Restore {
                    part,
                    term: log_id.leader_id.term,
                }),
                Proposal::Txns(batch) => {
                    for bytes in batch {
                        committed_txn(&mut items, log_id, bytes)?;
                    }
                }
            }
        }
        let batch = CommittedBatch {
            items,
            at: Some(log_pos(upto)),
            log_bytes,
        };
        let done = self.core.committed(batch).await.map_err(|_| core_gone())?;
        self.pending = Some(done);
        Ok(())
    }

    async fn begin_snapshot(&mut self) -> io::Result<PendingImage> {
        self.settle().await?;
        let rx = self.core.image().await.map_err(|_| core_gone())?;
        Ok(Box::pin(async move {
            let (image, at) = rx
                .await
                .map_err(|_| io::Error::other("the core dropped the snapshot capture"))?;
            Ok((image, at.map(log_id)))
        }))
    }

    async fn install(&mut self, image: &[u8], at: Option<LogId<NodeId>>) -> io::Result<()> {
        self.settle().await?;
        let done = self
            .core
            .install(image.to_vec(), at.map(log_pos))
            .await
            .map_err(|_| core_gone())?;
        done.await
            .map_err(|_| core_gone())?
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

/// A committed txn for the core, unless it was prepped in another term than it was logged
/// in: a leader's proposal that reached Raft after it lost that term. Its prep saw an
/// overlay now gone, so every member skips it (the same log, the same decision).
fn committed_txn(
    items: &mut Vec<Committed>,
    log_id: LogId<NodeId>,
    bytes: Bytes,
) -> io::Result<()> {
    if !prepped_in(&bytes, log_id.leader_id.term) {
        tracing::warn!(entry = %log_id, "skipping a txn prepped in another term");
        return Ok(());
    }
    let txn = Txn::decode(bytes, usize::MAX).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("entry {log_id}: undecodable txn: {e}"),
        )
    })?;
    items.push(Committed::Txn(txn));
    Ok(())
}

fn log_pos(l: LogId<NodeId>) -> LogPos {
    LogPos {
        term: l.leader_id.term,
        node: l.leader_id.node_id,
        index: l.index,
    }
}

fn log_id(p: LogPos) -> LogId<NodeId> {
    LogId::new(CommittedLeaderId::new(p.term, p.node), p.index)
}

/// Whether an encoded txn's zxid carries `term` as its epoch (zxid = term << 32 | counter).
fn prepped_in(txn: &Bytes, term: u64) -> bool {
    Txn::peek_header(txn).is_ok_and(|h| (h.zxid >> 32) as u64 == term)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_txn_is_applied_only_in_the_term_it_was_prepped_in() {
        let mut p = crate::prep::Prepper::new(7 << 32, false);
        let txn = p.create_session(1, 4000, 0).encode();
        assert!(prepped_in(&txn, 7));
        assert!(!prepped_in(&txn, 8));
        assert!(!prepped_in(&txn.slice(..10), 7));
    }
}
