//! An online restore on the leader: it proposes each chunk as an entry of its own, in
//! order, then the commit; between proposing the commit and applying it, it preps nothing (a
//! txn prepped before the swap must not be logged after it: its zxid would be behind the
//! restored state's). A restore that stops coming (`RESTORE_IDLE`), a second one, a chunk
//! out of order or a backup from an epoch past the leader's term get an abort entry instead.
//! A new leader aborts a restore its predecessor left half-spooled.

use crate::core::role::member::Proposed;
use crate::core::work::Work;
use crate::core::Core;
use crate::limits::RESTORE_IDLE;
use crate::seam::RestorePart;
use std::time::Instant;

/// The restore whose chunks this leader proposes.
pub(super) struct Upload {
    pub(super) id: u64,
    next: u32,
    len: u64,
    crc: crc32fast::Hasher,
    last: Instant,
    /// The commit is proposed: nothing is prepped until it is applied.
    pub(super) committing: bool,
}

impl Core {
    /// On the leader between proposing a restore's commit and applying it: nothing is
    /// prepped.
    pub(in crate::core) fn restore_committing(&self) -> bool {
        self.role
            .as_member()
            .is_some_and(|m| m.restore.upload.as_ref().is_some_and(|u| u.committing))
    }

    /// On the leader: a part of a restore (its own operator's, or a follower's forwarded),
    /// proposed, or an abort in its place.
    pub(in crate::core) fn lead_restore_part(&mut self, part: RestorePart) {
        let m = self.role.member_mut();
        let term = m.view.term;
        let id = part.id();
        let busy = m.restore.spool.id().is_some_and(|s| s != id);
        let proposed = accept(&mut m.restore.upload, part, id, busy, term, self.now.mono);
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
        self.outbox
            .push(Work::Propose(vec![Proposed::Restore(part)]));
        if first {
            self.drop_clients_for_restore();
        }
    }

    /// The leader changed: this member no longer proposes a restore; a new ready leader
    /// aborts the one its predecessor left half-spooled.
    pub(in crate::core) fn restore_leader_changed(&mut self, leads: bool) {
        let m = self.role.member_mut();
        m.restore.upload = None;
        if leads {
            if let Some(id) = m.restore.spool.id() {
                let why = "the leader changed during the restore".to_string();
                tracing::warn!(
                    id = format_args!("{id:#x}"),
                    "restore: the leader changed during the restore; aborting it"
                );
                self.outbox
                    .push(Work::Propose(vec![Proposed::Restore(RestorePart::Abort {
                        id,
                        why,
                    })]));
            }
        }
    }

    /// Each turn, on the leader: a restore whose chunks stopped coming is aborted.
    pub(super) fn abort_idle_upload(&mut self) {
        let now = self.now.mono;
        let idle = self
            .role
            .member()
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
    }
}

/// The leader's answer to a part of restore `id`: the part to propose, or why it aborts the
/// restore instead. `busy`: another restore is spooled here.
fn accept(
    upload: &mut Option<Upload>,
    part: RestorePart,
    id: u64,
    busy: bool,
    term: u64,
    now: Instant,
) -> Result<RestorePart, String> {
    match (&mut *upload, part) {
        (None, RestorePart::Chunk { seq: 0, bytes, .. }) if !busy => {
            let mut crc = crc32fast::Hasher::new();
            crc.update(&bytes);
            *upload = Some(Upload {
                id,
                next: 1,
                len: bytes.len() as u64,
                crc,
                last: now,
                committing: false,
            });
            Ok(RestorePart::Chunk { id, seq: 0, bytes })
        }
        (Some(u), RestorePart::Chunk { seq, bytes, .. }) if u.id == id && u.next == seq => {
            u.next = seq.saturating_add(1);
            u.len = u.len.saturating_add(bytes.len() as u64);
            u.crc.update(&bytes);
            u.last = now;
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
    }
}
