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

use super::member::{Forward, Forwarded, Proposed};
use super::restore::RestoreReply;
use super::restore_spool::{Chunked, Spooler};
use super::Core;
use crate::limits::{
    RESTORE_ANSWER, RESTORE_CHUNK_BYTES, RESTORE_ENSEMBLE_MAX_BYTES, RESTORE_IDLE,
};
use crate::seam::{LogPos, RestorePart};
use bytes::Bytes;
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::oneshot;

type ImageReply = oneshot::Sender<(Vec<u8>, Option<LogPos>)>;

/// A member's part in online restores.
#[derive(Default)]
pub(super) struct EnsembleRestore {
    /// What this member applied of a restore in the log.
    spool: Spooler,
    /// Raft snapshot builders waiting for the spool to close.
    deferred: Vec<ImageReply>,
    /// On the leader: the restore whose chunks it proposes.
    upload: Option<Upload>,
    /// The restore an operator posted here.
    origin: Option<Origin>,
}

struct Upload {
    id: u64,
    next: u32,
    len: u64,
    crc: crc32fast::Hasher,
    last: Instant,
    /// The commit is proposed: nothing is prepped until it is applied.
    committing: bool,
}

struct Origin {
    id: u64,
    reply: RestoreReply,
    /// Parts a follower has still to hand to the forwarder (its queue was full, or the
    /// abort after a failed forward).
    unsent: VecDeque<RestorePart>,
    /// Not before this (a failed forward's abort is sent again at most every half second).
    retry_at: Option<Instant>,
    /// A forward failed: the rest is not sent, an abort is.
    aborting: bool,
    deadline: Instant,
}

/// The stream as restore parts: its chunks, then the commit.
fn parts(id: u64, stream: &Bytes, zxid: i64) -> Vec<RestorePart> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut seq = 0u32;
    while at < stream.len() || seq == 0 {
        let end = at.saturating_add(RESTORE_CHUNK_BYTES).min(stream.len());
        out.push(RestorePart::Chunk {
            id,
            seq,
            bytes: stream.slice(at..end),
        });
        at = end;
        seq += 1;
    }
    out.push(RestorePart::Commit {
        id,
        chunks: seq,
        len: stream.len() as u64,
        crc: crc32fast::hash(stream),
        zxid,
    });
    out
}

impl Core {
    /// Whether an ensemble restore keeps this member from serving: one is being spooled, or
    /// proposed by this leader.
    pub(super) fn ensemble_restoring(&self) -> bool {
        self.member
            .as_ref()
            .is_some_and(|m| m.restore.spool.active() || m.restore.upload.is_some())
    }

    /// On the leader between proposing a restore's commit and applying it: nothing is
    /// prepped.
    pub(super) fn restore_committing(&self) -> bool {
        self.member
            .as_ref()
            .is_some_and(|m| m.restore.upload.as_ref().is_some_and(|u| u.committing))
    }

    /// `restore` posted to this member: `stream` (a snapshot stream whose last processed
    /// zxid is `zxid`, checked by the HTTP side) goes to the leader in chunks.
    pub(super) fn begin_ensemble_restore(&mut self, stream: Bytes, zxid: i64, reply: RestoreReply) {
        let Some(m) = self.member.as_ref() else {
            return;
        };
        let leads = m.view.ready && m.view.leader == Some(m.links.myid);
        let refused = if stream.len() > RESTORE_ENSEMBLE_MAX_BYTES {
            Some(format!(
                "the backup ({} bytes) is larger than an ensemble restores online \
                 ({RESTORE_ENSEMBLE_MAX_BYTES}); restore offline (docs/ADMIN.md)",
                stream.len()
            ))
        } else if m.restore.origin.is_some()
            || m.restore.spool.active()
            || m.restore.upload.is_some()
        {
            Some("a restore is in progress".into())
        } else if !leads && (m.view.leader.is_none() || m.view.learner) {
            Some("this member knows no leader to restore through".into())
        } else if !leads && !self.serving() {
            Some("this member is not serving".into())
        } else {
            None
        };
        if let Some(why) = refused {
            let _ = reply.send(Err(why));
            return;
        }
        let mut id = [0u8; 8];
        if getrandom::fill(&mut id).is_err() {
            let _ = reply.send(Err("no random restore id".into()));
            return;
        }
        let id = u64::from_le_bytes(id) | 1;
        let all = parts(id, &stream, zxid);
        tracing::warn!(
            id = format_args!("{id:#x}"),
            bytes = stream.len(),
            chunks = all.len() - 1,
            backup = format_args!("{zxid:#x}"),
            "restore: sending the backup through the Raft log; every member will replace its state"
        );
        let Some(m) = self.member.as_mut() else {
            return;
        };
        m.restore.origin = Some(Origin {
            id,
            reply,
            unsent: if leads {
                VecDeque::new()
            } else {
                all.clone().into()
            },
            retry_at: None,
            aborting: false,
            deadline: self.now.mono + RESTORE_ANSWER,
        });
        if leads {
            for p in all {
                self.lead_restore_part(p);
            }
        } else {
            self.send_restore_parts();
        }
    }

