//! An online restore's origin: the member the operator posted the backup to. It cuts the
//! stream into chunks and a commit step; a follower forwards them to the leader as it
//! forwards writes (as room allows, the rest at a later turn), the leader takes its own
//! (upload.rs). The operator is answered when the outcome is applied here (mod.rs), or at
//! the deadline.

use crate::core::restore::RestoreReply;
use crate::core::role::member::links::Handed;
use crate::core::role::member::{Forward, Forwarded};
use crate::core::Core;
use crate::limits::{
    RESTORE_ABORT_RETRY, RESTORE_ANSWER, RESTORE_CHUNK_BYTES, RESTORE_ENSEMBLE_MAX_BYTES,
    RESTORE_IDLE,
};
use crate::seam::RestorePart;
use bytes::Bytes;
use std::collections::VecDeque;
use std::time::Instant;

/// The restore an operator posted to this member.
pub(super) struct Origin {
    pub(super) id: u64,
    pub(super) reply: RestoreReply,
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
    /// `restore` posted to this member: `stream` (a snapshot stream whose last processed
    /// zxid is `zxid`, checked by the HTTP side) goes to the leader in chunks.
    pub(in crate::core) fn begin_ensemble_restore(
        &mut self,
        stream: Bytes,
        zxid: i64,
        reply: RestoreReply,
    ) {
        let m = self.role.member();
        let leads = m.seat.leading().is_some() && m.view.leader == Some(m.me());
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
        } else if !leads && !m.serving() {
            Some("this member is not serving".into())
        } else {
            None
        };
        if let Some(why) = refused {
            self.outbox.answer(reply, Err(why));
            return;
        }
        let mut id = [0u8; 8];
        if getrandom::fill(&mut id).is_err() {
            self.outbox
                .answer(reply, Err("no random restore id".into()));
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
        let m = self.role.member_mut();
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
        let m = self.role.member_mut();
        if m.seat.leading().is_some() && m.view.leader == Some(m.me()) {
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
            match m.links.hand_forwards(&mut self.outbox, vec![f]) {
                Handed::Sent => {}
                Handed::Full(mut back) => {
                    if let Some(Forwarded::Restore(p)) = back.pop().map(|f| f.what) {
                        o.unsent.push_front(p);
                    }
                    return;
                }
                Handed::Gone => {
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
    pub(in crate::core) fn restore_forward_failed(&mut self) {
        let Some(o) = self.role.member_mut().restore.origin.as_mut() else {
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
        o.retry_at = Some(now + RESTORE_ABORT_RETRY);
        o.deadline = o.deadline.min(now + 2 * RESTORE_IDLE);
    }

    /// Each turn, for the restore posted here: the operator waits no longer than its
    /// deadline; a follower sends what it could not yet.
    pub(super) fn origin_step(&mut self) {
        let now = self.now.mono;
        let m = self.role.member_mut();
        if m.restore.origin.as_ref().is_some_and(|o| o.deadline <= now) {
            if let Some(o) = m.restore.origin.take() {
                tracing::warn!(
                    id = format_args!("{:#x}", o.id),
                    "restore: no outcome applied here in time; answering the operator"
                );
                let why = "the restore's outcome did not reach this member in time: it was \
                           not restored, unless the members' state shows it was";
                self.outbox.answer(o.reply, Err(why.into()));
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
