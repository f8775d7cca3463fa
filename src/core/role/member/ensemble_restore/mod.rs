//! A backup restored online into a running ensemble (the AdminServer's `restore` posted to
//! any member), through the Raft log, so that every member ends with the same state: the
//! one that was down and catches up by log or by Raft snapshot, and the one that crashed in
//! the middle and replays its log, too.
//!
//! - **Origin.** The member the operator posted to cuts the stream into chunks of
//!   `RESTORE_CHUNK_BYTES` (limits.rs) and ends it with a commit step (chunk count, length,
//!   CRC-32, the stream's last processed zxid). A follower forwards them to the leader as it
//!   forwards writes; the leader takes its own. The operator is answered when the member
//!   applies the restore's commit (with the restored zxid) or its abort (with why), or after
//!   `RESTORE_ANSWER` at the latest.
//! - **Leader.** It proposes each chunk as an entry of its own, in order, then the commit;
//!   between proposing the commit and applying it, it preps nothing (a txn prepped before
//!   the swap must not be logged after it: its zxid would be behind the restored state's).
//!   A restore that stops coming (`RESTORE_IDLE`), a second one, a chunk out of order or a
//!   backup from an epoch past the leader's term get an abort entry instead. A new leader
//!   aborts a restore its predecessor left half-spooled.
//! - **Every member**, applying the entries: from the first chunk on, it closes every client
//!   connection and refuses new ones (as the standalone restore), and nothing expires or is
//!   reaped; the chunks go to its spool (restore_spool.rs) in memory; at the commit it
//!   decodes the stream and swaps it in as the standalone restore does (state/restore.rs:
//!   the larger count of child creations, zxids past both the live state's and the
//!   backup's, within the commit's term), keeping the ensemble's configuration node, then
//!   serves again. Sessions are the backup's, each with a full timeout from the swap; the
//!   others are gone, as on a standalone server. A Raft snapshot is not taken while a
//!   restore is half-spooled: its builder waits for the commit or abort, so no snapshot (and
//!   no log purge up to one) ever cuts a restore's chunks in two, and a member that installs
//!   one gets a state before the first chunk or after the outcome.
//!
//! Owns: a restore's progress on this member (origin, leader, spool). May not touch: the
//! backup's files (the AdminServer hands the stream in), the Raft log (its chunks go out as
//! proposals), the tree other than through the state's restore swap.

mod origin;
mod upload;

use crate::core::restore_spool::{Chunked, Spooler};
use crate::core::token::Token;
use crate::core::Core;
use crate::seam::{LogPos, RestorePart};
use bytes::Bytes;

type ImageReply = Token<(Vec<u8>, Option<LogPos>)>;

/// A member's part in online restores.
#[derive(Default)]
pub(in crate::core) struct EnsembleRestore {
    /// What this member applied of a restore in the log.
    spool: Spooler,
    /// Raft snapshot builders waiting for the spool to close.
    deferred: Vec<ImageReply>,
    /// On the leader: the restore whose chunks it proposes (upload.rs).
    upload: Option<upload::Upload>,
    /// The restore an operator posted here (origin.rs).
    origin: Option<origin::Origin>,
}

impl EnsembleRestore {
    /// Whether a restore keeps this member from serving: one is being spooled, or proposed
    /// by this leader.
    pub(in crate::core) fn keeps_from_serving(&self) -> bool {
        self.spool.active() || self.upload.is_some()
    }
}

impl Core {
    /// Closes every client connection: a restore is coming.
    fn drop_clients_for_restore(&mut self) {
        let conns: Vec<_> = self.conns.keys().copied().collect();
        for c in conns {
            self.drop_conn(c, true);
        }
    }

    /// A committed restore step, in log order (every member).
    pub(in crate::core) fn restore_committed(&mut self, part: RestorePart, term: u64) {
        let m = self.role.member_mut();
        let id = part.id();
        // The leader's part in this restore ends at its commit or abort, whatever they do
        // here (a stale commit too: its spool was dropped).
        let ends = !matches!(part, RestorePart::Chunk { .. });
        if ends && m.restore.upload.as_ref().is_some_and(|u| u.id == id) {
            m.restore.upload = None;
        }
        let outcome: Option<Result<i64, String>> = match part {
            RestorePart::Chunk { seq, bytes, .. } => self.restore_chunk(id, seq, &bytes),
            RestorePart::Commit {
                chunks,
                len,
                crc,
                zxid,
                ..
            } => match self
                .role
                .member_mut()
                .restore
                .spool
                .commit(id, chunks, len, crc)
            {
                None => None,
                Some(Err(why)) => Some(Err(why)),
                Some(Ok(stream)) => Some(self.restore_swap_in(stream, zxid, term)),
            },
            RestorePart::Abort { why, .. } => {
                if self.role.member_mut().restore.spool.abort(id) {
                    tracing::warn!(
                        id = format_args!("{id:#x}"),
                        why,
                        "restore: aborted; the live state stays"
                    );
                    Some(Err(why))
                } else {
                    // Nothing of it spooled here (done, dropped, or never started): only its
                    // operator, if waiting here, is told.
                    self.restore_answer(id, Err(why));
                    None
                }
            }
        };
        let Some(outcome) = outcome else {
            return;
        };
        if let Err(why) = &outcome {
            tracing::error!(
                id = format_args!("{id:#x}"),
                why,
                "restore: not restored; the live state stays"
            );
            let spool = &mut self.role.member_mut().restore.spool;
            if spool.id() == Some(id) {
                spool.clear();
            }
        }
        // A broken spool: the leader proposes no more of it (its commit would be stale).
        let r = &mut self.role.member_mut().restore;
        if r.upload.as_ref().is_some_and(|u| u.id == id) {
            r.upload = None;
        }
        self.restore_answer(id, outcome);
        self.restore_closed();
    }