    /// A follower's origin: hands its parts to the forwarder, one call each, as room allows
    /// (the rest at a later turn).
    fn send_restore_parts(&mut self) {
        let Some(m) = self.member.as_mut() else {
            return;
        };
        if m.view.ready && m.view.leader == Some(m.links.myid) {
            // Elected since (its leader gone): it proposes what is left itself.
            let left: Vec<RestorePart> = m
                .restore
                .origin
                .as_mut()
                .map(|o| o.unsent.drain(..).collect())
                .unwrap_or_default();
            for p in left {
                self.lead_restore_part(p);
            }
            return;
        }
        let Some(o) = m.restore.origin.as_mut() else {
            return;
        };
        while let Some(p) = o.unsent.pop_front() {
            let cxid = match &p {
                RestorePart::Chunk { seq, .. } => *seq as i32,
                _ => -1,
            };
            let f = Forward {
                session: 0,
                cxid,
                what: Forwarded::Restore(p),
                auth: Vec::new(),
            };
            let msg = super::member::ToLeader::Forward(vec![f]);
            match m.links.to_leader.try_send(msg) {
                Ok(()) => {}
                Err(TrySendError::Full(super::member::ToLeader::Forward(mut back))) => {
                    if let Some(Forwarded::Restore(p)) = back.pop().map(|f| f.what) {
                        o.unsent.push_front(p);
                    }
                    return;
                }
                Err(_) => {
                    o.unsent.clear();
                    return;
                }
            }
        }
    }

    /// On a follower: a forward of the restore did not reach the leader (it changed, or the
    /// link failed). The rest is not sent; an abort is, to whichever member leads, until
    /// it is applied here (the leader proposes it whether or not it got any chunk, so the
    /// operator learns the outcome without waiting out a deadline); whichever of the
    /// restore's commit and abort is applied first is the answer.
    pub(super) fn restore_forward_failed(&mut self) {
        let Some(o) = self.member.as_mut().and_then(|m| m.restore.origin.as_mut()) else {
            return;
        };
        if !o.aborting {
            tracing::warn!(
                id = format_args!("{:#x}", o.id),
                "restore: a part of the backup did not reach the leader; the restore is given up"
            );
            o.aborting = true;
        }
        o.unsent.clear();
        o.unsent.push_back(RestorePart::Abort {
            id: o.id,
            why: "a part of the backup did not reach the leader".into(),
        });
        let now = self.now.mono;
        o.retry_at = Some(now + std::time::Duration::from_millis(500));
        o.deadline = o.deadline.min(now + 2 * RESTORE_IDLE);
    }

