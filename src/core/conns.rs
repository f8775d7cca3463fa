//! The connection registry: each connection's writer, session, identities and queue of
//! slots (the requests it sent that are not answered yet, in order), and what the core sends
//! to it.

use super::conn_out::{Out, OutTx};
use super::Core;
use crate::acl::AuthId;
use crate::core::conn_id::ConnId;
use crate::limits::WRITE_BATCH;
use ::core::net::SocketAddr;
use bytes::Bytes;
use palisade_proto::{ErrorCode, Request};
use std::collections::VecDeque;
use std::time::Instant;

/// One request of a connection, in arrival order.
pub(crate) enum Slot {
    /// A write whose txn is in flight (its cxid).
    Write(i32),
    /// A reconfig that committed, answered once Raft's membership is its configuration
    /// (core/role/member/reconfig.rs); the connection's later replies wait behind it.
    Held(i32),
    /// A write that committed while an earlier request of its connection was still held
    /// back: its reply, sent in its turn.
    Answered { frame: Bytes, zxid: i64 },
    /// A read waiting for the writes before it, or for room in the output budgets for its
    /// reply (`need`: the reply's size once the read found no room for it; 0 before).
    Read {
        xid: i32,
        req: Request,
        at: Instant,
        need: usize,
    },
    /// A request that did not decode, answered in its turn.
    Bad {
        xid: i32,
        err: ErrorCode,
        close: bool,
        /// multiRead's error reply carries an empty result list.
        multi_body: bool,
    },
}

pub(crate) struct Conn {
    pub out: OutTx,
    pub session: i64,
    pub auth: Vec<AuthId>,
    pub peer: SocketAddr,
    pub queue: VecDeque<Slot>,
    pub received: u64,
    pub sent: u64,
    pub last_zxid: i64,
    pub timeout: i32,
    /// The writer's byte count when the core last looked (a held-back client's progress).
    pub seen_written: u64,
    /// When the handshake was answered, wall-clock ms (the admin `connections` command).
    pub established: i64,
    /// This connection's SASL exchange (one per connection, as ZooKeeper's per-cnxn server).
    pub sasl: crate::auth::digest_md5::Exchange,
    /// A SASL token was answered with a null one (core/sasl.rs): the next closes.
    pub null_token_sent: bool,
}

