//! Reads and session-local requests, executed by the core against the applied tree: `read`
//! dispatches on the request to one function per opcode, grouped by what they read —
//! `data` (exists, getData, getACL), `children` (getChildren(2), getAllChildrenNumber,
//! getEphemerals), `multi` (multiRead), `watches` (setWatches, check/remove/addWatch) and
//! `auth` (addAuth, SASL, whoAmI). `room` decides whether a reply is built now, later or never
//! (ARCHITECTURE.md, "Output budgets").
//!
//! Owns: the answer to each read and session-local request. May not touch: the tree's
//! contents (reads only; a write goes through intake and prep), files or sockets.

mod auth;
mod children;
mod data;
mod multi;
mod room;
mod watches;

use super::{reply, Core, Out};
use crate::acl;
use crate::core::conn_id::ConnId;
use crate::core::watch::Kind;
use crate::state::tree::NodeId;
use bytes::Bytes;
use palisade_proto::*;
use std::borrow::Cow;
use std::time::Instant;

type RResult<T> = Result<T, ErrorCode>;

/// A read as asked: who asked, and what its reply's header carries.
#[derive(Clone, Copy)]
struct Asked {
    conn: ConnId,
    xid: i32,
    /// The zxid the reply carries: the last applied when the read ran.
    zxid: i64,
    /// When the request arrived (latency, and a held read keeps it).
    at: Instant,
}

impl Asked {
    /// A reply that carries only an error code.
    fn err(self, e: ErrorCode) -> Bytes {
        reply::header(self.xid, self.zxid, e.code())
    }
}

/// What an opcode's function leaves for `read` to do.
enum Answer {
    /// Send this reply.
    Reply(Bytes),
    /// Send this reply, then close the connection (a refused addAuth or SASL step).
    ReplyAndClose(Bytes),
    /// Close the connection with no reply (a SASL exchange that cannot go on).
    Close,
    /// Nothing: the read waits for room (`hold_read`), or its function answered it itself.
    Done,
}

/// A request's path as ZooKeeper's Java decoding sees it: undecodable bytes become U+FFFD
/// (so such a path names no node, rather than being a malformed request); null is "" (the
/// reads that look a node up refuse null first, see `readable`).
fn text(path: &JStr) -> Cow<'_, str> {
    path.to_lossy().unwrap_or_default()
}

impl Core {
    pub(crate) fn read(&mut self, conn: ConnId, xid: i32, req: Request, at: Instant) {
        let zxid = self.state.zxid();
        let q = Asked {
            conn,
            xid,
            zxid,
            at,
        };
        let answer = match req {
            // ZooKeeper answers a ping with xid -2 whatever xid it came with.
            Request::Ping => Answer::Reply(reply::header(reply::XID_PING, zxid, 0)),
            Request::Exists(r) => Answer::Reply(self.exists(q, &r)),
            Request::GetData(r) => self.get_data(q, r),
            Request::GetAcl(r) => Answer::Reply(self.get_acl(q, &r)),
            Request::GetChildren(r) => self.get_children(q, r),
            Request::GetChildren2(r) => self.get_children2(q, r),
            // The path comes back as ZooKeeper re-encodes what it decoded.
            Request::Sync(r) => Answer::Reply(sync_reply(xid, zxid, r)),
            Request::MultiRead(m) => self.multi_read(q, m),
            Request::Auth(a) => self.add_auth(q, &a),
            Request::Sasl(s) => self.sasl_step(q, &s),
            Request::SetWatches(s) => Answer::Reply(self.set_watches(q, &s)),
            Request::SetWatches2(s) => Answer::Reply(self.set_watches2(q, &s)),
            Request::GetEphemerals(r) => self.get_ephemerals(q, r),
            Request::GetAllChildrenNumber(r) => Answer::Reply(self.get_all_children_number(q, &r)),
            Request::WhoAmI => Answer::Reply(self.who_am_i(q)),
            Request::CheckWatches(r) => Answer::Reply(self.check_watches(q, &r)),
            Request::RemoveWatches(r) => Answer::Reply(self.remove_watches(q, &r)),
            Request::AddWatch(r) => Answer::Reply(self.add_watch(q, &r)),
            _ => Answer::Reply(q.err(ErrorCode::MarshallingError)),
        };
        let (frame, close) = match answer {
            Answer::Reply(frame) => (Some(frame), false),
            Answer::ReplyAndClose(frame) => (Some(frame), true),
            Answer::Close => (None, true),
            Answer::Done => return,
        };
        self.record_read(at);
        if let Some(frame) = frame {
            self.send_reply(conn, frame);
        }
        if close {
            if let Some(c) = self.conns.get(&conn) {
                self.outbox.send(&c.out, Out::Close);
            }
        }
    }

    /// The node at `path` if the connection may read it with `perm`.
    fn readable(&self, conn: ConnId, path: &JStr, perm: i32) -> RResult<NodeId> {
        // ZooKeeper looks a null path up in a map that refuses null: MARSHALLINGERROR.
        if path.is_null() {
            return Err(ErrorCode::MarshallingError);
        }
        let id = self
            .state
            .tree
            .lookup(&text(path))
            .ok_or(ErrorCode::NoNode)?;
        let auth = self
            .conns
            .get(&conn)
            .map(|c| c.auth.as_slice())
            .unwrap_or(&[]);
        if !acl::check(self.state.tree.acl_of(id), perm, auth) {
            return Err(ErrorCode::NoAuth);
        }
        Ok(id)
    }

    /// Registers a one-shot watch of `kind` on `path` when asked: after the read found the
    /// node readable (as in ZooKeeper), and only when it is answered now, not when it waits
    /// for room (a change meanwhile would fire an event before the reply that set the watch).
    fn watch_if(&mut self, conn: ConnId, path: &JStr, asked: bool, kind: Kind) {
        if asked {
            self.watches.add(kind, &text(path), conn);
        }
    }
}

/// The reply to a sync: the path echoed as sent (null stays null, undecodable bytes become
/// U+FFFD).
pub(super) fn sync_reply(xid: i32, zxid: i64, r: SyncRequest) -> Bytes {
    let path = match r.path.as_str() {
        Some(_) => r.path,
        None if r.path.is_null() => r.path,
        None => JStr::from(text(&r.path).into_owned()),
    };
    reply::record(xid, zxid, &SyncResponse { path })
}
