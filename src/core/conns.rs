//! The connection registry: each connection's writer, session, identities and queue of
//! slots (the requests it sent that are not answered yet, in order), and what the core sends
//! to it.

use super::msg::{Out, OutTx};
use super::Core;
use crate::acl::AuthId;
use crate::core::watch::ConnId;
use bytes::Bytes;
use palisade_proto::{ErrorCode, Request};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Instant;

/// One request of a connection, in arrival order.
pub(crate) enum Slot {
    /// A write whose txn is in flight (its cxid).
    Write(i32),
    /// A read waiting for the writes before it.
    Read { xid: i32, req: Request, at: Instant },
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
    /// When the handshake was answered, wall-clock ms (the admin `connections` command).
    pub established: i64,
}

impl Core {
    pub(crate) fn send_reply(&mut self, conn: ConnId, frame: Bytes) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.sent += 1;
            self.stats.sent += 1;
            self.stats.response_sent(frame.len());
            self.metrics.response_bytes += frame.len() as u64;
            let _ = c.out.send(Out::Reply(frame));
        }
    }

    /// Notifications and other frames that answer no request.
    pub(crate) fn send_bytes(&self, conn: ConnId, frame: Bytes) {
        if let Some(c) = self.conns.get(&conn) {
            let _ = c.out.send(Out::Bytes(frame));
        }
    }

    /// Forgets a connection (closing it if `close`), its watches, and its session's
    /// attachment to it.
    pub(crate) fn drop_conn(&mut self, conn: ConnId, close: bool) {
        if let Some(c) = self.conns.remove(&conn) {
            if close {
                let _ = c.out.send(Out::Close);
            }
            if let Some(s) = self.liveness.get_mut(c.session) {
                if s.conn == Some(conn) {
                    s.conn = None;
                }
            }
        }
        self.watches.remove_conn(conn);
    }

    /// The write at the head of a connection's queue is answered: run the reads behind it.
    pub(super) fn finish_slot(&mut self, conn_id: ConnId, zxid: i64) {
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        conn.last_zxid = zxid;
        if matches!(conn.queue.front(), Some(Slot::Write(_))) {
            conn.queue.pop_front();
        }
        loop {
            let Some(conn) = self.conns.get_mut(&conn_id) else {
                return;
            };
            match conn.queue.front() {
                Some(Slot::Read { .. }) | Some(Slot::Bad { .. }) => {}
                _ => return,
            }
            match conn.queue.pop_front() {
                Some(Slot::Read { xid, req, at }) => self.read(conn_id, xid, req, at),
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
}