impl Core {
    pub(crate) fn send_reply(&mut self, conn: ConnId, mut frame: Bytes) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.sent += 1;
            self.stats.sent += 1;
            self.stats.response_sent(frame.len());
            self.metrics.response_bytes += frame.len() as u64;
            // A reply larger than a write batch goes in parts (slices of it, not copies), so
            // that the writer, which gathers what it is given into one buffer, never holds
            // a buffer the size of the largest reply it ever sent.
            while frame.len() > WRITE_BATCH {
                let part = frame.split_to(WRITE_BATCH);
                self.outbox.send(&c.out, Out::Bytes(part));
            }
            self.outbox.send(&c.out, Out::Reply(frame));
        }
    }

    /// A watch notification. A connection whose unsent notifications exceed its output
    /// budget (a client that does not read while the tree changes) is closed: its session
    /// stays, and the client's reconnect restores its watches with setWatches.
    pub(crate) fn send_event(&mut self, conn: ConnId, frame: Bytes) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let budget = &c.out.budget;
        if budget.queued_events().saturating_add(frame.len()) <= budget.limit() {
            self.outbox.send(&c.out, Out::Event(frame));
            return;
        }
        tracing::warn!(
            conn,
            peer = %c.peer,
            session = format_args!("{:#x}", c.session),
            queued = budget.queued(),
            queued_notifications = budget.queued_events(),
            budget = budget.limit(),
            "connection's unsent notifications exceed its output budget (connectionOutputBudget); closing it, its session stays"
        );
        self.stats.closed_output_budget += 1;
        c.out.cancel();
        self.drop_conn(conn, false);
    }

    /// Forgets a connection (closing it if `close`), its watches, and its session's
    /// attachment to it.
    pub(crate) fn drop_conn(&mut self, conn: ConnId, close: bool) {
        if let Some(c) = self.conns.remove(&conn) {
            if close && c.out.budget.own_over() {
                // A Close queued behind a backlog the client does not read would never be
                // reached: end the connection's tasks now.
                c.out.cancel();
            } else if close {
                self.outbox.send(&c.out, Out::Close);
            }
            if let Some(s) = self.liveness.get_mut(c.session) {
                if s.conn == Some(conn) {
                    s.conn = None;
                }
            }
        }
        self.held.remove(&conn);
        self.watches.remove_conn(conn);
    }

    /// Whether write `xid` is the connection's first write waiting, as it must be: a
    /// connection's writes commit in the order they came. Otherwise an earlier one was lost —
    /// a leader took it and went away without a leader change showing (it came back in the
    /// same term), or its proposals were superseded — and will never be answered: the client
    /// is dropped (CONNECTIONLOSS, as for any write cut off by a failover) rather than
    /// answered out of order, which ZooKeeper clients take for a broken server.
    pub(super) fn first_write_is(&mut self, conn_id: ConnId, xid: i32) -> bool {
        let Some(conn) = self.conns.get(&conn_id) else {
            return false;
        };
        match conn.queue.iter().find(|s| matches!(s, Slot::Write(_))) {
            Some(Slot::Write(x)) if *x == xid => true,
            first => {
                let lost = match first {
                    Some(Slot::Write(x)) => Some(*x),
                    _ => None,
                };
                tracing::warn!(
                    conn = conn_id,
                    session = format_args!("{:#x}", conn.session),
                    answered = xid,
                    lost,
                    "an earlier write of this client was lost; dropping it"
                );
                self.drop_conn(conn_id, true);
                false
            }
        }
    }

    /// A write of this connection committed: its reply goes out now if nothing before it is
    /// still waiting, else in its turn; then the requests behind it run.
    pub(super) fn write_answered(&mut self, conn_id: ConnId, xid: i32, frame: Bytes, zxid: i64) {
        if !self.first_write_is(conn_id, xid) {
            return;
        }
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        if let Some(slot) = conn.queue.iter_mut().find(|s| matches!(s, Slot::Write(_))) {
            *slot = Slot::Answered { frame, zxid };
        }
        self.run_queue(conn_id);
    }

    /// Answers the requests at the head of a connection's queue until one must wait: a write
    /// not committed yet, or a read while the connection is over its output budget (it is
    /// then held until its writer reports it drained, `CoreMsg::Drained`).
    pub(super) fn run_queue(&mut self, conn_id: ConnId) {
        loop {
            let Some(conn) = self.conns.get_mut(&conn_id) else {
                return;
            };
            match conn.queue.front() {
                Some(Slot::Answered { .. }) | Some(Slot::Bad { .. }) => {}
                Some(Slot::Read { need, .. }) => {
                    let budget = &conn.out.budget;
                    let wait = if *need > 0 {
                        !budget.has_room(*need) && budget.hold_for(*need)
                    } else {
                        budget.over() && budget.hold()
                    };
                    if wait {
                        self.held.insert(conn_id);
                        return;
                    }
                }
                Some(Slot::Write(_)) | Some(Slot::Held(_)) | None => return,
            }
            match conn.queue.pop_front() {
                Some(Slot::Answered { frame, zxid }) => {
                    conn.last_zxid = zxid;
                    self.send_reply(conn_id, frame);
                }
                Some(Slot::Read { xid, req, at, .. }) => self.read(conn_id, xid, req, at),
                Some(Slot::Bad {
                    xid,
                    err,
                    close,
                    multi_body,
                }) => self.answer_bad(conn_id, xid, err, close, multi_body),
                _ => return,
            }
        }
    }

    /// A read whose reply (`need` bytes) has no room in the output budgets yet: back at the
    /// head of its connection's queue, held until a writer makes room (`OutBudget::hold_for`),
    /// as a read over budget is held. Its watch, if it set one, is already registered.
    pub(super) fn hold_read(
        &mut self,
        conn_id: ConnId,
        xid: i32,
        req: Request,
        at: Instant,
        need: usize,
    ) {
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        conn.queue.push_front(Slot::Read { xid, req, at, need });
        if conn.out.budget.hold_for(need) {
            self.held.insert(conn_id);
        } else {
            self.run_queue(conn_id);
        }
    }

    /// The writer of a held connection (or of any, for the server's budget) reports it drained.
    pub(super) fn drained(&mut self, conn: Option<ConnId>) {
        let conns: Vec<ConnId> = match conn {
            Some(c) => vec![c],
            None => self.held.iter().copied().collect(),
        };
        for c in conns {
            self.held.remove(&c);
            self.run_queue(c);
        }
    }

    /// Each tick: a connection with a backlog whose client made progress reading counts as live
    /// (the server, not the client, is the one not reading its pings); and held connections
    /// are looked at again, in case a wake-up was missed.
    pub(super) fn held_tick(&mut self, now_ms: u64) {
        let mut live = Vec::new();
        for c in self.conns.values_mut() {
            // Progress with output still queued: a client reading a backlog, not one that
            // stopped reading (its socket buffers fill, and progress stops with them).
            let written = c.out.budget.written();
            if written != c.seen_written && c.out.budget.queued() > 0 {
                live.push(c.session);
            }
            c.seen_written = written;
        }
        for s in live {
            self.liveness.touch(s, now_ms);
        }
        let held: Vec<ConnId> = self
            .held
            .iter()
            .copied()
            .filter(|c| self.conns.get(c).is_some_and(|c| !c.out.budget.over()))
            .collect();
        for c in held {
            self.held.remove(&c);
            self.run_queue(c);
        }
    }
}
