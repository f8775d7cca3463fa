//! Reads and session-local requests, executed by the core against the applied tree.

use super::{reply, Core, Out};
use crate::acl::{self, AuthId};
use crate::core::watch::{self, ConnId, Kind, Mode};
use crate::limits::STAT_BYTES;
use crate::metrics::namespace;
use crate::state::tree::NodeId;
use bytes::BufMut;
use palisade_proto::jute::write_buffer;
use palisade_proto::*;
use std::borrow::Cow;
use std::time::Instant;

type RResult<T> = Result<T, ErrorCode>;

/// A MultiHeader on the wire (type, done, err).
const MULTI_HEADER: usize = 9;

/// Whether a reply of a known size is built now (ARCHITECTURE.md, "Output budgets").
enum Room {
    /// It has room in the output budgets.
    Now,
    /// Not yet: the read waits, held, until writers make room.
    Wait,
    /// Never: over `maxReplySize`, or larger than the server's whole output budget.
    Never,
}

/// A request's path as ZooKeeper's Java decoding sees it: undecodable bytes become U+FFFD
/// (so such a path names no node, rather than being a malformed request); null is "" (the
/// reads that look a node up refuse null first, see `readable`).
fn text(path: &JStr) -> Cow<'_, str> {
    path.to_lossy().unwrap_or_default()
}

impl Core {
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

    /// The bytes a reply frame of `body` bytes takes (length prefix and ReplyHeader).
    fn frame_bytes(body: usize) -> usize {
        body.saturating_add(20)
    }

    /// The largest reply body that could ever be built for `conn`: `maxReplySize` if set, and
    /// what the output budgets could ever hold (`OutBudget::largest_reply`).
    fn reply_cap(&self, conn: ConnId) -> usize {
        let budgets = self
            .conns
            .get(&conn)
            .map_or(usize::MAX, |c| c.out.budget.largest_reply());
        self.cfg.max_reply.min(budgets).saturating_sub(20)
    }

    /// Whether a reply of `body` bytes is built for `conn` now, later, or never.
    fn room(&self, conn: ConnId, body: usize) -> Room {
        if body > self.reply_cap(conn) {
            return Room::Never;
        }
        match self.conns.get(&conn) {
            Some(c) if !c.out.budget.has_room(Self::frame_bytes(body)) => Room::Wait,
            _ => Room::Now,
        }
    }

    /// Bytes of a getData body (data and Stat).
    fn data_bytes(&self, id: NodeId) -> usize {
        4 + self.state.tree.node(id).map_or(0, |n| n.data_len()) + STAT_BYTES
    }

    /// Bytes of a children vector, or `None` once it passes `cap`: the walk stops there, so a
    /// node with a million children costs no more than a reply of `cap` bytes.
    fn children_bytes(&self, id: NodeId, cap: usize) -> Option<usize> {
        let mut total = 4usize;
        for c in self
            .state
            .tree
            .children(id)
            .filter_map(|c| self.state.tree.node(c))
        {
            total = total.saturating_add(4 + c.name().len());
            if total > cap {
                return None;
            }
        }
        Some(total)
    }

    /// GetDataResponse, written straight from the node (no copy of the data in between).
    fn write_data(&self, w: &mut bytes::BytesMut, id: NodeId) {
        write_buffer(w, self.state.tree.node(id).and_then(|n| n.data()));
        self.state.tree.stat(id).write(w);
    }

    /// The children vector, written straight from the tree's names; returns the names'
    /// length as ZooKeeper counts it for read_per_namespace (UTF-16 units).
    fn write_children(&self, w: &mut bytes::BytesMut, id: NodeId) -> u64 {
        let n = self.state.tree.node(id).map_or(0, |n| n.num_children());
        w.put_i32(n as i32);
        let mut names = 0u64;
        for c in self
            .state
            .tree
            .children(id)
            .filter_map(|c| self.state.tree.node(c))
        {
            write_buffer(w, Some(c.name().as_bytes()));
            names = names.saturating_add(namespace::java_len(c.name()));
        }
        names
    }