    /// On the leader: a part of a restore (its own operator's, or a follower's forwarded),
    /// proposed, or an abort in its place.
    pub(super) fn lead_restore_part(&mut self, part: RestorePart) {
        let Some(m) = self.member.as_mut() else {
            return;
        };
        let term = m.view.term;
        let id = part.id();
        let busy = m.restore.spool.id().is_some_and(|s| s != id);
        let proposed = match (&mut m.restore.upload, part) {
            (None, RestorePart::Chunk { seq: 0, bytes, .. }) if !busy => {
                let mut crc = crc32fast::Hasher::new();
                crc.update(&bytes);
                m.restore.upload = Some(Upload {
                    id,
                    next: 1,
                    len: bytes.len() as u64,
                    crc,
                    last: self.now.mono,
                    committing: false,
                });
                Ok(RestorePart::Chunk { id, seq: 0, bytes })
            }
            (Some(u), RestorePart::Chunk { seq, bytes, .. }) if u.id == id && u.next == seq => {
                u.next = seq.saturating_add(1);
                u.len = u.len.saturating_add(bytes.len() as u64);
                u.crc.update(&bytes);
                u.last = self.now.mono;
                Ok(RestorePart::Chunk { id, seq, bytes })
            }
            (
                Some(u),
                RestorePart::Commit {
                    chunks,
                    len,
                    crc,
                    zxid,
                    ..
                },
            ) if u.id == id => {
                let whole = (u.next, u.len, u.crc.clone().finalize());
                if whole != (chunks, len, crc) {
                    Err("the backup reached the leader damaged".to_string())
                } else if (zxid >> 32) as u64 > term {
                    Err(format!(
                        "the backup's zxid {zxid:#x} is from an epoch past this ensemble's \
                         term {term}: restore it offline (docs/ADMIN.md)"
                    ))
                } else {
                    u.committing = true;
                    Ok(RestorePart::Commit {
                        id,
                        chunks,
                        len,
                        crc,
                        zxid,
                    })
                }
            }
            (_, RestorePart::Abort { why, .. }) => Err(why),
            (Some(u), _) if u.id == id => {
                Err("the backup's chunks reached the leader out of order".into())
            }
            (Some(_), _) | (None, RestorePart::Chunk { seq: 0, .. }) => {
                Err("another restore is in progress".into())
            }
            (None, _) => Err(
                "the restore was given up, or its first chunk did not reach \
                              this leader"
                    .into(),
            ),
        };
        let part = match proposed {
            Ok(p) => p,
            Err(why) => {
                if m.restore.upload.as_ref().is_some_and(|u| u.id == id) {
                    m.restore.upload = None;
                }
                tracing::warn!(
                    id = format_args!("{id:#x}"),
                    why,
                    "restore: aborted by the leader"
                );
                RestorePart::Abort { id, why }
            }
        };
        if matches!(part, RestorePart::Chunk { seq: 1.., .. }) {
            crate::durability::crashpoint::hit("restore.proposing");
        }
        let first = matches!(part, RestorePart::Chunk { seq: 0, .. });
        let _ = m.links.propose.send(vec![Proposed::Restore(part)]);
        if first {
            self.drop_clients_for_restore();
        }
    }

    /// Closes every client connection: a restore is coming.
    fn drop_clients_for_restore(&mut self) {
        let conns: Vec<_> = self.conns.keys().copied().collect();
        for c in conns {
            self.drop_conn(c, true);
        }
    }

