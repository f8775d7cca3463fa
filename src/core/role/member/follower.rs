//! The follower's seat: it forwards its clients' writes and syncs to the leader, with the
//! connection's auth ids, and waits for the committed txn, matched by (session, cxid) as
//! `pending.rs` matches; each tick it tells the leader which sessions its clients keep alive.
//! A candidate and a leader-elect not yet ready sit here too: what they forward fails
//! (CONNECTIONLOSS) and the client retries.

use super::links::Handed;
use super::{Forward, Forwarded, Member, Seat};
use crate::core::conn_id::ConnId;
use crate::core::outbox::Outbox;
use crate::core::pending::{Awaiting, Waiter};
use crate::core::role::Role;
use crate::core::Core;

/// What only a follower has.
#[derive(Default)]
pub(in crate::core) struct Following {
    /// Forwards queued this turn, sent with the turn's batch.
    pub(super) queued: Vec<Forward>,
}

impl Member {
    /// Sends the turn's forwards (with the turn's log batch).
    pub(in crate::core) fn flush_forwards(&mut self, outbox: &mut Outbox) {
        let Seat::Follower(f) = &mut self.seat else {
            return;
        };
        if f.queued.is_empty() {
            return;
        }
        let ops = std::mem::take(&mut f.queued);
        // Full: the forwarder is calls behind (a leader that does not answer). The forwards
        // stay, ahead of the next turn's, and go with them.
        if let Handed::Full(ops) = self.links.hand_forwards(outbox, ops) {
            f.queued = ops;
        }
    }
}

impl Core {
    /// Forwards the runtime could not hand to the forwarder after all: back at the head of
    /// the queue, ahead of the next turn's, as a full queue returns them (runtime/routes.rs).
    pub(in crate::core) fn forwards_back(&mut self, mut ops: Vec<Forward>) {
        match &mut self.role {
            Role::Member(m) => match &mut m.seat {
                Seat::Follower(f) => {
                    ops.append(&mut f.queued);
                    f.queued = ops;
                }
                _ => {
                    let failed = ops.iter().map(|f| (f.session, f.cxid)).collect();
                    self.forward_failed(failed);
                }
            },
            Role::Standalone(_) => {}
        }
    }

    /// Hands a write of `conn` to the leader; its reply waits for the committed txn.
    pub(in crate::core) fn forward(
        &mut self,
        conn: ConnId,
        session: i64,
        cxid: i32,
        what: Forwarded,
        awaiting: Awaiting,
    ) {
        let auth = self.conns.get(&conn).map_or_else(Vec::new, |c| {
            c.auth
                .iter()
                .map(|a| (a.scheme.to_string(), a.id.to_string()))
                .collect()
        });
        let waiter = Waiter {
            conn,
            zxid: None,
            awaiting,
            at: self.now.mono,
        };
        self.pending.add(session, cxid, waiter);
        let Seat::Follower(f) = &mut self.role.member_mut().seat else {
            unreachable!("only a follower forwards a write");
        };
        f.queued.push(Forward {
            session,
            cxid,
            what,
            auth,
        });
    }

    /// On a follower, each tick: the sessions attached here and alive, to the leader.
    pub(in crate::core) fn report_sessions(&mut self) {
        let now = self.now_ms();
        let m = self.role.member();
        if m.view.ready || m.view.leader.is_none() {
            return;
        }
        let ids: Vec<(i64, u64)> = self
            .liveness
            .iter()
            .filter(|(_, s)| s.conn.is_some() && s.deadline_ms > now)
            .map(|(&id, s)| (id, s.deadline_ms - now))
            .collect();
        if !ids.is_empty() {
            // Full: skipped, the next tick's touch says the same, newer (FORWARD_QUEUE).
            m.links.touch(&mut self.outbox, ids);
        }
    }

    /// Forwards of these sessions did not reach the leader: their clients are dropped
    /// (CONNECTIONLOSS) rather than left waiting for a reply that cannot come.
    pub(in crate::core) fn forward_failed(&mut self, failed: Vec<(i64, i32)>) {
        for (session, cxid) in failed {
            if session == 0 {
                // A part of a restore (ensemble_restore.rs); no session is 0.
                self.restore_forward_failed();
                continue;
            }
            // The request's connection: a handshake's (a new session's, a revalidation's) is
            // not the session's yet, and its client would wait for an answer that never comes
            // (seen: a member back as a follower forwarded a new session on a link to the
            // leader's previous process, and the client waited out its whole timeout).
            let waiter = self.pending.take_unordered(session, cxid);
            let conn = match waiter {
                Some(w) => Some(w.conn),
                None => self.liveness.get(session).and_then(|l| l.conn),
            };
            // A revalidation's handshake is dropped with its waiter: its connection closes.
            if let Some(c) = conn {
                self.drop_conn(c, true);
            }
        }
    }
}
