//! Writes waiting for their txn to commit, matched to it by (session, cxid) — what the txn
//! header carries — so that a txn this server did not prep (in an ensemble: one a follower
//! forwarded, whose zxid the follower does not know yet) finds its waiter too.

use crate::core::conn_id::ConnId;
use crate::core::token::Token;
use hashbrown::hash_map::Entry;
use hashbrown::HashMap;
use palisade_proto::OpCode;
use std::collections::VecDeque;
use std::time::Instant;

/// What to do once the txn commits.
pub(crate) enum Awaiting {
    /// Answer the request on its connection.
    Reply,
    /// A reconfig: answered with /zookeeper/config once its configuration is in force.
    Reconfig,
    /// A createSession: attach the connection to the new session and answer the handshake.
    NewSession {
        ready: Token<bool>,
        timeout: i32,
        read_only: Option<bool>,
    },
    /// A closeSession the client sent: answer it, then close the connection.
    Close,
    /// A follower's sync: answered once this member has applied the leader's point.
    Sync(palisade_proto::SyncRequest),
    /// A session moving to this follower: decided once it has applied the leader's point,
    /// so a member that lags does not call a live session expired, and one whose leader is
    /// gone takes no client.
    Revalidate(Box<super::msg::Handshake>),
}

impl Awaiting {
    /// Whether a committed txn of type `op` can be this waiter's. Keys are (session, cxid),
    /// and two connections of one session — a client and whoever took its session over, on
    /// this member or another — may use the same cxid; the kind of request tells them apart
    /// where it can: a sync or a revalidation is answered by its point and never by a txn, a
    /// new session by its createSession, a close by its closeSession (or the error txn a
    /// refused close gets), any other write by anything but those two.
    fn answered_by(&self, op: i32) -> bool {
        let create = OpCode::CreateSession as i32;
        let close = OpCode::CloseSession as i32;
        match self {
            Awaiting::Sync(_) | Awaiting::Revalidate(_) => false,
            Awaiting::NewSession { .. } => op == create,
            Awaiting::Close => op == close || op == OpCode::Error as i32,
            Awaiting::Reply | Awaiting::Reconfig => op != create && op != close,
        }
    }
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

    /// The waiter of the committed txn (session, cxid, zxid) of type `op`, if it is one of
    /// ours: the first of the key's waiters, in the order added, that can be its (a waiter
    /// with a zxid only by that zxid; see [`Awaiting::answered_by`]).
    pub fn take(&mut self, session: i64, cxid: i32, zxid: i64, op: i32) -> Option<Waiter> {
        let Entry::Occupied(mut o) = self.by_key.entry((session, cxid)) else {
            return None;
        };
        let fits = |w: &Waiter| w.zxid.is_none_or(|z| z == zxid) && w.awaiting.answered_by(op);
        let slot = o.get_mut();
        let waiter = if fits(&slot.first) {
            match slot.rest.pop_front() {
                Some(next) => std::mem::replace(&mut slot.first, next),
                None => o.remove().first,
            }
        } else {
            // Rare: a cxid shared by two connections of one session.
            let i = slot.rest.iter().position(fits)?;
            slot.rest.remove(i)?
        };
        self.len -= 1;
        Some(waiter)
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
        of(zxid, Awaiting::Reply)
    }

    fn of(zxid: Option<i64>, awaiting: Awaiting) -> Waiter {
        Waiter {
            conn: 1,
            zxid,
            awaiting,
            at: Instant::now(),
        }
    }

    #[test]
    fn a_txn_is_taken_only_by_a_waiter_of_its_kind() {
        let (set, close) = (OpCode::SetData as i32, OpCode::CloseSession as i32);
        let mut p = PendingWrites::default();
        // A forwarded sync, then a forwarded write of another connection with the same cxid.
        p.add(7, 1, of(None, Awaiting::Sync(Default::default())));
        p.add(7, 1, of(None, Awaiting::Close));
        p.add(7, 1, waiter(None));
        // A setData txn (7, 1): not the sync's, not the close's; the write's.
        assert!(matches!(
            p.take(7, 1, 5, set).map(|w| w.awaiting),
            Some(Awaiting::Reply)
        ));
        assert!(p.take(7, 1, 6, set).is_none());
        assert!(matches!(
            p.take(7, 1, 6, close).map(|w| w.awaiting),
            Some(Awaiting::Close)
        ));
        // The sync stays for its point.
        assert!(p.take(7, 1, 7, close).is_none());
        assert!(matches!(
            p.take_unordered(7, 1).map(|w| w.awaiting),
            Some(Awaiting::Sync(_))
        ));
        assert!(p.is_empty());
    }

    #[test]
    fn matched_by_session_and_cxid_in_order_and_told_apart_by_zxid() {
        let mut p = PendingWrites::default();
        p.add(7, 1, waiter(Some(10)));
        p.add(7, 1, waiter(Some(12))); // the client reused cxid 1
        p.add(8, 1, waiter(None)); // forwarded: zxid unknown
                                   // The server's own txn for session 7 with cxid 1 (zxid 11) is nobody's.
        let set = OpCode::SetData as i32;
        assert!(p.take(7, 1, 11, set).is_none());
        assert_eq!(p.take(7, 1, 10, set).and_then(|w| w.zxid), Some(10));
        assert!(p.take(7, 1, 10, set).is_none());
        assert_eq!(p.take(7, 1, 12, set).and_then(|w| w.zxid), Some(12));
        assert!(p.take(8, 1, 99, set).is_some());
        assert!(p.is_empty());
    }
}
