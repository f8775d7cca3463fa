//! Requests in: a read runs now or waits behind its connection's writes; a write is prepped
//! into a txn and submitted; a request that did not decode is answered as ZooKeeper would.

use super::conns::Slot;
use super::member::Forwarded;
use super::pending::{Awaiting, Waiter};
use super::{reply, Core};
use crate::core::conn_id::ConnId;
use crate::prep::Caller;
use bytes::Bytes;
use palisade_proto::*;

impl Core {
    pub(super) fn request(&mut self, conn_id: ConnId, xid: i32, req: Request, frame: Bytes) {
        let now = self.now_ms();
        let forwards = self.role.forwards_writes();
        let read_only = self.role.read_only();
        if !self.authenticated_enough(conn_id, xid, Some(req.op_code())) {
            return;
        }
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        conn.received += 1;
        self.stats.received += 1;
        let session = conn.session;
        self.liveness.touch(session, now);
        if read_only && (req.is_write() || matches!(req, Request::Sync(_))) {
            let close = matches!(req, Request::CloseSession);
            self.refuse_write(conn_id, xid, close);
            return;
        }
        let stale = crate::faults::on(crate::faults::Fault::StaleRead);
        if let (Request::Sync(r), true, false) = (&req, forwards, stale) {
            // A follower's sync waits for the leader's point (role/member/follower.rs), in its write order.
            conn.queue.push_back(Slot::Write(xid));
            let awaiting = Awaiting::Sync(r.clone());
            self.forward(conn_id, session, xid, Forwarded::Sync, awaiting);
            return;
        }
        if let Request::Sync(r) = &req {
            if self.sync_waits(conn_id, session, xid, r) {
                return;
            }
        }
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        if !req.is_write() {
            // Over its output budget, a read waits (held) in its connection's queue.
            if conn.queue.is_empty() && !conn.out.budget.over() {
                self.read(conn_id, xid, req, self.now.mono);
            } else {
                conn.queue.push_back(Slot::Read {
                    xid,
                    req,
                    at: self.now.mono,
                    need: 0,
                });
                self.run_queue(conn_id);
            }
            return;
        }
        conn.queue.push_back(Slot::Write(xid));
        self.write(conn_id, session, xid, req, frame, forwards);
    }

    /// A write, its slot queued: forwarded to the leader, or prepped and submitted here.
    fn write(
        &mut self,
        conn_id: ConnId,
        session: i64,
        xid: i32,
        req: Request,
        frame: Bytes,
        forwards: bool,
    ) {
        if forwards {
            let awaiting = match req {
                Request::CloseSession => Awaiting::Close,
                Request::Reconfig(_) => Awaiting::Reconfig,
                _ => Awaiting::Reply,
            };
            let what = Forwarded::Request(frame);
            self.forward(conn_id, session, xid, what, awaiting);
            return;
        }
        let closing = self.liveness.get(session).is_none_or(|s| s.closing);
        if closing {
            let txn = self
                .prep
                .error(session, xid, ErrorCode::SessionExpired, self.now.wall_ms);
            self.submit_for(conn_id, txn, Awaiting::Reply);
        } else if let Request::CloseSession = req {
            self.close_session(session, xid, Some(conn_id));
        } else if let Request::Reconfig(r) = &req {
            let auth = self
                .conns
                .get(&conn_id)
                .map_or(Vec::new(), |c| c.auth.clone());
            let txn = self.prep_reconfig(session, xid, r, &auth);
            self.submit_for(conn_id, txn, Awaiting::Reconfig);
        } else {
            let auth = self.conns.get(&conn_id).map_or(&[][..], |c| &c.auth[..]);
            let caller = Caller { session, auth };
            let txn = self
                .prep
                .write(&self.state.tree, caller, xid, &req, self.now.wall_ms);
            self.submit_for(conn_id, txn, Awaiting::Reply);
        }
    }

    pub(super) fn submit_for(&mut self, conn: ConnId, txn: Txn, awaiting: Awaiting) {
        let waiter = Waiter {
            conn,
            zxid: Some(txn.header.zxid),
            awaiting,
            at: self.now.mono,
        };
        self.submit(txn, Some(waiter));
    }

    /// Answers a request that did not decode, as ZooKeeper does: an unknown opcode gets
    /// UNIMPLEMENTED and a close; a malformed auth packet a close; any other malformed body
    /// MARSHALLINGERROR, through an error txn consuming a zxid for write opcodes.
    pub(super) fn bad(&mut self, conn_id: ConnId, xid: i32, op: i32, error: DecodeError) {
        if !self.authenticated_enough(conn_id, xid, OpCode::from_i32(op)) {
            return;
        }
        let read_only = self.role.read_only();
        let Some(conn) = self.conns.get_mut(&conn_id) else {
            return;
        };
        conn.received += 1;
        let code = OpCode::from_i32(op);
        let (err, close) = match error {
            DecodeError::UnknownOpCode(_) => (ErrorCode::Unimplemented, true),
            _ => (ErrorCode::MarshallingError, false),
        };
        if code == Some(OpCode::Auth) {
            self.drop_conn(conn_id, true);
            return;
        }
        // multiRead runs its ops one by one: ops of the wrong kind fail with the (empty)
        // result list already built; a body that does not parse gets the header only.
        let multi_body =
            code == Some(OpCode::MultiRead) && matches!(error, DecodeError::OpNotAllowed { .. });
        let write_op = code.is_some_and(is_write_op);
        if read_only && !close && (write_op || code == Some(OpCode::Sync)) {
            // Refused by opcode before its body is looked at, as ZooKeeper's read-only
            // request processor does.
            self.refuse_write(conn_id, xid, false);
            return;
        }
        if write_op && !close {
            let session = conn.session;
            conn.queue.push_back(Slot::Write(xid));
            if self.role.forwards_writes() {
                let what = Forwarded::Error(err.code());
                self.forward(conn_id, session, xid, what, Awaiting::Reply);
                return;
            }
            let txn = self.prep.error(session, xid, err, self.now.wall_ms);
            self.submit_for(conn_id, txn, Awaiting::Reply);
        } else if conn.queue.is_empty() {
            self.answer_bad(conn_id, xid, err, close, multi_body);
        } else {
            conn.queue.push_back(Slot::Bad {
                xid,
                err,
                close,
                multi_body,
            });
        }
    }

    pub(super) fn answer_bad(
        &mut self,
        conn_id: ConnId,
        xid: i32,
        err: ErrorCode,
        close: bool,
        multi_body: bool,
    ) {
        let zxid = if close { -1 } else { self.state.zxid() };
        let frame = reply::frame(xid, zxid, err.code(), |w| {
            if multi_body {
                MultiResponse::new(vec![]).write(w);
            }
        });
        self.send_reply(conn_id, frame);
        if close {
            self.drop_conn(conn_id, true);
        }
    }
}
