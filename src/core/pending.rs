//! Writes waiting for their txn to commit, matched to it by (session, cxid) — what the txn
//! header carries — so that a txn this server did not prep (in an ensemble: one a follower
//! forwarded, whose zxid the follower does not know yet) finds its waiter too.

use crate::core::watch::ConnId;
use hashbrown::hash_map::Entry;
use hashbrown::HashMap;
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::oneshot;

/// What to do once the txn commits.
pub(crate) enum Awaiting {
    /// Answer the request on its connection.
    Reply,
    /// A reconfig: answered with /zookeeper/config once its configuration is in force.
    Reconfig,
    /// A createSession: attach the connection to the new session and answer the handshake.
    NewSession {
        ready: oneshot::Sender<bool>,
        timeout: i32,
        read_only: Option<bool>,
    },
    /// A closeSession the client sent: answer it, then close the connection.
    Close,
    /// A follower's sync: answered once this member has applied the leader's point.
    Sync(palisade_proto::SyncRequest),
    /// A handshake naming a session this member does not know (yet): decided once it has
    /// applied the leader's point, so a member that lags does not call a live session expired.
    Revalidate(Box<super::handshake::Handshake>),
}

pub(crate) struct Waiter {
    pub conn: ConnId,
    /// The zxid prep gave the txn, when this server prepped it: a client may reuse a cxid,
    /// and the zxid tells its writes (and the server's own txns for the session) apart.
    pub zxid: Option<i64>,
    pub awaiting: Awaiting,
    pub at: Instant,
}

/// The waiters of one (session, cxid), in the order added: nearly always one, and an empty
/// `VecDeque` allocates nothing. More than one when a client reuses a cxid while its earlier
/// write is pending (the server's own txns for a session carry cxid 0 too).
struct Slot {
    first: Waiter,
    rest: VecDeque<Waiter>,
}

#[derive(Default)]
pub(crate) struct PendingWrites {
    by_key: HashMap<(i64, i32), Slot>,
    len: usize,
}

impl PendingWrites {
    pub fn add(&mut self, session: i64, cxid: i32, w: Waiter) {
        match self.by_key.entry((session, cxid)) {
            Entry::Vacant(v) => {
                v.insert(Slot {
                    first: w,
                    rest: VecDeque::new(),
                });
            }
            Entry::Occupied(mut o) => o.get_mut().rest.push_back(w),
        }
        self.len += 1;
    }

    /// The waiter of the committed txn (session, cxid, zxid), if it is one of ours. Waiters
    /// of one key commit in the order they were added.
    pub fn take(&mut self, session: i64, cxid: i32, zxid: i64) -> Option<Waiter> {
        let Entry::Occupied(mut o) = self.by_key.entry((session, cxid)) else {
            return None;
        };
        if o.get().first.zxid.is_some_and(|z| z != zxid) {
            return None;
        }
        self.len -= 1;
        let slot = o.get_mut();
        Some(match slot.rest.pop_front() {
            Some(next) => std::mem::replace(&mut slot.first, next),
            None => o.remove().first,
        })
    }

    /// The first waiter of (session, cxid), whatever zxid: a sync, which no txn answers.
    pub fn take_unordered(&mut self, session: i64, cxid: i32) -> Option<Waiter> {
        let Entry::Occupied(mut o) = self.by_key.entry((session, cxid)) else {
            return None;
        };
        self.len -= 1;
        let slot = o.get_mut();
        Some(match slot.rest.pop_front() {
            Some(next) => std::mem::replace(&mut slot.first, next),
            None => o.remove().first,
        })
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(zxid: Option<i64>) -> Waiter {
        Waiter {
            conn: 1,
            zxid,
            awaiting: Awaiting::Reply,
            at: Instant::now(),
        }
    }

    #[test]
    fn matched_by_session_and_cxid_in_order_and_told_apart_by_zxid() {
        let mut p = PendingWrites::default();
        p.add(7, 1, waiter(Some(10)));
        p.add(7, 1, waiter(Some(12))); // the client reused cxid 1
        p.add(8, 1, waiter(None)); // forwarded: zxid unknown
                                   // The server's own txn for session 7 with cxid 1 (zxid 11) is nobody's.
        assert!(p.take(7, 1, 11).is_none());
        assert_eq!(p.take(7, 1, 10).and_then(|w| w.zxid), Some(10));
        assert!(p.take(7, 1, 10).is_none());
        assert_eq!(p.take(7, 1, 12).and_then(|w| w.zxid), Some(12));
        assert!(p.take(8, 1, 99).is_some());
        assert!(p.is_empty());
    }
}