    /// A committed chunk of restore `id`, spooled; its outcome if it ends the restore here.
    fn restore_chunk(&mut self, id: u64, seq: u32, bytes: &[u8]) -> Option<Result<i64, String>> {
        match self.role.member_mut().restore.spool.chunk(id, seq, bytes) {
            Chunked::Started { dropped } => {
                if let Some(d) = dropped {
                    tracing::warn!(
                        id = format_args!("{d:#x}"),
                        "restore: a half-spooled restore was dropped for a newer one"
                    );
                    self.restore_answer(d, Err("a newer restore replaced it".into()));
                }
                tracing::warn!(
                    id = format_args!("{id:#x}"),
                    "restore: a backup is coming through the log; closing every client \
                     connection until it is restored"
                );
                self.drop_clients_for_restore();
                // A capture in progress would end past this chunk without the spool:
                // its builders wait for the outcome, and capture then.
                let m = self.role.member_mut();
                if let Some(c) = m.snapshots.capture.take() {
                    m.restore.deferred.extend(c.take_waiting());
                }
                None
            }
            Chunked::Appended => {
                crate::durability::crashpoint::hit("restore.spooling");
                None
            }
            Chunked::Stale => None,
            Chunked::Broken(why) => Some(Err(why)),
        }
    }

    /// The committed stream in place of the live state (every member alike: the same log,
    /// the same state before it, the same outcome).
    fn restore_swap_in(&mut self, stream: Vec<u8>, zxid: i64, term: u64) -> Result<i64, String> {
        let backup = (self.cfg.restore_reader)(Bytes::from(stream), zxid)?;
        let base = ((term.min(i32::MAX as u64) as i64) << 32).max(self.state.zxid());
        let at = base.max(backup.zxid()).saturating_add(1);
        if (at >> 32) as u64 != term {
            return Err(format!(
                "the backup's zxid {:#x} leaves no room in this term's epoch ({term})",
                backup.zxid()
            ));
        }
        let mut restored = backup.restored_over(&self.state, at);
        restored.keep_ensemble_config(&self.state);
        self.pending = Default::default();
        self.inflight.clear();
        self.drop_clients_for_restore();
        self.restore_swap(restored);
        self.reload_config();
        // The log holds the whole backup until the next snapshot: ask for one.
        let outbox = &mut self.outbox;
        self.role.member().links.ask_snapshot(outbox);
        tracing::warn!(
            zxid = format_args!("{at:#x}"),
            znodes = self.state.tree.znode_count(),
            sessions = self.state.sessions().len(),
            "restore: done; serving the backup's state"
        );
        Ok(at)
    }

    /// Answers the operator of restore `id`, if it was posted here.
    fn restore_answer(&mut self, id: u64, outcome: Result<i64, String>) {
        let m = self.role.member_mut();
        if m.restore.origin.as_ref().is_some_and(|o| o.id == id) {
            if let Some(o) = m.restore.origin.take() {
                self.outbox.answer(o.reply, outcome);
            }
        }
    }

    /// The spool closed (outcome, or install): the snapshot builders that waited capture now.
    fn restore_closed(&mut self) {
        let m = self.role.member_mut();
        if m.restore.spool.active() {
            return;
        }
        let waiting = std::mem::take(&mut m.restore.deferred);
        for r in waiting {
            self.raft_snapshot(r);
        }
    }

    /// A Raft snapshot asked for while a restore is half-spooled waits for its outcome
    /// (None: it waits); else the reply is given back to capture now.
    pub(in crate::core) fn defer_raft_snapshot(&mut self, reply: ImageReply) -> Option<ImageReply> {
        let r = &mut self.role.member_mut().restore;
        if r.spool.active() {
            r.deferred.push(reply);
            return None;
        }
        Some(reply)
    }

    /// A Raft snapshot replaced the state: nothing spooled stands (the snapshot was taken
    /// before the restore's first chunk or after its outcome).
    pub(in crate::core) fn restore_installed(&mut self) {
        let m = self.role.member_mut();
        m.restore.spool.clear();
        m.restore.upload = None;
        if let Some(o) = m.restore.origin.take() {
            let why = "this member installed a Raft snapshot during the restore: compare the \
                       members' state to see whether it was restored";
            self.outbox.answer(o.reply, Err(why.into()));
        }
        self.restore_closed();
    }

    /// Each turn: the leader aborts a restore whose chunks stopped coming (upload.rs); the
    /// restore posted here meets its deadline or sends what it could not yet (origin.rs).
    pub(in crate::core) fn ensemble_restore_step(&mut self) {
        self.abort_idle_upload();
        self.origin_step();
    }
}

#[cfg(test)]
#[path = "ensemble_restore_test.rs"]
mod apply_tests;
