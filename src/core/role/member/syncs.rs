//! Syncs whose point is known (the leader's own clients', the points a follower's leader
//! sent back), answered once this member has applied up to their point. Every seat keeps
//! them: a point may come back after the seat changed within the same term.

use super::SyncPoint;
use crate::core::pending::Awaiting;
use crate::core::Core;
use std::collections::BTreeMap;

/// By the zxid to apply first: the (session, cxid) of each sync waiting for it.
#[derive(Default)]
pub(super) struct Syncs(BTreeMap<i64, Vec<(i64, i32)>>);

impl Syncs {
    pub(super) fn add(&mut self, point: i64, session: i64, cxid: i32) {
        self.0.entry(point).or_default().push((session, cxid));
    }

    pub(super) fn clear(&mut self) {
        self.0.clear();
    }

    /// The syncs whose point is at or below `applied`, taken.
    fn take_due(&mut self, applied: i64) -> Vec<(i64, i32)> {
        let later = self.0.split_off(&applied.saturating_add(1));
        std::mem::replace(&mut self.0, later)
            .into_values()
            .flatten()
            .collect()
    }
}

impl Core {
    /// On a follower: the leader's points for its syncs.
    pub(in crate::core) fn sync_points(&mut self, points: Vec<SyncPoint>) {
        let m = self.role.member_mut();
        for (session, cxid, zxid) in points {
            m.syncs.add(zxid, session, cxid);
        }
        self.answer_syncs();
    }

    /// Answers the syncs whose point is applied.
    pub(super) fn answer_syncs(&mut self) {
        let applied = self.state.zxid();
        for (session, cxid) in self.role.member_mut().syncs.take_due(applied) {
            let Some(w) = self.pending.take_unordered(session, cxid) else {
                continue;
            };
            match w.awaiting {
                Awaiting::Sync(r) => {
                    let frame = crate::core::read::sync_reply(cxid, applied, r);
                    self.write_answered(w.conn, cxid, frame, applied);
                }
                Awaiting::Revalidate(h) => self.revalidated(*h),
                _ => {}
            }
        }
    }
}
