//! multiRead: getData and getChildren ops answered together, each result or error after a
//! MultiHeader, as ZooKeeper writes them.

use super::room::Room;
use super::{text, Answer, Asked};
use crate::acl;
use crate::core::conn_id::ConnId;
use crate::core::{reply, Core};
use crate::metrics::namespace;
use palisade_proto::*;

/// A MultiHeader on the wire (type, done, err).
const MULTI_HEADER: usize = 9;

impl Core {
    /// The reply's size first (ACL checks included, nothing copied): one that could never be
    /// queued is refused, one without room waits, before any is built.
    pub(super) fn multi_read(&mut self, q: Asked, m: MultiRequest) -> Answer {
        let cap = self.reply_cap(q.conn);
        let len = self.multi_read_bytes(q.conn, &m, cap);
        let room = if len > cap {
            Room::Never
        } else {
            self.room(q.conn, len)
        };
        match room {
            Room::Now => {}
            Room::Wait => return self.hold(q, Request::MultiRead(m), len),
            Room::Never => {
                tracing::debug!(
                    conn = q.conn,
                    ops = m.ops.len(),
                    cap,
                    "multiRead reply would exceed maxReplySize or globalOutputBudget; refused"
                );
                let frame = reply::frame(q.xid, q.zxid, ErrorCode::MarshallingError.code(), |w| {
                    MultiResponse::new(vec![]).write(w)
                });
                self.stats.record(q.at, self.now.mono);
                self.send_reply(q.conn, frame);
                return Answer::Done;
            }
        }
        // Written straight from the tree into a frame of the size just summed.
        let frame = reply::frame_sized(q.xid, q.zxid, 0, len, |w| {
            self.write_multi_read(w, q.conn, &m)
        });
        self.count_multi_read(q.conn, &m);
        Answer::Reply(frame)
    }

    /// The bytes of a multiRead's reply body, or past `cap` as soon as the sum gets there.
    fn multi_read_bytes(&self, conn: ConnId, m: &MultiRequest, cap: usize) -> usize {
        let mut len = MULTI_HEADER;
        for op in &m.ops {
            let rest = cap.saturating_sub(len);
            let op_len = match &op.op {
                Request::GetData(r) => self
                    .readable(conn, &r.path, acl::READ)
                    .map_or(Some(4), |id| Some(self.data_bytes(id))),
                Request::GetChildren(r) => self
                    .readable(conn, &r.path, acl::READ)
                    .map_or(Some(4), |id| self.children_bytes(id, rest)),
                _ => Some(4),
            };
            len = op_len.map_or(usize::MAX, |n| len.saturating_add(MULTI_HEADER + n));
            if len > cap {
                break;
            }
        }
        len
    }

    /// What a multiRead's ops read, counted per namespace as the single reads are.
    fn count_multi_read(&mut self, conn: ConnId, m: &MultiRequest) {
        for op in &m.ops {
            let (path, children) = match &op.op {
                Request::GetData(r) => (&r.path, false),
                Request::GetChildren(r) => (&r.path, true),
                _ => continue,
            };
            let Ok(id) = self.readable(conn, path, acl::READ) else {
                continue;
            };
            let bytes = if children {
                self.state
                    .tree
                    .child_nodes(id)
                    .fold(0u64, |n, c| n.saturating_add(namespace::java_len(c.name())))
            } else {
                self.data_len(id)
            };
            self.metrics.read_ns.read(&text(path), bytes);
        }
    }

    /// A multiRead's results as ZooKeeper writes them (a MultiHeader before each, the done
    /// marker at the end), straight from the tree; ZooKeeper ignores the ops' watch flags.
    fn write_multi_read(&self, w: &mut bytes::BytesMut, conn: ConnId, m: &MultiRequest) {
        for op in &m.ops {
            let (code, found) = match &op.op {
                Request::GetData(r) => (OpCode::GetData, self.readable(conn, &r.path, acl::READ)),
                Request::GetChildren(r) => {
                    (OpCode::GetChildren, self.readable(conn, &r.path, acl::READ))
                }
                _ => (OpCode::Error, Err(ErrorCode::MarshallingError)),
            };
            match found {
                Ok(id) => {
                    MultiHeader {
                        type_: code.code(),
                        done: false,
                        err: 0,
                    }
                    .write(w);
                    if code == OpCode::GetData {
                        self.write_data(w, id);
                    } else {
                        let _ = self.write_children(w, id);
                    }
                }
                Err(e) => {
                    let err = e.code();
                    MultiHeader {
                        type_: OpCode::Error.code(),
                        done: false,
                        err,
                    }
                    .write(w);
                    ErrorResponse { err }.write(w);
                }
            }
        }
        MultiHeader {
            type_: -1,
            done: true,
            err: -1,
        }
        .write(w);
    }
}
