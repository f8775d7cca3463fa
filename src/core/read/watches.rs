//! Watch requests: setWatches and setWatches2 (a reconnecting client's watches),
//! checkWatches, removeWatches, addWatch.

use super::{text, Asked, RResult};
use crate::core::conn_id::ConnId;
use crate::core::watch::{self, Kind, Mode};
use crate::core::{reply, Core};
use crate::state::tree::Node;
use bytes::Bytes;
use palisade_proto::*;
use EventType::{NodeChildrenChanged, NodeDataChanged};

impl Core {
    pub(super) fn set_watches(&mut self, q: Asked, s: &SetWatches) -> Bytes {
        let lists = [&s.data_watches, &s.exist_watches, &s.child_watches];
        match self.rewatch(q.conn, s.relative_zxid, lists, [&None, &None]) {
            Ok(()) => reply::header(q.xid, q.zxid, 0),
            Err(e) => q.err(e),
        }
    }

    pub(super) fn set_watches2(&mut self, q: Asked, s: &SetWatches2) -> Bytes {
        let lists = [&s.data_watches, &s.exist_watches, &s.child_watches];
        let persistent = [&s.persistent_watches, &s.persistent_recursive_watches];
        match self.rewatch(q.conn, s.relative_zxid, lists, persistent) {
            Ok(()) => reply::header(q.xid, q.zxid, 0),
            Err(e) => q.err(e),
        }
    }

    /// ZooKeeper 3.8.0 answers OK when the table holds any watch at exactly this path,
    /// whichever connection holds it (see Watches::watched).
    pub(super) fn check_watches(&self, q: Asked, r: &CheckWatchesRequest) -> Bytes {
        if !watch_request_ok(&r.path, r.type_) {
            return q.err(ErrorCode::MarshallingError);
        }
        let p = text(&r.path);
        let found = watch_tables(r.type_)
            .iter()
            .any(|k| self.watches.watched(*k, &p));
        if found {
            reply::header(q.xid, q.zxid, 0)
        } else {
            q.err(ErrorCode::NoWatcher)
        }
    }

    pub(super) fn remove_watches(&mut self, q: Asked, r: &RemoveWatchesRequest) -> Bytes {
        if !watch_request_ok(&r.path, r.type_) {
            return q.err(ErrorCode::MarshallingError);
        }
        let p = text(&r.path);
        let mut removed = false;
        for k in watch_tables(r.type_) {
            removed |= self.watches.remove(*k, &p, q.conn);
        }
        if removed {
            reply::header(q.xid, q.zxid, 0)
        } else {
            q.err(ErrorCode::NoWatcher)
        }
    }

    pub(super) fn add_watch(&mut self, q: Asked, r: &AddWatchRequest) -> Bytes {
        match watch::add_watch_mode(r.mode) {
            // The node need not exist.
            Some(mode) => {
                self.watches.add_watch(mode, &text(&r.path), q.conn);
                reply::record(q.xid, q.zxid, &ErrorResponse { err: 0 })
            }
            // ZooKeeper fails to parse an unknown mode.
            _ => q.err(ErrorCode::MarshallingError),
        }
    }

    /// Re-registers a reconnecting client's watches, in ZooKeeper's order (data, exist, child,
    /// persistent, recursive; a later registration of a path sets its mode). One-shot watches
    /// whose node changed after `rel` fire at once instead (before the reply); persistent and
    /// recursive ones are registered without catch-up events. Null one-shot lists are
    /// MARSHALLINGERROR, as in ZooKeeper.
    fn rewatch(
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
        let tree = &self.state.tree;
        let lists: [(_, _, Fires); 3] = [
            (data, Kind::Data, |n, rel| {
                gone_or_changed(n, rel, |n| n.mzxid, NodeDataChanged)
            }),
            (exist, Kind::Data, |n, _| n.map(|_| EventType::NodeCreated)),
            (child, Kind::Child, |n, rel| {
                gone_or_changed(n, rel, |n| n.pzxid, NodeChildrenChanged)
            }),
        ];
        for (paths, kind, fires) in lists {
            for p in paths.iter().map(text) {
                match fires(tree.lookup(&p).and_then(|id| tree.node(id)), rel) {
                    Some(e) => events.push((e, p)),
                    None => self.watches.add(kind, &p, conn),
                }
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

/// The event a re-registered one-shot watch fires at once, given its node (if it exists) and
/// the client's last zxid; `None` sets the watch again.
type Fires = fn(Option<&Node>, i64) -> Option<EventType>;

/// A data or child watch fires if its node is gone, or changed (by `since`) after `rel`.
fn gone_or_changed(
    n: Option<&Node>,
    rel: i64,
    since: fn(&Node) -> i64,
    changed: EventType,
) -> Option<EventType> {
    match n {
        None => Some(EventType::NodeDeleted),
        Some(n) if since(n) > rel => Some(changed),
        Some(_) => None,
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