    /// A committed restore step, in log order (every member).
    pub(super) fn restore_committed(&mut self, part: RestorePart, term: u64) {
        let Some(m) = self.member.as_mut() else {
            return;
        };
        let id = part.id();
        // The leader's part in this restore ends at its commit or abort, whatever they do
        // here (a stale commit too: its spool was dropped).
        let ends = !matches!(part, RestorePart::Chunk { .. });
        if ends && m.restore.upload.as_ref().is_some_and(|u| u.id == id) {
            m.restore.upload = None;
        }
        let outcome: Option<Result<i64, String>> = match part {
            RestorePart::Chunk { seq, bytes, .. } => match m.restore.spool.chunk(id, seq, &bytes) {
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
                    if let Some(m) = self.member.as_mut() {
                        if let Some(c) = m.capture.take() {
                            m.restore.deferred.extend(c.take_waiting());
                        }
                    }
                    None
                }
                Chunked::Appended => {
                    crate::durability::crashpoint::hit("restore.spooling");
                    None
                }
                Chunked::Stale => None,
                Chunked::Broken(why) => Some(Err(why)),
            },
            RestorePart::Commit {
                chunks,
                len,
                crc,
                zxid,
                ..
            } => match m.restore.spool.commit(id, chunks, len, crc) {
                None => None,
                Some(Err(why)) => Some(Err(why)),
                Some(Ok(stream)) => Some(self.restore_swap_in(stream, zxid, term)),
            },
            RestorePart::Abort { why, .. } => {
                if m.restore.spool.abort(id) {
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
            if let Some(m) = self.member.as_mut() {
                if m.restore.spool.id() == Some(id) {
                    m.restore.spool.clear();
                }
            }
        }
        if let Some(m) = self.member.as_mut() {
            // A broken spool: the leader proposes no more of it (its commit would be stale).
            if m.restore.upload.as_ref().is_some_and(|u| u.id == id) {
                m.restore.upload = None;
            }
        }
        self.restore_answer(id, outcome);
        self.restore_closed();
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
        self.pending = super::pending::PendingWrites::default();
        self.inflight.clear();
        self.drop_clients_for_restore();
        self.restore_swap(restored);
        self.reload_config();
        if let Some(m) = self.member.as_mut() {
            // The log holds the whole backup until the next snapshot: ask for one.
            let _ = m.links.snapshot.try_send(());
        }
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
        let Some(m) = self.member.as_mut() else {
            return;
        };
        if m.restore.origin.as_ref().is_some_and(|o| o.id == id) {
            if let Some(o) = m.restore.origin.take() {
                let _ = o.reply.send(outcome);
            }
        }
    }

    /// The spool closed (outcome, or install): the snapshot builders that waited capture now.
    fn restore_closed(&mut self) {
        let Some(m) = self.member.as_mut() else {
            return;
        };
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
    pub(super) fn defer_raft_snapshot(&mut self, reply: ImageReply) -> Option<ImageReply> {
        match self.member.as_mut() {
            Some(m) if m.restore.spool.active() => {
                m.restore.deferred.push(reply);
                None
            }
            _ => Some(reply),
        }
    }

    /// A Raft snapshot replaced the state: nothing spooled stands (the snapshot was taken
    /// before the restore's first chunk or after its outcome).
    pub(super) fn restore_installed(&mut self) {
        let Some(m) = self.member.as_mut() else {
            return;
        };
        m.restore.spool.clear();
        m.restore.upload = None;
        if let Some(o) = m.restore.origin.take() {
            let _ = o
                .reply
                .send(Err("this member installed a Raft snapshot during the \
                                      restore: compare the members' state to see whether it \
                                      was restored"
                    .into()));
        }
        self.restore_closed();
    }

    /// The leader changed: this member no longer proposes a restore; a new ready leader
    /// aborts the one its predecessor left half-spooled.
    pub(super) fn restore_leader_changed(&mut self, leads: bool) {
        let Some(m) = self.member.as_mut() else {
            return;
        };
        m.restore.upload = None;
        if leads {
            if let Some(id) = m.restore.spool.id() {
                let why = "the leader changed during the restore".to_string();
                tracing::warn!(
                    id = format_args!("{id:#x}"),
                    "restore: the leader changed during the restore; aborting it"
                );
                let _ = m
                    .links
                    .propose
                    .send(vec![Proposed::Restore(RestorePart::Abort { id, why })]);
            }
        }
    }

    /// Each turn: a follower's origin sends what it could not yet; the leader aborts a
    /// restore whose chunks stopped coming; the operator waits no longer than its deadline.
    pub(super) fn ensemble_restore_step(&mut self) {
        let Some(m) = self.member.as_mut() else {
            return;
        };
        let now = self.now.mono;
        let idle = m
            .restore
            .upload
            .as_ref()
            .filter(|u| !u.committing && now.duration_since(u.last) > RESTORE_IDLE)
            .map(|u| u.id);
        if let Some(id) = idle {
            self.lead_restore_part(RestorePart::Abort {
                id,
                why: "the backup's chunks stopped coming".into(),
            });
        }
        let Some(m) = self.member.as_mut() else {
            return;
        };
        if m.restore.origin.as_ref().is_some_and(|o| o.deadline <= now) {
            if let Some(o) = m.restore.origin.take() {
                tracing::warn!(
                    id = format_args!("{:#x}", o.id),
                    "restore: no outcome applied here in time; answering the operator"
                );
                let _ = o
                    .reply
                    .send(Err("the restore's outcome did not reach this member in \
                                          time: it was not restored, unless the members' \
                                          state shows it was"
                        .into()));
            }
            return;
        }
        let due = |o: &Origin| !o.unsent.is_empty() && o.retry_at.is_none_or(|t| t <= now);
        if m.restore.origin.as_ref().is_some_and(due) {
            self.send_restore_parts();
        }
    }
}

#[cfg(test)]
#[path = "ensemble_restore_test.rs"]
mod apply_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_cut_into_bounded_chunks_and_ends_with_its_commit() {
        let stream = Bytes::from(vec![5u8; RESTORE_CHUNK_BYTES * 2 + 3]);
        let p = parts(9, &stream, 0x1_0000_0007);
        assert_eq!(p.len(), 4);
        let mut joined = Vec::new();
        for (i, part) in p[..3].iter().enumerate() {
            let RestorePart::Chunk { id, seq, bytes } = part else {
                panic!("chunk {i} is not a chunk")
            };
            assert_eq!((*id, *seq as usize), (9, i));
            assert!(bytes.len() <= RESTORE_CHUNK_BYTES);
            joined.extend_from_slice(bytes);
        }
        assert_eq!(joined, stream);
        assert_eq!(
            p[3],
            RestorePart::Commit {
                id: 9,
                chunks: 3,
                len: stream.len() as u64,
                crc: crc32fast::hash(&stream),
                zxid: 0x1_0000_0007
            }
        );
        // an empty stream still has its first chunk, which starts the restore everywhere
        assert_eq!(parts(1, &Bytes::new(), 0).len(), 2);
    }
}
