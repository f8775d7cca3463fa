//! Reads of one node: exists, getData, getACL.

use super::room::Room;
use super::{text, Answer, Asked};
use crate::acl;
use crate::core::reply;
use crate::core::watch::Kind;
use crate::core::Core;
use crate::limits::STAT_BYTES;
use crate::state::tree::NodeId;
use bytes::Bytes;
use palisade_proto::jute::write_buffer;
use palisade_proto::*;

impl Core {
    pub(super) fn exists(&mut self, q: Asked, r: &ExistsRequest) -> Bytes {
        let p = text(&r.path);
        if r.path.is_null() {
            return q.err(ErrorCode::MarshallingError);
        }
        if p.contains('\0') {
            return q.err(ErrorCode::BadArguments);
        }
        if r.watch {
            self.watches.add(Kind::Data, &p, q.conn);
        }
        match self.state.tree.lookup(&p) {
            Some(id) => {
                self.metrics.read_ns.read(&p, 0);
                reply::record(q.xid, q.zxid, &self.state.tree.stat(id))
            }
            None => q.err(ErrorCode::NoNode),
        }
    }

    pub(super) fn get_data(&mut self, q: Asked, r: GetDataRequest) -> Answer {
        let id = match self.readable(q.conn, &r.path, acl::READ) {
            Ok(id) => id,
            Err(e) => return Answer::Reply(q.err(e)),
        };
        let len = self.data_bytes(id);
        let room = self.room(q.conn, len);
        if let Room::Wait = room {
            return self.hold(q, Request::GetData(r), len);
        }
        self.watch_if(q.conn, &r.path, r.watch, Kind::Data);
        if let Room::Never = room {
            return Answer::Reply(self.too_big(q, "getData", len));
        }
        let data = self.data_len(id);
        self.metrics.read_ns.read(&text(&r.path), data);
        Answer::Reply(reply::frame_sized(q.xid, q.zxid, 0, len, |w| {
            self.write_data(w, id)
        }))
    }

    /// The ACL, its ids masked unless the connection has ADMIN on the node.
    pub(super) fn get_acl(&self, q: Asked, r: &GetACLRequest) -> Bytes {
        let id = match self.readable(q.conn, &r.path, acl::READ | acl::ADMIN) {
            Ok(id) => id,
            Err(e) => return q.err(e),
        };
        let auth = self
            .conns
            .get(&q.conn)
            .map(|c| c.auth.as_slice())
            .unwrap_or(&[]);
        let list = self.state.tree.acl_of(id);
        let admin = acl::check(list, acl::ADMIN, auth);
        let acl = list
            .iter()
            .map(|e| if admin { e.to_wire() } else { acl::masked(e) })
            .collect();
        reply::record(
            q.xid,
            q.zxid,
            &GetACLResponse {
                acl: Some(acl),
                stat: self.state.tree.stat(id),
            },
        )
    }

    /// Bytes of a getData body (data and Stat).
    pub(super) fn data_bytes(&self, id: NodeId) -> usize {
        4 + self.state.tree.node(id).map_or(0, |n| n.data_len()) + STAT_BYTES
    }

    /// GetDataResponse, written straight from the node (no copy of the data in between).
    pub(super) fn write_data(&self, w: &mut bytes::BytesMut, id: NodeId) {
        write_buffer(w, self.state.tree.node(id).and_then(|n| n.data()));
        self.state.tree.stat(id).write(w);
    }

    /// The bytes of a node's data.
    pub(super) fn data_len(&self, id: NodeId) -> u64 {
        self.state.tree.node(id).map_or(0, |n| n.data_len() as u64)
    }
}