    /// The bytes of a node's data.
    fn data_len(&self, id: NodeId) -> u64 {
        self.state.tree.node(id).map_or(0, |n| n.data_len() as u64)
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
                    .children(id)
                    .filter_map(|c| self.state.tree.node(c))
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

    pub(crate) fn read(&mut self, conn: ConnId, xid: i32, req: Request, at: Instant) {
        let zxid = self.state.zxid();
        let err = |e: ErrorCode| reply::header(xid, zxid, e.code());
        // A reply that could never be queued (over maxReplySize, if set, or over the server's
        // whole output budget) is not built: MARSHALLINGERROR instead. One that could but has
        // no room in the budgets now waits (`hold_read`), as ZooKeeper sends any reply.
        let cap = self.reply_cap(conn);
        let too_big = |conn: ConnId, op: &str, len: usize| {
            tracing::debug!(
                conn,
                op,
                len,
                cap,
                "reply would exceed maxReplySize or globalOutputBudget; refused"
            );
            err(ErrorCode::MarshallingError)
        };
        let mut close = false;
        let frame = match req {
            // ZooKeeper answers a ping with xid -2 whatever xid it came with.
            Request::Ping => reply::header(reply::XID_PING, zxid, 0),
            Request::Exists(r) => {
                let p = text(&r.path);
                if r.path.is_null() {
                    err(ErrorCode::MarshallingError)
                } else if p.contains('\0') {
                    err(ErrorCode::BadArguments)
                } else {
                    if r.watch {
                        self.watches.add(Kind::Data, &p, conn);
                    }
                    match self.state.tree.lookup(&p) {
                        Some(id) => {
                            self.metrics.read_ns.read(&p, 0);
                            reply::record(xid, zxid, &self.state.tree.stat(id))
                        }
                        None => err(ErrorCode::NoNode),
                    }
                }
            }
            Request::GetData(r) => match self.readable(conn, &r.path, acl::READ) {
                Ok(id) => {
                    let len = self.data_bytes(id);
                    let room = self.room(conn, len);
                    if let Room::Wait = room {
                        let need = Self::frame_bytes(len);
                        return self.hold_read(conn, xid, Request::GetData(r), at, need);
                    }
                    self.watch_if(conn, &r.path, r.watch, Kind::Data);
                    match room {
                        Room::Never => too_big(conn, "getData", len),
                        _ => {
                            let data = self.data_len(id);
                            self.metrics.read_ns.read(&text(&r.path), data);
                            reply::frame_sized(xid, zxid, 0, len, |w| self.write_data(w, id))
                        }
                    }
                }
                Err(e) => err(e),
            },
            Request::GetAcl(r) => match self.readable(conn, &r.path, acl::READ | acl::ADMIN) {
                Ok(id) => {
                    let auth = self
                        .conns
                        .get(&conn)
                        .map(|c| c.auth.as_slice())
                        .unwrap_or(&[]);
                    let list = self.state.tree.acl_of(id);
                    let admin = acl::check(list, acl::ADMIN, auth);
                    let acl = list
                        .iter()
                        .map(|e| if admin { e.to_wire() } else { acl::masked(e) })
                        .collect();
                    reply::record(
                        xid,
                        zxid,
                        &GetACLResponse {
                            acl: Some(acl),
                            stat: self.state.tree.stat(id),
                        },
                    )
                }
                Err(e) => err(e),
            },
            Request::GetChildren(r) => match self.readable(conn, &r.path, acl::READ) {
                Ok(id) => {
                    let len = self.children_bytes(id, cap);
                    let room = len.map_or(Room::Never, |len| self.room(conn, len));
                    let len = len.unwrap_or(cap);
                    if let Room::Wait = room {
                        let need = Self::frame_bytes(len);
                        return self.hold_read(conn, xid, Request::GetChildren(r), at, need);
                    }
                    self.watch_if(conn, &r.path, r.watch, Kind::Child);
                    match room {
                        Room::Never => too_big(conn, "getChildren", len),
                        _ => {
                            let mut names = 0;
                            let f = reply::frame_sized(xid, zxid, 0, len, |w| {
                                names = self.write_children(w, id);
                            });
                            self.metrics.read_ns.read(&text(&r.path), names);
                            f
                        }
                    }
                }
                Err(e) => err(e),
            },
            Request::GetChildren2(r) => match self.readable(conn, &r.path, acl::READ) {
                Ok(id) => {
                    let len = self.children_bytes(id, cap.saturating_sub(STAT_BYTES));
                    let room = len.map_or(Room::Never, |len| self.room(conn, len + STAT_BYTES));
                    let len = len.unwrap_or(cap).saturating_add(STAT_BYTES);
                    if let Room::Wait = room {
                        let need = Self::frame_bytes(len);
                        return self.hold_read(conn, xid, Request::GetChildren2(r), at, need);
                    }
                    self.watch_if(conn, &r.path, r.watch, Kind::Child);
                    match room {
                        Room::Never => too_big(conn, "getChildren2", len),
                        _ => {
                            let mut names = 0;
                            let f = reply::frame_sized(xid, zxid, 0, len, |w| {
                                names = self.write_children(w, id);
                                self.state.tree.stat(id).write(w);
                            });
                            self.metrics.read_ns.read(&text(&r.path), names);
                            f
                        }
                    }
                }
                Err(e) => err(e),
            },
            // The path comes back as ZooKeeper re-encodes what it decoded.
            Request::Sync(r) => sync_reply(xid, zxid, r),
            Request::MultiRead(m) => {
                // The reply's size first (ACL checks included, nothing copied): one that could
                // never be queued is refused, one without room waits, before any is built.
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
                let room = if len > cap {
                    Room::Never
                } else {
                    self.room(conn, len)
                };
                match room {
                    Room::Now => {}
                    Room::Wait => {
                        let need = Self::frame_bytes(len);
                        return self.hold_read(conn, xid, Request::MultiRead(m), at, need);
                    }
                    Room::Never => {
                        tracing::debug!(
                            conn,
                            ops = m.ops.len(),
                            cap,
                            "multiRead reply would exceed maxReplySize or globalOutputBudget; refused"
                        );
                        let frame =
                            reply::frame(xid, zxid, ErrorCode::MarshallingError.code(), |w| {
                                MultiResponse::new(vec![]).write(w)
                            });
                        self.stats.record(at);
                        self.send_reply(conn, frame);
                        return;
                    }
                }
                // Written straight from the tree into a frame of the size just summed.
                let f =
                    reply::frame_sized(xid, zxid, 0, len, |w| self.write_multi_read(w, conn, &m));
                self.count_multi_read(conn, &m);
                f
            }
            Request::Auth(a) => {
                let data = a.auth.as_deref().unwrap_or(&[]);
                match a.scheme.as_str() {
                    Some("digest") if !data.is_empty() => {
                        let id = acl::digest_id(&String::from_utf8_lossy(data));
                        let is_super = self.cfg.super_digest.as_deref() == Some(id.as_str());
                        if let Some(c) = self.conns.get_mut(&conn) {
                            if is_super {
                                c.auth.push(AuthId {
                                    scheme: "super".into(),
                                    id: "".into(),
                                });
                            }
                            let aid = AuthId {
                                scheme: "digest".into(),
                                id: id.into(),
                            };
                            if !c.auth.contains(&aid) {
                                // ZooKeeper lists authenticated ids before the connection's ip id.
                                let at = c
                                    .auth
                                    .iter()
                                    .position(|a| &*a.scheme == "ip")
                                    .unwrap_or(c.auth.len());
                                c.auth.insert(at, aid);
                            }
                        }
                        reply::header(xid, 0, 0)
                    }
                    Some("ip") => reply::header(xid, 0, 0),
                    _ => {
                        close = true;
                        reply::header(xid, 0, ErrorCode::AuthFailed.code())
                    }
                }
            }
            Request::Sasl(s) => {
                let token = s.token.as_deref().unwrap_or(&[]);
                let Some((frame, fail)) = self.sasl(conn, xid, token) else {
                    self.record_read(at);
                    if let Some(c) = self.conns.get(&conn) {
                        let _ = c.out.send(Out::Close);
                    }
                    return;
                };
                close = fail;
                frame
            }
            Request::SetWatches(s) => {
                let lists = [&s.data_watches, &s.exist_watches, &s.child_watches];
                match self.set_watches(conn, s.relative_zxid, lists, [&None, &None]) {
                    Ok(()) => reply::header(xid, zxid, 0),
                    Err(e) => err(e),
                }
            }
            Request::SetWatches2(s) => {
                let lists = [&s.data_watches, &s.exist_watches, &s.child_watches];
                let persistent = [&s.persistent_watches, &s.persistent_recursive_watches];
                match self.set_watches(conn, s.relative_zxid, lists, persistent) {
                    Ok(()) => reply::header(xid, zxid, 0),
                    Err(e) => err(e),
                }
            }
            Request::GetEphemerals(r) => {
                let session = self.conns.get(&conn).map_or(0, |c| c.session);
                let prefix = r.prefix_path.as_str().unwrap_or("");
                let mut paths: Vec<String> = self
                    .state
                    .tree
                    .ephemerals_of(session)
                    .map(|id| self.state.tree.path_of(id))
                    .collect();
                if !(prefix.is_empty() || prefix == "/") {
                    paths.retain(|p| p.starts_with(prefix));
                }
                let len = paths
                    .iter()
                    .fold(4usize, |n, p| n.saturating_add(4 + p.len()));
                let room = self.room(conn, len);
                if let Room::Wait = room {
                    let need = Self::frame_bytes(len);
                    return self.hold_read(conn, xid, Request::GetEphemerals(r), at, need);
                }
                if let Room::Never = room {
                    too_big(conn, "getEphemerals", len)
                } else {
                    paths.sort();
                    let ephemerals = Some(paths.into_iter().map(JStr::from).collect());
                    reply::record(xid, zxid, &GetEphemeralsResponse { ephemerals })
                }
            }
            Request::GetAllChildrenNumber(r) => match self.readable(conn, &r.path, acl::READ) {
                Ok(id) => reply::record(
                    xid,
                    zxid,
                    &GetAllChildrenNumberResponse {
                        total_number: self.state.tree.descendants(id) as i32,
                    },
                ),
                Err(e) => err(e),
            },
            Request::WhoAmI => {
                let infos = self.conns.get(&conn).map(|c| {
                    c.auth
                        .iter()
                        .map(|a| {
                            // ZooKeeper reports a digest identity by its user name only.
                            let user = match &*a.scheme {
                                "digest" => a.id.split(':').next().unwrap_or(""),
                                _ => &*a.id,
                            };
                            ClientInfo {
                                auth_scheme: JStr::from(&*a.scheme),
                                user: JStr::from(user),
                            }
                        })
                        .collect()
                });
                reply::record(xid, zxid, &WhoAmIResponse { client_info: infos })
            }
            // ZooKeeper fails these (MARSHALLINGERROR) for an unknown watcher type and for a
            // non-empty path with no '/' at all.
            Request::CheckWatches(r) if !watch_request_ok(&r.path, r.type_) => {
                err(ErrorCode::MarshallingError)
            }
            Request::RemoveWatches(r) if !watch_request_ok(&r.path, r.type_) => {
                err(ErrorCode::MarshallingError)
            }
            // ZooKeeper 3.8.0 answers OK when the table holds any watch at exactly this path,
            // whichever connection holds it (see Watches::watched).
            Request::CheckWatches(r) => {
                let p = text(&r.path);
                let found = watch_tables(r.type_)
                    .iter()
                    .any(|k| self.watches.watched(*k, &p));
                if found {
                    reply::header(xid, zxid, 0)
                } else {
                    err(ErrorCode::NoWatcher)
                }
            }
            Request::RemoveWatches(r) => {
                let p = text(&r.path);
                let mut removed = false;
                for k in watch_tables(r.type_) {
                    removed |= self.watches.remove(*k, &p, conn);
                }
                if removed {
                    reply::header(xid, zxid, 0)
                } else {
                    err(ErrorCode::NoWatcher)
                }
            }
            Request::AddWatch(r) => match watch::add_watch_mode(r.mode) {
                // The node need not exist.
                Some(mode) => {
                    self.watches.add_watch(mode, &text(&r.path), conn);
                    reply::record(xid, zxid, &ErrorResponse { err: 0 })
                }
                // ZooKeeper fails to parse an unknown mode.
                _ => err(ErrorCode::MarshallingError),
            },
            _ => err(ErrorCode::MarshallingError),
        };
        self.record_read(at);
        self.send_reply(conn, frame);
        if close {
            if let Some(c) = self.conns.get(&conn) {
                let _ = c.out.send(Out::Close);
            }
        }
    }

    /// Re-registers a reconnecting client's watches, in ZooKeeper's order (data, exist, child,
    /// persistent, recursive; a later registration of a path sets its mode). One-shot watches
    /// whose node changed after `rel` fire at once instead (before the reply); persistent and
    /// recursive ones are registered without catch-up events. Null one-shot lists are
    /// MARSHALLINGERROR, as in ZooKeeper.
    fn set_watches(
        &mut self,
        conn: ConnId,
        rel: i64,
        [data, exist, child]: [&Option<Vec<JStr>>; 3],
        [persistent, recursive]: [&Option<Vec<JStr>>; 2],
    ) -> RResult<()> {
        let (Some(data), Some(exist), Some(child)) = (data, exist, child) else {
            return Err(ErrorCode::MarshallingError);
        };
        let mut events = Vec::new();
        for p in data.iter().map(text) {
            match self
                .state
                .tree
                .lookup(&p)
                .and_then(|id| self.state.tree.node(id))
            {
                None => events.push((EventType::NodeDeleted, p)),
                Some(n) if n.mzxid > rel => events.push((EventType::NodeDataChanged, p)),
                Some(_) => self.watches.add(Kind::Data, &p, conn),
            }
        }
        for p in exist.iter().map(text) {
            match self.state.tree.lookup(&p) {
                Some(_) => events.push((EventType::NodeCreated, p)),
                None => self.watches.add(Kind::Data, &p, conn),
            }
        }
        for p in child.iter().map(text) {
            match self
                .state
                .tree
                .lookup(&p)
                .and_then(|id| self.state.tree.node(id))
            {
                None => events.push((EventType::NodeDeleted, p)),
                Some(n) if n.pzxid > rel => events.push((EventType::NodeChildrenChanged, p)),
                Some(_) => self.watches.add(Kind::Child, &p, conn),
            }
        }
        for (mode, paths) in [(Mode::Persistent, persistent), (Mode::Recursive, recursive)] {
            for p in paths.iter().flatten().map(text) {
                self.watches.add_watch(mode, &p, conn);
            }
        }
        for (kind, p) in events {
            self.send_event(conn, reply::event(kind, &p));
        }
        Ok(())
    }
}

/// ZooKeeper fails checkWatches/removeWatches (MARSHALLINGERROR) for an unknown watcher type
/// and for a non-empty path with no '/' at all.
fn watch_request_ok(path: &JStr, watcher_type: i32) -> bool {
    let p = text(path);
    (1..=3).contains(&watcher_type) && (p.is_empty() || p.contains('/'))
}

/// The tables a checkWatches/removeWatches type names: 1 = Children, 2 = Data, 3 = Any
/// (children first, as ZooKeeper removes them).
fn watch_tables(t: i32) -> &'static [Kind] {
    match t {
        1 => &[Kind::Child],
        2 => &[Kind::Data],
        3 => &[Kind::Child, Kind::Data],
        _ => &[],
    }
}

/// The reply to a sync: the path echoed as sent (null stays null, undecodable bytes become
/// U+FFFD).
pub(super) fn sync_reply(xid: i32, zxid: i64, r: SyncRequest) -> bytes::Bytes {
    let path = match r.path.as_str() {
        Some(_) => r.path,
        None if r.path.is_null() => r.path,
        None => JStr::from(text(&r.path).into_owned()),
    };
    reply::record(xid, zxid, &SyncResponse { path })
}
