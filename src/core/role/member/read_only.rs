//! Read-only mode (`readonlymode.enabled`), as ZooKeeper 3.8's ReadOnlyZooKeeperServer: a
//! member that has been without a quorum for the grace period (max(2 s, tickTime)) serves
//! reads to clients whose ConnectRequest asks for read-only, until it serves again.
//!
//! - A client that does not ask read-only is refused (its connection closed, no answer), and
//!   so is a session of the ensemble (a replicated one) reconnecting: only the quorum may
//!   vouch for it. A new session is local to this member (not replicated, no txn, its id
//!   from this member's allocator), so a client holding it finds it gone once the member is
//!   back: ZooKeeper's local session in read-only mode, which clients (kazoo, the Java
//!   client) expect to give up for a read-write one.
//! - Reads are served from the applied tree; every write, `sync` included, is answered
//!   NOTREADONLY with the last applied zxid; closeSession ends the local session.
//! - `isro` says `ro`, `srvr` `Mode: read-only`; once the member serves again it drops every
//!   connection and forgets the local sessions, so the clients reconnect read-write.

use super::leader::Leading;
use super::Seat;
use crate::core::conn_id::ConnId;
use crate::core::conns::Slot;
use crate::core::{reply, Core};
use palisade_proto::ErrorCode;
use std::collections::HashSet;

/// The read-only seat.
pub(in crate::core) struct ReadOnly {
    /// The local sessions handed out while read-only.
    pub(super) sessions: HashSet<i64>,
    /// A ready leader's lead, kept beneath read-only mode (seat.rs says why).
    pub(super) lead: Option<Leading>,
}

impl Core {
    /// Serving read-only clients.
    pub(crate) fn read_only(&self) -> bool {
        self.role.read_only()
    }

    /// Each tick: read-only once the member has not served for the grace period; local
    /// sessions whose client fell silent expire here (no leader expires them).
    pub(in crate::core) fn read_only_tick(&mut self) {
        let now = self.now_ms();
        let m = self.role.member_mut();
        let Some(grace) = m.links.read_only else {
            return;
        };
        if m.serving() {
            m.unserved_since = None;
            return;
        }
        let since = *m.unserved_since.get_or_insert(now);
        let read_only = matches!(m.seat, Seat::ReadOnly(_));
        if !read_only && now.saturating_sub(since) >= grace.as_millis() as u64 {
            m.seat.enter_read_only();
            tracing::warn!(
                without_quorum_ms = now.saturating_sub(since),
                "no quorum: serving read-only clients (readonlymode.enabled)"
            );
        }
        let Seat::ReadOnly(ro) = &m.seat else {
            return;
        };
        let expired: Vec<i64> = ro
            .sessions
            .iter()
            .copied()
            .filter(|id| self.liveness.get(*id).is_none_or(|s| s.deadline_ms <= now))
            .collect();
        for id in expired {
            tracing::info!(
                session = format_args!("{id:#x}"),
                "read-only session expired"
            );
            self.end_local_session(id);
        }
    }

    /// Once the member serves again: every read-only client is dropped and the local sessions
    /// are forgotten, so clients reconnect read-write (and get a session of the ensemble).
    pub(in crate::core) fn leave_read_only(&mut self) {
        if !self.role.read_only() || !self.role.serving() {
            return;
        }
        let m = self.role.member_mut();
        m.unserved_since = None;
        let local = m.seat.leave_read_only();
        tracing::info!(
            clients = self.conns.len(),
            sessions = local.len(),
            "serving again: dropping read-only clients"
        );
        self.drop_all_conns();
        for id in local {
            self.liveness.remove(id);
        }
    }

    /// A local session ends (its client closed it, or it expired): its connection goes too.
    fn end_local_session(&mut self, id: i64) {
        if let Seat::ReadOnly(ro) = &mut self.role.member_mut().seat {
            ro.sessions.remove(&id);
        }
        if let Some(c) = self.liveness.remove(id).and_then(|s| s.conn) {
            self.drop_conn(c, true);
        }
    }

    /// Records a local session handed out in read-only mode.
    pub(in crate::core) fn add_local_session(&mut self, id: i64) {
        let Seat::ReadOnly(ro) = &mut self.role.member_mut().seat else {
            unreachable!("a local session outside read-only mode");
        };
        ro.sessions.insert(id);
    }

    /// A write (or sync) in read-only mode: NOTREADONLY with the applied zxid, in the
    /// connection's order; closeSession ends the local session instead.
    pub(in crate::core) fn refuse_write(&mut self, conn_id: ConnId, xid: i32, close_session: bool) {
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        if close_session {
            let session = conn.session;
            let frame = reply::frame(xid, self.state.zxid(), 0, |_| {});
            self.send_reply(conn_id, frame);
            self.end_local_session(session);
            return;
        }
        let err = ErrorCode::NotReadOnly;
        if conn.queue.is_empty() {
            self.answer_bad(conn_id, xid, err, false, false);
        } else {
            conn.queue.push_back(Slot::Bad {
                xid,
                err,
                close: false,
                multi_body: false,
            });
        }
    }
}

#[cfg(test)]
#[path = "read_only_test.rs"]
mod tests;
