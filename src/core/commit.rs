//! Commit: a txn the log made durable is applied to the state (state::apply, the one place a
//! txn changes it), then everyone is told, in this order: the watchers of what changed, the
//! session table, the waiting client's reply, and the reads queued behind that write.

use super::pending::{Awaiting, Waiter};
use super::{reply, Core, Out};
use crate::acl;
use crate::core::watch::{ON_CHILDREN, ON_DATA, ON_DELETE};
use crate::limits::DIGEST_EVERY;
use crate::state::{Change, Effects, SessionEffect};
use palisade_proto::{EventType, Txn};

impl Core {
    /// Every in-flight txn up to `upto` is durable: commit them in zxid order.
    pub(super) fn durable(&mut self, upto: i64) {
        while self.inflight.front().is_some_and(|t| t.header.zxid <= upto) {
            if let Some(txn) = self.inflight.pop_front() {
                self.commit(txn);
            }
        }
    }

    pub(super) fn commit(&mut self, txn: Txn) {
        let zxid = txn.header.zxid;
        self.backup_txn(&txn);
        let effects = self.state.apply(&txn);
        self.count_writes(&txn, &effects);
        self.prep.applied(zxid);
        self.role_applied(&txn);
        self.after_apply(zxid);
        self.notify(&effects.changes);
        let session = txn.header.client_id;
        let waiter = self
            .pending
            .take(session, txn.header.cxid, zxid, txn.header.type_);
        match effects.session {
            SessionEffect::Created { timeout } => {
                let now = self.now_ms();
                self.liveness.add(session, timeout, now);
                if let Some(w) = waiter {
                    self.session_opened(session, w);
                }
            }
            SessionEffect::Closed => {
                // Every connection of the session goes: the one attached to it now, and the
                // one that asked for the close if another took the session over meanwhile.
                let attached = self.liveness.remove(session).and_then(|s| s.conn);
                let own = waiter.map(|w| {
                    self.answer(w.conn, &txn, &effects, w.at);
                    w.conn
                });
                for c in [own, attached].into_iter().flatten() {
                    self.drop_conn(c, true);
                }
            }
            SessionEffect::None => match waiter {
                Some(w) if matches!(w.awaiting, Awaiting::Reconfig) => {
                    let err = effects.single().map_or(0, |o| o.err);
                    self.answer_reconfig(w, &txn, err);
                }
                Some(w) => self.answer(w.conn, &txn, &effects, w.at),
                None => {}
            },
        }
    }

    /// The reply to a committed write, then the reads that waited behind it.
    fn answer(
        &mut self,
        conn: crate::core::conn_id::ConnId,
        txn: &Txn,
        effects: &Effects<'_>,
        at: std::time::Instant,
    ) {
        self.record_update(at);
        let frame = reply::write_reply(txn, effects);
        self.write_answered(conn, txn.header.cxid, frame, txn.header.zxid);
    }

    /// A createSession committed: its connection (if still open) is attached to the session
    /// and gets its ConnectResponse.
    fn session_opened(&mut self, session: i64, w: Waiter) {
        let Awaiting::NewSession {
            ready,
            timeout,
            read_only,
        } = w.awaiting
        else {
            return;
        };
        if !self.conns.contains_key(&w.conn) {
            return;
        }
        if let Some(s) = self.liveness.get_mut(session) {
            s.conn = Some(w.conn);
        }
        let frame = self.connect_reply(Some((session, timeout)), read_only);
        if let Some(c) = self.conns.get(&w.conn) {
            self.outbox.send(&c.out, Out::Bytes(frame));
        }
        self.outbox.answer(ready, true);
    }

    /// Watch events for what the txn changed, each to every connection watching it, once,
    /// and only to a connection that may READ the node the event names (the node's ACL at the
    /// change: a deleted node's own, the parent's for NodeChildrenChanged). This is ZooKeeper's
    /// fix of CVE-2024-23944 (ZOOKEEPER-4799, 3.8.4 / 3.9.2): it checks every watcher at
    /// delivery, after the table fired, so a one-shot watch a connection may not read is used
    /// up without an event, as there.
    fn notify(&mut self, changes: &[Change<'_>]) {
        for ch in changes {
            let tables = match ch.event {
                EventType::NodeCreated | EventType::NodeDataChanged => ON_DATA,
                EventType::NodeChildrenChanged => ON_CHILDREN,
                _ => ON_DELETE,
            };
            let conns = self.watches.trigger(tables, ch.path);
            if conns.is_empty() {
                continue;
            }
            let mut frame = None;
            for c in conns {
                let readable = self
                    .conns
                    .get(&c)
                    .is_some_and(|conn| acl::check(&ch.acl, acl::READ, &conn.auth));
                if !readable {
                    continue;
                }
                let f = frame.get_or_insert_with(|| reply::event(ch.event, ch.path));
                self.send_event(c, f.clone());
            }
        }
    }

    /// Bookkeeping of durability after each applied txn: a digest record now and then, and a
    /// snapshot when one is due.
    fn after_apply(&mut self, zxid: i64) {
        if zxid % DIGEST_EVERY == 0 {
            let digest = self.state.digest_after(zxid);
            self.record_digest(zxid, digest);
        }
        self.snapshot_due();
    }
}
