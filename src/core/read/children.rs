//! Reads of a node's children and of a session's nodes: getChildren, getChildren2,
//! getAllChildrenNumber, getEphemerals.

use super::room::Room;
use super::{text, Answer, Asked};
use crate::acl;
use crate::core::reply;
use crate::core::watch::Kind;
use crate::core::Core;
use crate::limits::STAT_BYTES;
use crate::metrics::namespace;
use crate::state::tree::NodeId;
use bytes::{BufMut, Bytes};
use palisade_proto::jute::write_buffer;
use palisade_proto::*;

impl Core {
    pub(super) fn get_children(&mut self, q: Asked, r: GetChildrenRequest) -> Answer {
        match self.list_children(q, &r.path, r.watch, false) {
            Ok(frame) => Answer::Reply(frame),
            Err(len) => self.hold(q, Request::GetChildren(r), len),
        }
    }

    pub(super) fn get_children2(&mut self, q: Asked, r: GetChildren2Request) -> Answer {
        match self.list_children(q, &r.path, r.watch, true) {
            Ok(frame) => Answer::Reply(frame),
            Err(len) => self.hold(q, Request::GetChildren2(r), len),
        }
    }

    /// The reply to a getChildren, or with `with_stat` to a getChildren2 (the node's Stat
    /// after the names); `Err(len)`: a reply of `len` bytes has no room yet. The size is
    /// summed first, and the walk stops at what could ever be sent.
    fn list_children(
        &mut self,
        q: Asked,
        path: &JStr,
        watch: bool,
        with_stat: bool,
    ) -> Result<Bytes, usize> {
        let id = match self.readable(q.conn, path, acl::READ) {
            Ok(id) => id,
            Err(e) => return Ok(q.err(e)),
        };
        let (op, stat) = if with_stat {
            ("getChildren2", STAT_BYTES)
        } else {
            ("getChildren", 0)
        };
        let cap = self.reply_cap(q.conn);
        let len = self.children_bytes(id, cap.saturating_sub(stat));
        let room = len.map_or(Room::Never, |len| self.room(q.conn, len + stat));
        let len = len.unwrap_or(cap).saturating_add(stat);
        if let Room::Wait = room {
            return Err(len);
        }
        self.watch_if(q.conn, path, watch, Kind::Child);
        if let Room::Never = room {
            return Ok(self.too_big(q, op, len));
        }
        let mut names = 0;
        let frame = reply::frame_sized(q.xid, q.zxid, 0, len, |w| {
            names = self.write_children(w, id);
            if with_stat {
                self.state.tree.stat(id).write(w);
            }
        });
        self.metrics.read_ns.read(&text(path), names);
        Ok(frame)
    }

    pub(super) fn get_all_children_number(
        &self,
        q: Asked,
        r: &GetAllChildrenNumberRequest,
    ) -> Bytes {
        match self.readable(q.conn, &r.path, acl::READ) {
            Ok(id) => reply::record(
                q.xid,
                q.zxid,
                &GetAllChildrenNumberResponse {
                    total_number: self.state.tree.descendants(id) as i32,
                },
            ),
            Err(e) => q.err(e),
        }
    }

    /// The session's ephemeral nodes under a prefix ("" or "/": all), sorted.
    pub(super) fn get_ephemerals(&mut self, q: Asked, r: GetEphemeralsRequest) -> Answer {
        let session = self.conns.get(&q.conn).map_or(0, |c| c.session);
        let prefix = r.prefix_path.as_str().unwrap_or("");
        let mut paths = self.state.tree.ephemeral_paths(session);
        if !(prefix.is_empty() || prefix == "/") {
            paths.retain(|p| p.starts_with(prefix));
        }
        let len = paths
            .iter()
            .fold(4usize, |n, p| n.saturating_add(4 + p.len()));
        match self.room(q.conn, len) {
            Room::Wait => self.hold(q, Request::GetEphemerals(r), len),
            Room::Never => Answer::Reply(self.too_big(q, "getEphemerals", len)),
            Room::Now => {
                let ephemerals = Some(paths.into_iter().map(JStr::from).collect());
                Answer::Reply(reply::record(
                    q.xid,
                    q.zxid,
                    &GetEphemeralsResponse { ephemerals },
                ))
            }
        }
    }

    /// Bytes of a children vector, or `None` once it passes `cap`: the walk stops there, so a
    /// node with a million children costs no more than a reply of `cap` bytes.
    pub(super) fn children_bytes(&self, id: NodeId, cap: usize) -> Option<usize> {
        let mut total = 4usize;
        for c in self.state.tree.child_nodes(id) {
            total = total.saturating_add(4 + c.name().len());
            if total > cap {
                return None;
            }
        }
        Some(total)
    }

    /// The children vector, written straight from the tree's names; returns the names'
    /// length as ZooKeeper counts it for read_per_namespace (UTF-16 units).
    pub(super) fn write_children(&self, w: &mut bytes::BytesMut, id: NodeId) -> u64 {
        let n = self.state.tree.node(id).map_or(0, |n| n.num_children());
        w.put_i32(n as i32);
        let mut names = 0u64;
        for c in self.state.tree.child_nodes(id) {
            write_buffer(w, Some(c.name().as_bytes()));
            names = names.saturating_add(namespace::java_len(c.name()));
        }
        names
    }
}
